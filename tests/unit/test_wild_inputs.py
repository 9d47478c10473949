"""Models from the wild, round four (issue 50): raw audio into a speech encoder, a detector that keeps its
NonMaxSuppression, a model of strings with an input that has a default, loops and branches, bytes one-hot encoded
(magika), and a failure's hint that names the dim most likely wrong. Each is built here in the shape of the real
one (tests/wild.py) and planned, made and run as every page runs it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from core.bench import BenchRequest
from core.bench.benchmark import run_benchmark
from core.errors import BenchmarkError
from core.model.dims import (
    A_LOOP,
    AUDIO_SECOND,
    BOTH,
    DETECTOR,
    DETECTOR_BOXES,
    DETECTOR_NMS,
    LOOP_TRIP_COUNT,
    RATE_METADATA,
    RAW_AUDIO_CONV,
    RAW_AUDIO_NAMED,
)
from core.model.hints import guess_hint
from core.model.inputs import (
    BRANCH_WHY,
    ONE_HOT_WHY,
    SAMPLE_TEXT_WHY,
    TRIPS_WHY,
    BenchInput,
    describe_values,
    make_inputs,
    plan_inputs,
)
from core.model.intake import IntakeRequest, describe_files
from core.model.measured import MeasuredModel
from core.model.notes import DEFAULT_INPUTS
from core.model.records import ModelRecord, TensorSpec, format_shape
from core.notes import note, say
from tests import builders, wild
from tests.builders import described
from tests.cli import cli


def _run(record: ModelRecord, plan: list[BenchInput], batch: int = 1) -> list[np.ndarray]:
    session = ort.InferenceSession(record.path, providers=["CPUExecutionProvider"])
    return session.run(None, make_inputs(plan, batch))


def test_raw_audio_into_a_speech_encoder_is_a_second_at_16_khz_and_its_convolutions_run(tmp_path: Path) -> None:
    """wav2vec2's input_values [batch, sequence_length] was planned as a sequence of 128 samples (8 ms), too short
    for its feature extractor's seven convolutions (400 samples make the first frame)."""
    record = described(wild.wav2vec2_model(), tmp_path, "wav2vec2")
    (audio,) = plan_inputs(record)
    assert audio.shape == [1, 16000] and audio.batch_axis == 0
    assert audio.free[1].why == note(AUDIO_SECOND, value="16000", rate="16000")
    assert say(audio.free[1].why) == "audio samples: 16000, one second of raw audio at 16000 Hz"
    assert audio.free[1].source == note(RAW_AUDIO_CONV)  # its first layer: a 1-D convolution of stride 5
    assert _run(record, [audio], batch=2)[0].shape == (2, 49, 4)  # 49 frames of 20 ms
    with pytest.raises(Exception, match="Invalid input shape"):  # what 128 samples did
        ort.InferenceSession(record.path, providers=["CPUExecutionProvider"]).run(
            None, {"input_values": np.zeros((1, 128), np.float32)}
        )

    (unnamed,) = plan_inputs(described(wild.wav2vec2_model("x"), tmp_path, "unnamed"))  # known by its first layer
    assert unnamed.shape == [1, 16000] and unnamed.free[1].source == note(RAW_AUDIO_CONV)
    for name in ("input_values", "waveform", "pcm", "speech", "audio"):  # known by its name alone
        spec = TensorSpec(name=name, dtype="float32", shape=["batch", "sequence_length"])
        named = ModelRecord(id="a", name="a", format="onnx", size_bytes=1, path="", inputs=[spec])
        (planned,) = plan_inputs(named)
        assert planned.shape == [1, 16000] and planned.free[1].source == note(RAW_AUDIO_NAMED, name=name), name

    (at_8k,) = plan_inputs(described(wild.wav2vec2_model(sampling_rate=8000), tmp_path, "at_8k"))  # the model says
    assert at_8k.shape == [1, 8000] and at_8k.free[1].source == note(RATE_METADATA, key="sampling_rate")

    _chunk, state, _sr = plan_inputs(described(wild.vad_model(), tmp_path, "vad"))  # a streaming model keeps its chunk
    assert _chunk.shape == [1, 512] and state.batch_axis == 1


def test_a_detector_that_keeps_its_nms_is_planned_at_640_not_as_a_classifier(tmp_path: Path) -> None:
    """Boxes [num, 4], scores and labels [num] out and a NonMaxSuppression inside: planned at 224 "for one output of
    scores" before. Found in a subgraph too, and by box-shaped outputs alone."""
    record = described(wild.nms_detector(), tmp_path, "nms")
    assert record.suppresses_boxes
    (images,) = plan_inputs(record)
    assert images.shape == [1, 3, 640, 640]
    assert images.free[1].why == note(DETECTOR["height"], value="640")
    assert images.free[1].source == note(
        BOTH, first=note("its name '{symbol}'", symbol="height"), second=note(DETECTOR_NMS)
    )
    boxes, scores, labels = _run(record, [images])
    assert boxes.shape[1:] == (4,) and scores.shape == labels.shape == (boxes.shape[0],)

    nested = described(wild.nms_detector(nested=True), tmp_path, "nested")  # inside an If's branch, outputs out0..2
    assert nested.suppresses_boxes and plan_inputs(nested)[0].shape == [1, 3, 640, 640]

    no_nms = builders.onnx_record(
        "boxes",
        [TensorSpec(name="images", dtype="float32", shape=["batch", 3, "?", "?"])],
        [
            TensorSpec(name="dets", dtype="float32", shape=["num", 4]),
            TensorSpec(name="labels", dtype="int64", shape=["num"]),
        ],
    )
    (planned,) = plan_inputs(no_nms)
    assert planned.shape == [1, 3, 640, 640] and planned.free[1].source == note(DETECTOR_BOXES, name="dets")
    (classifier,) = plan_inputs(described(wild.minus_one_classifier(), tmp_path, "cls"))
    assert classifier.shape == [1, 3, 64, 64]  # a classifier of four classes is no box


def test_a_string_input_runs_on_sample_text_or_the_text_given_and_a_default_input_is_left_at_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ "Input 'text' has dtype object, which cannot be generated here": a tensor(string) now takes sample sentences,
    strings from --value (one a --value) or an .npz of strings; an input holding a default is said and not fed."""
    record = described(wild.text_classifier(), tmp_path, "text")
    assert [(s.name, s.dtype) for s in record.inputs] == [("text", "string")]
    assert note(DEFAULT_INPUTS, count=1, names="scale") in record.notes
    assert "hold a default in the model (an initializer of the same name): scale" in say(record.notes[-1])
    (text,) = plan_inputs(record)
    assert text.shape == [1, 1] and text.batch_axis == 0 and text.why == note(SAMPLE_TEXT_WHY)
    assert say(describe_values(text)).startswith("text: “The quick brown fox jumps over the lazy dog.” (4 strings")
    (label,) = _run(record, [text], batch=3)
    assert label.shape == (3, 1) and label[1, 0] == pytest.approx(4.0)  # "ONNX Runtime measured this model." × 2
    report = run_benchmark(
        BenchRequest(model=MeasuredModel(path=record.path, inputs=[text]), threads=[1], iterations=3, warmup=1)
    )
    assert report.results and all(r.median_ms > 0 for r in report.results)

    import argparse

    from core.cli.plan import add_plan_arguments, plan_from_args

    parser = argparse.ArgumentParser()
    add_plan_arguments(parser)
    args = parser.parse_args(["--value", "text=hello", "--value", "text=anything else"])
    (given,) = plan_from_args(record, None, args, tmp_path)
    assert given.texts == ["hello", "anything else"]
    assert (
        say(describe_values(given)) == "text: “hello” (2 strings, repeated to fill the shape) (set on the command line)"
    )
    (label,) = _run(record, [given], batch=2)
    assert label[:, 0].tolist() == [2.0, 1.0]

    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    np.savez(tmp_path / "texts.npz", text=np.array([["hello"], ["world"]], dtype=str))  # '<U5': no pickle needed
    done = cli("bench", record.path, "--data", str(tmp_path / "texts.npz"), "--no-save", "--threads", "1",
               "--iters", "3", "--warmup", "1", "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    (used,) = json.loads(done.stdout)["inputs"]
    assert used["shape"] == [1, 1] and used["values"] == "real data: array 'text' of texts.npz"
    np.savez(tmp_path / "objects.npz", text=np.array([["hello"]], dtype=object))
    done = cli("bench", record.path, "--data", str(tmp_path / "objects.npz"), "--no-save")
    assert done.returncode != 0 and "np.array(texts, dtype=str)" in done.stderr
    np.savez(tmp_path / "numbers.npz", text=np.zeros((1, 1), np.float32))
    done = cli("bench", record.path, "--data", str(tmp_path / "numbers.npz"), "--no-save")
    assert done.returncode != 0 and "the model takes strings, a tensor(string)" in done.stderr

    with pytest.raises(BenchmarkError, match=r"is a tensor\(string\): its values cannot be normal; give text"):
        make_inputs([BenchInput(name="t", dtype="str", shape=[1], values="normal")], 1)
    with pytest.raises(BenchmarkError, match=r"is a tensor\(float\): its values cannot be text; choose numbers"):
        make_inputs([BenchInput(name="f", dtype="float32", shape=[1], values="text")], 1)
    with pytest.raises(BenchmarkError, match=r"'s' is a seq\(tensor\(float\)\), which cannot be made here"):
        make_inputs([BenchInput(name="s", dtype="sequence<float32>", shape=[1])], 1)


def test_a_loops_trip_count_is_no_batch_and_a_branch_choice_says_which_branch_is_measured(tmp_path: Path) -> None:
    """x [steps, 4] walked by a Loop (its trip count read from x's shape) or a Scan: the steps axis was planned as
    a batch of 1; a boolean choosing an If's branch measured one branch without saying so."""
    for scan in (False, True):
        record = described(wild.loop_model(scan=scan), tmp_path, f"loop_{scan}")
        x, use_relu = plan_inputs(record)
        assert x.shape == [16, 4] and x.batch_axis is None
        assert x.free[0].why == note(LOOP_TRIP_COUNT, value="16") and x.free[0].source == note(A_LOOP)
        assert say(x.free[0].why).startswith("a loop's trip count: 16")
        assert (use_relu.kind, use_relu.low, use_relu.why) == ("constant", 1, note(BRANCH_WHY, name="use_relu"))
        assert "only the 'then' branch is measured; --value use_relu=0 measures the other" in say(
            describe_values(use_relu)
        )
        (y,) = _run(record, [x, use_relu])
        assert y.shape == (4,) and (y >= 0).all()  # the Relu branch
    flag, _x, trips = plan_inputs(described(builders.control_flow_model(), tmp_path, "control"))  # a trip-count input
    assert (trips.kind, trips.low, trips.why) == ("constant", 16, note(TRIPS_WHY))
    assert flag.why == note(BRANCH_WHY, name="flag")


def test_bytes_one_hot_encoded_get_the_whole_range_the_model_compares_them_with(tmp_path: Path) -> None:
    """magika's bytes (0–255, and 256 for padding) were planned as ids 0–9: their range is the table an Equal
    compares them with."""
    record = described(wild.one_hot_bytes(), tmp_path, "bytes")
    (ids,) = plan_inputs(record)
    assert (ids.kind, ids.low, ids.high) == ("integers", 0, 257)
    assert ids.why == note(ONE_HOT_WHY, last=256, count=257)
    assert say(describe_values(ids)) == (
        "random integers 0–256 (ids 0–256: the 257 values the model one-hot encodes it against)"
    )
    made = make_inputs([ids], 4, seed=1)["bytes"]
    assert made.max() > 200 and made.min() >= 0 and made.max() <= 256
    assert _run(record, [ids], batch=2)[0].shape == (2, 8)


def test_magikas_own_model_gets_its_bytes_range() -> None:
    """The real one, from its wheel (requirements-models.txt)."""
    from tests.real_models import real_model

    record = describe_files(IntakeRequest(paths=[str(real_model("magika"))]))
    (ids,) = plan_inputs(record)
    assert ids.name == "bytes" and ids.shape == [1, 2048] and (ids.low, ids.high) == (0, 257)
    session = ort.InferenceSession(record.path, providers=["CPUExecutionProvider"])
    (scores,) = session.run(None, make_inputs([ids], 2))
    assert scores.shape == (2, 214)


def test_a_failure_on_guessed_sizes_names_the_dim_most_likely_wrong(tmp_path: Path) -> None:
    """Every failure ended with "(a text recognizer wants a height of 48 or 32)", for audio and language models too;
    the hint names the guess that rests on the least (the kind of input before a name, before metadata), with why."""
    record = builders.onnx_record(
        "two",
        [
            TensorSpec(name="images", dtype="float32", shape=["batch", 3, "height", "width"]),
            TensorSpec(name="features", dtype="float32", shape=["batch", "?", 8]),
        ],
        [TensorSpec(name="scores", dtype="float32", shape=["batch", 10])],
    )
    hint = guess_hint(plan_inputs(record))
    assert "were guessed ('images' axis 2 = 224, 'images' axis 3 = 224, 'features' axis 1 = 128)" in hint
    assert "The likeliest wrong is input 'features', axis 1 = 128 (sequence length: 128, from its place" in hint
    assert "try --input features=SHAPE" in hint and "text recognizer" not in hint
    tokens = plan_inputs(described(wild.token_model(), tmp_path, "tokens"))
    assert "The likeliest wrong is 'sequence' (input 'input_ids', axis 1) = 128" in guess_hint(tokens)
    assert "try --dim sequence=N" in guess_hint(tokens)


def test_a_shape_writes_a_dim_that_is_an_expression_in_parentheses() -> None:
    assert format_shape(["batch", "past + seq", 32]) == "batch×(past + seq)×32"
    assert format_shape(["batch", "past_sequence_length+1", "2*h", "seq-len", "-1"]) == (
        "batch×(past_sequence_length+1)×(2*h)×seq-len×-1"
    )
