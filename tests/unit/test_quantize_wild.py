"""Quantization on models shaped like real ones: Constant-node weights, values that leave float16's range,
and a tolerance that decides what may be recommended."""

from __future__ import annotations

from pathlib import Path

import onnx

from core.model.inputs import plan_inputs
from core.model.intake import IntakeRequest, describe_files
from core.model.measured import MeasuredModel
from core.notes import say, say_all
from core.quantize import QuantizeRequest, quantize_model
from tests import wild


def _quantize(model: onnx.ModelProto, tmp_path: Path, variants: list[str]):  # type: ignore[no-untyped-def]
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    record = describe_files(IntakeRequest(paths=[str(path)]))
    return quantize_model(QuantizeRequest(
        model=MeasuredModel(path=str(path), inputs=plan_inputs(record)), out_dir=str(tmp_path / "out"),
        variants=variants, calibration_count=4, held_out=4, iterations=10, warmup=1, threads=1,
    ))  # fmt: skip


def test_constant_node_weights_are_quantized_at_the_detectors_real_size(tmp_path: Path) -> None:
    report = _quantize(wild.detector_model(), tmp_path, ["dynamic-qint8", "static-qdq-minmax"])
    assert any("held in Constant nodes" in say(n) and "initializers first" in say(n) for n in report.notes)
    dynamic, static = report.variants[1], report.variants[2]
    assert not dynamic.error and not static.error, (dynamic.error, static.error)
    assert "ConvInteger" in dynamic.ops and "x 1×3×640×640" in say(report.held_out)
    assert static.accuracy is not None and static.accuracy_ok is not None


def test_fp16_keeps_the_nodes_that_overflow_in_float32_and_says_which(tmp_path: Path) -> None:
    report = _quantize(wild.range_model(3000.0), tmp_path, ["fp16"])
    fp16 = report.variants[1]
    assert say_all(fp16.kept_float32) == [
        "MatMul 'sum_up' (its values leave float16's range)",
        "Div 'shrink' (its values leave float16's range)",
    ]
    assert fp16.accuracy_ok and fp16.accuracy is not None and fp16.accuracy.cosine_similarity > 0.999
    assert report.recommended in (None, "fp16") and "cosine similarity ≥ 0.99" in say(report.tolerance)


def test_a_variant_out_of_tolerance_is_never_recommended(tmp_path: Path) -> None:
    report = _quantize(wild.range_model(1e-9), tmp_path, ["fp16", "dynamic-qint8"])
    fp16 = report.variants[1]
    assert fp16.accuracy_ok is False and "mean error" in say(fp16.accuracy_note)  # the outputs came out ~50× too large
    assert report.recommended != "fp16"
    if report.recommended is None:
        assert "keep the float32 model" in say(report.headline)


def test_an_uploaded_model_with_external_data_is_quantized(tmp_path: Path) -> None:
    """An upload is linked into the workspace (a second hard link to its data), and onnx's loader refuses a data
    file with two links or behind a symbolic one: Quantize's quantizers read a copy of the data beside the model."""
    import os

    from tests import builders

    kept = builders.save_with_external_data(wild.range_model(1.0), tmp_path / "kept")
    upload = tmp_path / "upload"
    upload.mkdir()
    for file in kept.parent.iterdir():
        os.link(file, upload / file.name)  # as the workspace holds an upload
    path = upload / kept.name
    record = describe_files(IntakeRequest(paths=[str(path), str(path) + ".data"]))
    report = quantize_model(QuantizeRequest(
        model=MeasuredModel(path=str(path), inputs=plan_inputs(record)), out_dir=str(tmp_path / "out"),
        variants=["dynamic-qint8", "fp16"], calibration_count=2, held_out=2, iterations=5, warmup=1, threads=1,
    ))  # fmt: skip
    assert [v.error for v in report.variants[1:]] == ["", ""], [v.error for v in report.variants]
    assert not [p for p in (tmp_path / "out").rglob("*.data") if "source" in p.parts]  # the copies are gone
