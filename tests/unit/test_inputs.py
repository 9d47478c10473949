"""The input plan: shapes and values that mean something for models from the wild (core.model.inputs)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from core.bench import BenchRequest
from core.bench.benchmark import run_benchmark
from core.errors import BenchmarkError, UnsetDimError, WorkbenchError
from core.i18n import using
from core.model.dims import AN_IMAGE, AUDIO_SAMPLES, CLASSIFIER, DETECTOR, NO_HINT, dim_kind
from core.model.inputs import (
    EXPORTED_SIZE,
    EXPORTED_VALUE,
    SET_BY_YOU,
    Exported,
    describe_values,
    make_inputs,
    plan_inputs,
    resolve_free_dims,
    unset_dims,
)
from core.model.measured import MeasuredModel
from core.model.records import ModelRecord
from core.notes import note, say
from tests import wild
from tests.builders import described


def _run(record: ModelRecord, batch: int = 1) -> list[np.ndarray]:
    session = ort.InferenceSession(record.path, providers=["CPUExecutionProvider"])
    return session.run(None, make_inputs(plan_inputs(record), batch))


def test_a_detector_gets_a_real_image_size_and_its_minus_one_batch_is_dynamic(tmp_path: Path) -> None:
    record = described(wild.detector_model(), tmp_path, "det")
    assert record.inputs[0].shape == ["-1", 3, "?", "?"]
    (x,) = plan_inputs(record)
    assert x.shape == [1, 3, 640, 640] and x.batch_axis == 0
    assert [d.axis for d in x.free] == [0, 2, 3]
    assert x.free[1].why == note(DETECTOR["height"], value="640") and x.free[1].source == note(AN_IMAGE)
    assert _run(record)[0].shape == (1, 1, 640, 640)
    assert _run(record, batch=2)[0].shape == (2, 1, 640, 640)


def test_a_classifier_keeps_its_own_size_and_free_spatial_dims_get_a_classifiers(tmp_path: Path) -> None:
    (image,) = plan_inputs(described(wild.minus_one_classifier(), tmp_path, "cls"))
    assert image.shape == [1, 3, 64, 64] and image.batch_axis == 0
    model = wild.minus_one_classifier()
    for axis in (2, 3):
        model.graph.input[0].type.tensor_type.shape.dim[axis].dim_param = "side"
    (free,) = plan_inputs(described(model, tmp_path, "cls_free"))
    assert free.shape == [1, 3, 224, 224] and free.free[1].why == note(CLASSIFIER["height"], value="224")


def test_a_state_model_ties_its_batch_axes_and_gets_its_sample_rate(tmp_path: Path) -> None:
    record = described(wild.vad_model(), tmp_path, "vad")
    audio, state, sr = plan_inputs(record)
    assert (audio.shape, audio.batch_axis) == ([1, 512], 0)
    assert (state.shape, state.batch_axis) == ([2, 1, 128], 1)  # the same 'batch' as the audio's axis 0
    assert (sr.shape, sr.batch_axis, sr.kind, sr.low) == ([], None, "constant", 16000)
    assert (
        describe_values(sr).english() == "all 16000 (a sample rate: 16 kHz)" and audio.free[1].why.key == AUDIO_SAMPLES
    )
    feeds = make_inputs([audio, state, sr], 4)
    assert feeds["state"].shape == (2, 4, 128) and feeds["input"].shape == (4, 512) and feeds["sr"] == 16000
    prob, next_state = _run(record, batch=4)
    assert prob.shape == (4, 1) and next_state.shape == (2, 4, 129)


def test_the_state_model_benchmarks_at_16_khz_and_sweeps_batch_1_and_4(tmp_path: Path) -> None:
    record = described(wild.vad_model(), tmp_path, "vad")
    report = run_benchmark(
        BenchRequest(
            model=MeasuredModel(path=record.path, inputs=plan_inputs(record)),
            batches=[1, 4],
            threads=[1],
            iterations=10,
            warmup=1,
        )
    )
    assert sorted({r.batch for r in report.results}) == [1, 4]
    assert report.settings["inputs"]["sr"]["values"] == "all 16000 (a sample rate: 16 kHz)"
    assert report.settings["inputs"]["state"]["shape"] == [2, 1, 128]


def test_token_ids_stay_within_the_vocabulary_and_masks_are_on(tmp_path: Path) -> None:
    record = described(wild.token_model(vocabulary=1000), tmp_path, "tokens")
    assert record.inputs[0].vocabulary == 1000 and record.inputs[2].vocabulary == 2
    ids, mask, types = plan_inputs(record)
    assert ids.shape == [1, 128] and (ids.kind, ids.low, ids.high) == ("integers", 0, 1000)
    assert (mask.kind, mask.low) == ("constant", 1) and (types.kind, types.low) == ("constant", 0)
    feeds = make_inputs([ids, mask, types], 2, seed=3)
    assert feeds["input_ids"].max() < 1000 and feeds["input_ids"].max() > 9 and feeds["attention_mask"].all()
    assert _run(record)[0].shape == (1, 128, 16)


def test_free_dims_set_by_name_move_together(tmp_path: Path) -> None:
    record = described(wild.token_model(), tmp_path, "tokens")
    plan = resolve_free_dims(plan_inputs(record), {"sequence": 32})
    assert [s.shape for s in plan] == [[1, 32]] * 3 and plan[0].free[1].why == note(SET_BY_YOU)
    with pytest.raises(BenchmarkError, match="no dim named seq; its named dims are: batch, sequence"):
        resolve_free_dims(plan_inputs(record), {"seq": 32})


def test_the_plans_reasons_are_notes_said_in_the_readers_language_with_their_values(tmp_path: Path) -> None:
    """Why a size and the values are what they are crosses as data (a template and its values): English for the
    command line's JSON, Chinese on a Chinese page, never an English sentence parsed back."""
    (x,) = plan_inputs(described(wild.detector_model(), tmp_path, "det"))
    ids, *_rest = plan_inputs(described(wild.token_model(), tmp_path, "tokens"))
    assert x.free[1].why.english() == "image height: 640, a detector's usual input"
    assert say(describe_values(ids)) == "random integers 0–999 (token ids: the 1,000 rows of the table it indexes)"
    with using("zh"):
        assert (say(x.free[1].why), say(x.free[1].source)) == (
            "图像高度：640，检测模型的常用输入",
            "输入的种类（图像）",
        )
        assert say(describe_values(ids)) == "随机整数 0–999（词元 id：它所索引的表的 1,000 行）"


def test_ir3_initializers_listed_as_inputs_are_not_inputs(tmp_path: Path) -> None:
    record = described(wild.ir3_model(), tmp_path, "ir3")
    assert [s.name for s in plan_inputs(record)] == ["data"]
    assert _run(record)[0].shape == (1, 4, 14, 14)


def test_a_dim_named_for_what_it_is_gets_a_size_of_its_kind_and_one_nothing_names_blocks_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The OCR recogniser's 1×1×64×image_width is run on a line of text 320 wide, not 1 pixel; a dim nothing
    explains has no size: inputs are refused until it is given, and the command line names the --dim to add and
    saves nothing."""
    kinds = {"width": "width", "image_width": "width", "img_h": "height", "imgH": "height", "seq": "sequence",
             "seq_len": "sequence", "length": "sequence", "num_tokens": "sequence", "time": "time",
             "frames": "time", "s43": "", "unk__30": "", "p2o.DynamicDimension.0": "", "group": ""}  # fmt: skip
    assert {name: dim_kind(name) for name in kinds} == kinds
    ocr = described(wild.ocr_recogniser(), tmp_path, "ocr")
    (line,) = plan_inputs(ocr)
    assert line.shape == [1, 1, 64, 320] and not unset_dims([line])
    assert line.free[0].why.english().startswith("text line width: 320")
    assert line.free[0].source.english() == "its name 'image_width', metadata 'character' (a text recogniser)"
    assert _run(ocr)[0].shape == (1, 80, 37)

    unhinted = described(wild.unhinted_model(), tmp_path, "groups")
    plan = plan_inputs(unhinted)
    assert [(d.symbol, d.source.key) for _, d in unset_dims(plan)] == [("group", NO_HINT)]
    with pytest.raises(UnsetDimError, match=r"'group' \(input 'features', axis 2\).*nothing was run"):
        make_inputs(plan, 1)
    assert _run_given(unhinted, {"group": 4})[0].shape == (1, 16)
    channels = wild.minus_one_classifier()
    channels.graph.input[0].type.tensor_type.shape.dim[1].dim_param = "channels"
    assert [d.symbol for _, d in unset_dims(plan_inputs(described(channels, tmp_path, "odd")))] == ["channels"]

    from core.settings import load_settings
    from core.store import open_history
    from tests.cli import cli

    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    done = cli("bench", unhinted.path, "--threads", "1", "--iters", "5", "--warmup", "1")
    assert done.returncode != 0 and "Add --dim group=N" in done.stderr, done.stderr
    assert open_history(load_settings()).runs() == []  # a bench that runs saves by default; this one saved nothing


def _run_given(record: ModelRecord, dims: dict[str, int]) -> list[np.ndarray]:
    session = ort.InferenceSession(record.path, providers=["CPUExecutionProvider"])
    return session.run(None, make_inputs(resolve_free_dims(plan_inputs(record), dims), 1))


def test_an_ultralytics_export_is_run_at_the_size_in_its_metadata_and_says_so(tmp_path: Path) -> None:
    """A YOLOv8n exported at 320 with dynamic height and width: its metadata, not the usual 640, sizes the plan;
    the class names and the OCR model's characters are read (as lists, never evaluated)."""
    record = described(wild.yolo_model(), tmp_path, "yolo")
    meta = record.metadata
    made_for = (meta.exporter, meta.task, meta.image_size, meta.stride, meta.batch)
    assert made_for == ("Ultralytics 8.3.27", "detect", [320, 320], 32, 1)
    assert meta.classes == wild.COCO_NAMES and meta.classes_key == "names" and "torch.onnx" in meta.producer
    (images,) = plan_inputs(record)
    assert images.shape == [1, 3, 320, 320] and images.batch_axis == 0
    assert [d.source.english() for d in images.free] == ["batch", "metadata 'imgsz'", "metadata 'imgsz'"]
    assert images.free[1].why.english() == "image height: 320, what the model was made for (320×320)"
    assert _run(record)[0].shape == (1, 12, 1600)

    fixed = wild.yolo_model()
    for axis in (2, 3):
        fixed.graph.input[0].type.tensor_type.shape.dim[axis].dim_value = 320
    (still,) = plan_inputs(described(fixed, tmp_path, "yolo_fixed"))
    assert still.shape == [1, 3, 320, 320] and [d.axis for d in still.free] == [0]

    ocr = described(wild.ocr_recogniser(list("甲乙丙")), tmp_path, "ocr").metadata
    assert (ocr.classes, ocr.class_count, ocr.text_line) == (["甲", "乙", "丙"], 3, True)


def test_the_command_line_takes_the_plan_and_its_json_records_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    from tests.cli import cli

    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    onnx.save(wild.vad_model(), str(tmp_path / "vad.onnx"))
    monkeypatch.chdir(tmp_path)  # a relative path is the caller's
    done = cli("bench", "vad.onnx", "--batch", "1,4", "--threads", "1", "--iters", "10", "--warmup", "1", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    used = {i["name"]: i for i in data["inputs"]}
    assert used["sr"]["values"] == "all 16000 (a sample rate: 16 kHz)" and used["state"]["batch_axis"] == 1
    assert sorted({r["batch"] for r in data["results"]}) == [1, 4]

    done = cli(
        "bench", "vad.onnx", "--no-save", "--threads", "1", "--iters", "10", "--warmup", "1", "--json",
        "--dim", "samples=1024", "--value", "sr=8000", "--input", "state=2,1,128",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    used = {i["name"]: i for i in json.loads(done.stdout)["inputs"]}
    assert used["input"]["shape"] == [1, 1024] and used["sr"]["values"].startswith("all 8000")
    for wrong, message in (
        (["--dim", "height=4"], "no dim named height"),
        (["--value", "sr=fast"], "give a number"),
        (["--input", "nope=1,2"], "no input of that name"),
    ):
        done = cli("bench", "vad.onnx", "--no-save", *wrong)
        assert done.returncode != 0 and message in done.stderr, done.stderr


def test_the_command_lines_value_words_are_the_value_kinds_rows(tmp_path: Path) -> None:
    import argparse

    from core.cli.plan import add_plan_arguments, plan_from_args

    parser = argparse.ArgumentParser()
    add_plan_arguments(parser)
    record = described(wild.token_model(), tmp_path, "tokens")
    name = plan_inputs(record)[0].name
    for given, said in (
        ("normal", "random normal (mean 0, sd 1) (set on the command line)"),
        ("uniform:-1,1", "random uniform in [-1, 1) (set on the command line)"),
        ("ints:2,5", "random integers 2–4 (set on the command line)"),
        ("7", "all 7 (set on the command line)"),
    ):
        (spec, *_others) = plan_from_args(record, None, parser.parse_args(["--value", f"{name}={given}"]), tmp_path)
        assert say(describe_values(spec)) == said
    for wrong, message in (
        ("ints:2", "expected ints:LOW,HIGH"),
        ("uniform", "give a number"),
        ("data", "give a number"),
    ):
        with pytest.raises(WorkbenchError, match=message):
            plan_from_args(record, None, parser.parse_args(["--value", f"{name}={wrong}"]), tmp_path)


def test_quantize_on_the_command_line_calibrates_a_detector_at_a_real_image_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    from tests.cli import cli

    onnx.save(wild.detector_model(), str(tmp_path / "det.onnx"))
    out = tmp_path / "det.int8.onnx"
    done = cli("quantize", str(tmp_path / "det.onnx"), "--mode", "static", "--calibration", "4", "-o", str(out),
               "--iters", "10", "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["inputs"][0]["shape"] == [1, 3, 640, 640] and out.is_file()


def test_the_sizes_and_values_a_model_was_exported_at_win_over_the_guesses(tmp_path: Path) -> None:
    """The Export page's example sizes and Python scalar values, by ONNX input name; the batch stays 1 (the sweep
    changes it) and a shape of another rank is not used."""
    record = described(wild.detector_model(), tmp_path, "det")
    (x,) = plan_inputs(record, exported=Exported({"x": [2, 3, 480, 320]}))
    assert x.name == "x" and x.shape == [1, 3, 480, 320] and x.free[1].why == note(EXPORTED_SIZE)
    (other_rank,) = plan_inputs(record, exported=Exported({"x": [480, 320]}))
    assert other_rank.shape == [1, 3, 640, 640]
    _audio, _state, sr = plan_inputs(
        described(wild.vad_model(), tmp_path, "vad"), exported=Exported(values={"sr": 8000})
    )
    assert (sr.kind, sr.low, sr.why) == ("constant", 8000, note(EXPORTED_VALUE))


def test_dim_names_a_tool_made_up_are_explained_and_long_shapes_cut_on_the_card() -> None:
    from core.model import TensorSpec
    from ui.cards import dim_name_notes, long_shapes, made_note, signature_frame

    assert "shape inference" in made_note("unk__30") and "paddle2onnx" in made_note("p2o.DynamicDimension.0")
    assert made_note("unk__30").endswith("it says nothing about the size")
    assert made_note("batch") == "" and made_note("image_width") == ""
    formula = "floor(" * 60 + "height" + ")" * 60  # shape inference writes sizes as whole formulas
    specs = [TensorSpec(name="images", dtype="float32", shape=["unk__30", 3, "DynamicDimension.0", 640]),
             TensorSpec(name="output0", dtype="float32", shape=[1, 84, formula])]  # fmt: skip
    frame = signature_frame(specs)
    assert all(len(shape) < 80 for shape in frame["shape"]) and "…" in frame["shape"][1]
    assert long_shapes(specs) == {"output0": f"1×84×{formula}"}  # the full value, under the table
    assert list(dim_name_notes(specs)) == ["unk__30", "DynamicDimension.0"]


def test_the_plans_open_dims_say_when_a_tool_made_up_their_name(tmp_path: Path) -> None:
    from ui.plan_view import _free_dims

    model = wild.minus_one_classifier()
    model.graph.input[0].type.tensor_type.shape.dim[2].dim_param = "unk__30"
    model.graph.input[0].type.tensor_type.shape.dim[3].dim_param = "width"
    free = _free_dims(plan_inputs(described(model, tmp_path, "unk")))
    said = dict(zip(free["the model calls it"], free["that name"], strict=True))
    assert "shape inference made up" in said["unk__30"] and said["width"] == ""
    named = wild.minus_one_classifier()  # only names people chose: no empty column
    named.graph.input[0].type.tensor_type.shape.dim[2].dim_param = "height"
    assert "that name" not in _free_dims(plan_inputs(described(named, tmp_path, "named")))
