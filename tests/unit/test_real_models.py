"""Real third-party models through the input plan, the benchmark and quantization: the numbers must mean
something (an image of a real size, a sample rate of 16 kHz, a state that follows the batch)."""

from __future__ import annotations

import json
from pathlib import Path

import onnx

from core.bench import BenchRequest
from core.bench.benchmark import run_benchmark
from core.decode import DecodeRequest, decode_model
from core.model.inputs import describe_values, plan_inputs
from core.model.intake import IntakeRequest, describe_files
from core.model.measured import MeasuredModel
from core.notes import say, say_all
from core.quantize import QuantizeRequest, quantize_model
from tests.cli import cli
from tests.real_models import real_model
from ui.cards import dim_name_captions


def _plan(name: str):  # type: ignore[no-untyped-def]
    return _plan_file(real_model(name))


def _plan_file(path: Path):  # type: ignore[no-untyped-def]
    record = describe_files(IntakeRequest(paths=[str(path)]))
    return record, plan_inputs(record)


def test_silero_vad_runs_at_16_khz_and_sweeps_its_state_with_the_batch() -> None:
    for name in ("silero_vad", "silero_vad_half"):
        record, plan = _plan(name)
        shapes = {s.name: (s.shape, s.batch_axis) for s in plan}
        assert shapes["input"] == ([1, 512], 0) and shapes["state"] == ([2, 1, 128], 1), (name, shapes)
        if name == "silero_vad":
            sr = next(s for s in plan if s.name == "sr")
            assert (sr.kind, sr.low) == ("constant", 16000)
        report = run_benchmark(
            BenchRequest(
                model=MeasuredModel(path=record.path, inputs=plan), batches=[1, 4], threads=[1], iterations=5, warmup=1
            )
        )
        assert sorted({r.batch for r in report.results}) == [1, 4]


def test_the_ocr_detector_classifier_and_recogniser_get_real_image_sizes() -> None:
    _, (det,) = _plan("ocr_det")
    assert det.shape == [1, 3, 640, 640] and det.batch_axis == 0 and "detector" in det.free[1].why.english()
    _, (cls,) = _plan("ocr_cls")  # PaddleOCR's text direction classifier: a line of text, not a 224×224 photo
    assert (
        cls.shape == [1, 3, 48, 192]
        and cls.batch_axis == 0
        and "text direction classifier" in cls.free[1].why.english()
    )
    assert cls.free[1].source.english().startswith("the kind of model (a PaddlePaddle classifier of two classes")
    record, (rec,) = _plan("ocr_rec")  # its 6,623 characters in the metadata make it a text recogniser
    assert record.metadata.class_count == 6623 and record.metadata.text_line
    assert rec.shape == [1, 3, 48, 320] and rec.free[1].source.english() == "metadata 'character' (a text recogniser)"


def test_the_ocr_classifier_with_constant_weights_is_quantized(tmp_path: Path) -> None:
    record, plan = _plan("ocr_cls")
    report = quantize_model(QuantizeRequest(
        model=MeasuredModel(path=record.path, inputs=plan), out_dir=str(tmp_path), variants=["dynamic-qint8", "fp16"],
        calibration_count=2, held_out=2, iterations=5, warmup=1, threads=1,
    ))  # fmt: skip
    assert any("initializers first" in say(n) for n in report.notes)
    dynamic, fp16 = report.variants[1], report.variants[2]
    assert not dynamic.error and dynamic.integer_ops, dynamic.error
    assert not fp16.error and fp16.accuracy_ok is not None
    assert report.recommended is None or next(v for v in report.variants if v.key == report.recommended).accuracy_ok


def test_a_classic_ml_model_with_a_map_output_is_benchmarked() -> None:
    record, plan = _plan("iris")
    assert [s.shape for s in plan] == [[3, 2]] and plan[0].batch_axis is None
    report = run_benchmark(
        BenchRequest(model=MeasuredModel(path=record.path, inputs=plan), threads=[1], iterations=5, warmup=1)
    )
    assert all(r.max_abs_diff == 0.0 for r in report.results)


def test_fp16_of_the_ocr_detector_keeps_its_batch_norms_in_float32(tmp_path: Path) -> None:
    """Plain float16 loses the detector entirely (max error 1.0, cosine 0.02 on its sigmoid map): its
    BatchNormalization nodes are numerically sensitive. They are kept in float32, and the variant is within
    tolerance."""
    record, plan = _plan("ocr_det")
    report = quantize_model(QuantizeRequest(
        model=MeasuredModel(path=record.path, inputs=plan), out_dir=str(tmp_path), variants=["fp16"],
        calibration_count=1, held_out=2, iterations=3, warmup=1, threads=1,
    ))  # fmt: skip
    fp16 = report.variants[1]
    kept = say_all(fp16.kept_float32)
    assert any(k.startswith("BatchNormalization ×") and "sensitive" in k for k in kept), kept
    assert fp16.accuracy is not None and fp16.accuracy.cosine_similarity > 0.99
    assert fp16.accuracy_ok, fp16.accuracy_note


def test_a_text_model_gets_character_ids_within_its_vocabulary() -> None:
    record, (ids,) = _plan("tashkeel")
    assert ids.shape == [1, 128] and ids.batch_axis == 0 and ids.free[1].why.english() == "sequence length: 128"
    assert (ids.kind, ids.low, ids.high) == ("integers", 0, 54)
    assert "54 rows" in say(describe_values(ids))  # its embedding table
    report = run_benchmark(
        BenchRequest(
            model=MeasuredModel(path=record.path, inputs=[ids]), batches=[1, 2], threads=[1], iterations=5, warmup=1
        )
    )
    assert sorted({r.batch for r in report.results}) == [1, 2]


def test_fp16_of_a_model_with_if_branches_keeps_what_the_branches_read(tmp_path: Path) -> None:
    """The If bodies of silero read Casts of the main graph by name: dropping them as unused broke the model
    ("... is not output of any previous nodes")."""
    record, plan = _plan("silero_vad")
    report = quantize_model(QuantizeRequest(
        model=MeasuredModel(path=record.path, inputs=plan), out_dir=str(tmp_path), variants=["dynamic-qint8", "fp16"],
        calibration_count=2, held_out=2, iterations=3, warmup=1, threads=1,
    ))  # fmt: skip
    dynamic, fp16 = report.variants[1], report.variants[2]
    assert "inside If/Loop/Scan bodies" in dynamic.error  # where its Convs are, and why INT8 took none
    assert not fp16.error, fp16.error
    assert fp16.accuracy is not None and fp16.accuracy_ok, fp16.accuracy_note


def test_the_captcha_recogniser_runs_on_a_line_of_text_as_its_axis_name_says_and_at_a_width_given_on_the_cli() -> None:
    """ddddocr's captcha model (1×1×64×image_width) has no metadata: its width comes from the axis's name and the
    kind of input, 320 (never 1), and `--dim image_width=N` runs it at N."""
    record, (line,) = _plan("captcha")
    assert record.metadata.entries == {} and not record.metadata.text_line
    assert line.shape == [1, 1, 64, 320] and len(line.free) == 1
    assert line.free[0].source.english() == "its name 'image_width', the kind of input (a line of text)", line.free[0]
    done = cli("bench", str(real_model("captcha")), "--dim", "image_width=96", "--iters", "3", "--warmup", "1",
               "--threads", "1", "--levels", "all", "--no-save", "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    (measured,) = json.loads(done.stdout)["inputs"]
    assert measured["shape"] == [1, 1, 64, 96] and measured["free_dims"][0]["from"] == "you", measured


def test_class_names_kept_in_character_are_class_names_not_a_text_recognisers_alphabet() -> None:
    """RapidAI's orientation and layout models keep their classes under PaddleOCR's `character` key: angles and
    words, not the single characters a recogniser reads, so they are not planned as a line of text."""
    record, (image,) = _plan("orientation")
    assert record.metadata.classes == ["0", "90", "180", "270"] and not record.metadata.text_line
    assert record.metadata.exporter == ""
    assert image.shape == [1, 3, 224, 224] and image.batch_axis == 0 and image.free[0].symbol == "DynamicDimension.0"
    layout = describe_files(IntakeRequest(paths=[str(real_model("layout"))])).metadata
    assert layout.class_count == 10 and layout.classes[3] == "figure_caption" and not layout.text_line


def test_an_image_size_found_only_in_the_metadata_is_what_the_model_runs_at(tmp_path: Path) -> None:
    """The orientation classifier with its height and width left open as paddle2onnx names them, and an
    Ultralytics-style classifier's metadata (imgsz, stride, task, names) written as its exporter writes them: the
    size 192×192 comes from `imgsz` alone (without it, a classifier's usual 224), and the model runs at it."""
    model = onnx.load(str(real_model("orientation")))
    dims = model.graph.input[0].type.tensor_type.shape.dim
    dims[2].dim_param, dims[3].dim_param = "DynamicDimension.1", "DynamicDimension.2"
    bare = tmp_path / "orientation_open.onnx"
    onnx.save(model, str(bare))
    del model.metadata_props[:]
    onnx.helper.set_model_props(model, {
        "author": "Ultralytics", "version": "8.3.27", "task": "classify", "stride": "32", "batch": "1",
        "imgsz": "[192, 192]", "names": "{0: '0', 1: '90', 2: '180', 3: '270'}",
    })  # fmt: skip
    onnx.save(model, str(tmp_path / "orientation_imgsz.onnx"))
    bare_record, (guessed,) = _plan_file(bare)
    assert guessed.shape == [1, 3, 224, 224] and "classifier" in guessed.free[1].why.english()
    (made_up,) = dim_name_captions(bare_record.inputs + bare_record.outputs)  # one line for three names alike
    names = "**DynamicDimension.0**, **DynamicDimension.1**, **DynamicDimension.2**"
    assert made_up.replace("\\", "").startswith(f"{names}: a name paddle2onnx gives"), made_up
    record, (image,) = _plan_file(tmp_path / "orientation_imgsz.onnx")
    assert record.metadata.image_size == [192, 192] and record.metadata.classes == ["0", "90", "180", "270"]
    assert image.shape == [1, 3, 192, 192] and {d.source.english() for d in image.free[1:]} == {"metadata 'imgsz'"}
    report = run_benchmark(
        BenchRequest(model=MeasuredModel(path=record.path, inputs=[image]), threads=[1], iterations=3, warmup=1)
    )
    assert len(report.results) == 2 and all((r.max_abs_diff or 0.0) < 1e-4 for r in report.results)


def test_the_layout_detector_counts_its_constant_node_weights_once_and_says_its_domain_is_unused() -> None:
    """All 1.8 M weights of RapidAI's layout detector sit in Constant nodes, and it declares a 'Paddle' domain no
    node uses: the card and the decoder agree on the count, and both say the domain is declared and unused."""
    path = real_model("layout")
    record = describe_files(IntakeRequest(paths=[str(path)]))
    decoded = decode_model(DecodeRequest(path=str(path)))
    assert record.parameter_count == decoded.parameter_count == 1_820_488
    # 500 Constants of more than one value, 12 of them int64 shapes: the card's 488 are the tensors Decode counts
    said = say_all(record.notes)
    assert "488 weight tensor(s) are held in Constant nodes instead of initializers." in said
    assert sum(t.is_weight for t in decoded.initializers) == 488
    assert "Operator domain declared and unused: Paddle (no node uses it; nothing custom runs)." in said
    assert not any("beyond the standard ones" in n for n in said)
    assert "Operator domain 'Paddle' is declared in the model's opset imports but no node uses it" in " ".join(
        say(problem) for problem in decoded.problems
    )
    captcha = describe_files(IntakeRequest(paths=[str(real_model("captcha"))]))
    said = say_all(captcha.notes)
    assert "Operator domains beyond the standard ones: com.microsoft." in said  # one node uses it
    assert any("declared and unused: ai.onnx.preview.training, ai.onnx.training," in n for n in said)
