"""Quantize: every mode on TinyCNN and the classifier, sizes, accuracy against fp32, clear refusals."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest

from core.errors import QuantizeError
from core.jobs.wire import from_data
from core.model.inputs import BenchInput
from core.model.measured import MeasuredModel
from core.notes import Note, note, say
from core.quantize import (
    VARIANTS,
    CalibrationRequest,
    QuantizeReport,
    QuantizeRequest,
    check_calibration,
    quantize_model,
)
from core.quantize.calibration import FROM_NPZ
from tests import builders
from tests.cli import cli
from ui.charts import quantize_figure
from ui.quantize_view import comparison_frame

INPUTS = {
    "tinycnn": [BenchInput(name="input", dtype="float32", shape=[1, 3, 112, 112], batch_axis=0)],
    "classifier": [BenchInput(name="input", dtype="float32", shape=[1, 768], batch_axis=0)],
}


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, QuantizeReport]:
    """Every variant of both models, made and measured once for the tests below."""
    out = {}
    for name in INPUTS:
        folder = tmp_path_factory.mktemp(name)
        path = builders.exported_sample(name, folder)
        out[name] = quantize_model(QuantizeRequest(
            model=MeasuredModel(path=str(path), inputs=INPUTS[name]), out_dir=str(folder / "variants"),
            variants=list(VARIANTS), calibration_count=8, held_out=8, iterations=20, warmup=2, threads=1,
        ))  # fmt: skip
    return out


@pytest.mark.parametrize("name", list(INPUTS))
def test_every_mode_runs(reports: dict[str, QuantizeReport], name: str) -> None:
    report = reports[name]
    assert [v.key for v in report.variants] == ["fp32", *VARIANTS]
    assert all(not v.error for v in report.variants), [v.error for v in report.variants]
    for v in report.variants:
        assert Path(v.path).is_file() and v.latency is not None and v.latency.n == 20
        assert v.speedup is not None and v.speedup_low is not None and v.speedup_high is not None
        assert v.speedup_low <= v.speedup <= v.speedup_high
        onnx.checker.check_model(onnx.load(v.path))
    folder = Path(report.variants[1].path).parent  # links made for ORT's tools are gone: none is read back
    assert not [p for p in folder.rglob("*") if p.is_symlink()]


@pytest.mark.parametrize("name", list(INPUTS))
def test_sizes_shrink_about_4x_for_int8_and_2x_for_fp16(reports: dict[str, QuantizeReport], name: str) -> None:
    """In the weights; the file of a model as small as the classifier (6 kB) is mostly graph, not weights."""
    variants = {v.key: v for v in reports[name].variants}
    for measure in ("weight_bytes", "size_bytes") if name == "tinycnn" else ("weight_bytes",):
        fp32 = getattr(variants["fp32"], measure)
        for key, variant in VARIANTS.items():
            ratio = fp32 / getattr(variants[key], measure)
            if variant.mode == "fp16":
                assert 1.8 < ratio < 2.1, (measure, key, ratio)
            else:
                assert 3.3 < ratio < 4.1, (measure, key, ratio)


@pytest.mark.parametrize("name", list(INPUTS))
def test_accuracy_is_measured_against_fp32(reports: dict[str, QuantizeReport], name: str) -> None:
    variants = {v.key: v for v in reports[name].variants}
    assert variants["fp32"].accuracy is None
    for key in VARIANTS:
        acc = variants[key].accuracy
        assert acc is not None and acc.samples == 8
        assert acc.max_abs_error > 0 and acc.mean_abs_error <= acc.max_abs_error
        assert 0.95 < acc.cosine_similarity <= 1.0 + 1e-9
        assert acc.top1_agreement is not None and 0 <= acc.top1_agreement <= 1  # both end in [batch, classes]
    assert variants["fp16"].accuracy.max_abs_error < 1e-2  # type: ignore[union-attr]
    assert variants["fp16"].accuracy.max_abs_error < variants["dynamic-qint8"].accuracy.max_abs_error  # type: ignore[union-attr]


def test_where_the_integer_ops_ran(reports: dict[str, QuantizeReport]) -> None:
    variants = {v.key: v for v in reports["tinycnn"].variants}
    assert variants["fp32"].integer_ops == {}
    assert variants["dynamic-qint8"].integer_ops["ConvInteger"] == 2
    assert variants["static-qdq-minmax"].ops["QuantizeLinear"] > 0  # the saved QDQ graph...
    assert variants["static-qdq-minmax"].integer_ops["QLinearConv"] == 2  # ...runs as integer kernels
    assert variants["static-qoperator-minmax"].ops["QLinearConv"] == 2
    assert all(set(v.providers) == {"CPUExecutionProvider"} for v in variants.values())
    assert any("VNNI" in say(note) for note in reports["tinycnn"].notes)


def test_what_the_page_draws(reports: dict[str, QuantizeReport]) -> None:
    frame = comparison_frame(reports["tinycnn"])
    assert len(frame) == len(VARIANTS) + 1 and frame["smaller"].iloc[0] == 1.0
    # a classifier: whether each variant still answers the same comes first, before size and speed
    assert list(frame.columns)[:3] == ["variant", "within tolerance", "top-1 agreement"]
    chart = frame.rename(columns={"variant": "label"})[["label", "size_mb", "median_ms", "p90_ms", "cosine"]]
    assert len(quantize_figure(chart).data[0].x) == len(VARIANTS) + 1


# -- calibration data -------------------------------------------------------------------------------------------
def test_a_matching_npz_calibrates_and_the_held_out_part_is_kept_apart(tmp_path: Path) -> None:
    path = builders.exported_sample("classifier", tmp_path)
    npz = tmp_path / "calib.npz"
    np.savez(npz, input=np.random.default_rng(0).standard_normal((12, 768)).astype(np.float32))
    assert check_calibration(CalibrationRequest(path=str(npz), inputs=INPUTS["classifier"])) == 12
    report = quantize_model(QuantizeRequest(
        model=MeasuredModel(path=str(path), inputs=INPUTS["classifier"]), out_dir=str(tmp_path / "v"),
        variants=["static-qdq-percentile"], calibration_file=str(npz), iterations=5, warmup=1, threads=1,
    ))  # fmt: skip
    assert report.calibration == note(FROM_NPZ, count=9)  # a note, said where shown
    assert say(report.calibration) == "9 samples from the uploaded .npz"
    assert "last 3 samples" in say(report.held_out) and report.variants[1].accuracy.samples == 3  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("arrays", "reason"),
    [
        ({"tokens": np.zeros((4, 768), np.float32)}, "no array for input(s) input; array(s) tokens match no input"),
        ({"input": np.zeros((4, 768), np.float64)}, "'input' is float64, the model takes float32"),
        ({"input": np.zeros((4, 512), np.float32)}, "'input' has shape [4, 512]; expected [N, 768]"),
        ({"input": np.zeros((0, 768), np.float32)}, "holds no samples"),
    ],
)
def test_a_mismatched_npz_is_refused_with_the_reason(tmp_path: Path, arrays: dict, reason: str) -> None:
    npz = tmp_path / "bad.npz"
    np.savez(npz, **arrays)
    with pytest.raises(QuantizeError) as caught:
        check_calibration(CalibrationRequest(path=str(npz), inputs=INPUTS["classifier"]))
    assert reason in str(caught.value)


def test_a_file_that_is_no_npz_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "x.npz"
    bad.write_bytes(b"not a zip at all")
    with pytest.raises(QuantizeError, match=r"not a readable \.npz"):
        check_calibration(CalibrationRequest(path=str(bad), inputs=INPUTS["classifier"]))
    pickled = tmp_path / "p.npz"
    np.savez(pickled, input=np.array([{"a": 1}], dtype=object))
    with pytest.raises(QuantizeError):  # object arrays would need pickle, which is never allowed
        check_calibration(CalibrationRequest(path=str(pickled), inputs=INPUTS["classifier"]))


# -- models that cannot be quantized ---------------------------------------------------------------------------
def test_an_already_quantized_model_is_refused(reports: dict[str, QuantizeReport], tmp_path: Path) -> None:
    quantized = next(v.path for v in reports["tinycnn"].variants if v.key == "dynamic-qint8")
    with pytest.raises(QuantizeError, match=r"already quantized: it has .*ConvInteger"):
        quantize_model(
            QuantizeRequest(
                model=MeasuredModel(path=quantized, inputs=INPUTS["tinycnn"]), out_dir=str(tmp_path), variants=["fp16"]
            )
        )


def test_a_model_without_float_weights_is_refused(tmp_path: Path) -> None:
    path = builders.write(builders.relu_model(), tmp_path / "relu.onnx")
    inputs = [BenchInput(name="x", dtype="float32", shape=[1, 4], batch_axis=0)]
    with pytest.raises(QuantizeError, match="no float weights"):
        quantize_model(
            QuantizeRequest(
                model=MeasuredModel(path=str(path), inputs=inputs),
                out_dir=str(tmp_path / "v"),
                variants=["dynamic-qint8"],
            )
        )


def test_unsupported_ops_leave_a_variant_unmade_and_the_others_made(tmp_path: Path) -> None:
    """A model whose weights feed only an Add: nothing for INT8 to take, but FP16 still works."""
    from onnx import TensorProto, helper, numpy_helper

    weight = numpy_helper.from_array(np.ones((4, 4), np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 4])],
        [weight],
    )
    path = builders.write(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "a.onnx")
    inputs = [BenchInput(name="x", dtype="float32", shape=[4, 4], batch_axis=None)]
    report = quantize_model(QuantizeRequest(
        model=MeasuredModel(path=str(path), inputs=inputs), out_dir=str(tmp_path / "v"),
        variants=["dynamic-qint8", "fp16"], iterations=5, warmup=1, threads=1,
    ))  # fmt: skip
    by = {v.key: v for v in report.variants}
    assert "no node was quantized" in by["dynamic-qint8"].error
    assert not by["fp16"].error and by["fp16"].latency is not None
    assert Path(path).is_file()  # the original is untouched


def test_unknown_variants_and_wrong_inputs_are_refused(tmp_path: Path) -> None:
    path = builders.exported_sample("classifier", tmp_path)
    with pytest.raises(QuantizeError, match="Unknown variant int4"):
        quantize_model(
            QuantizeRequest(
                model=MeasuredModel(path=str(path), inputs=INPUTS["classifier"]),
                out_dir=str(tmp_path),
                variants=["int4"],
            )
        )
    with pytest.raises(QuantizeError, match=r"inputs given \(tokens\) are not the model's \(input\)"):
        quantize_model(
            QuantizeRequest(
                model=MeasuredModel(
                    path=str(path), inputs=[BenchInput(name="tokens", dtype="float32", shape=[1, 768], batch_axis=0)]
                ),
                out_dir=str(tmp_path),
                variants=["fp16"],
            )
        )


# -- the command line -------------------------------------------------------------------------------------------
def test_cli_quantize_dynamic_and_static_with_an_npz(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    model = builders.exported_sample("classifier", tmp_path)
    done = cli("quantize", str(model), "--mode", "dynamic", "-o", str(tmp_path / "d.onnx"), "--iters", "20", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["variants"][1]["key"] == "dynamic-qint8" and (tmp_path / "d.onnx").is_file()
    assert data["variants"][1]["accuracy"]["cosine_similarity"] > 0.95
    assert "link(s)" not in done.stderr  # the job left nothing among its results to be dropped

    npz = tmp_path / "c.npz"
    np.savez(npz, input=np.random.default_rng(1).standard_normal((6, 768)).astype(np.float32))
    text = cli("quantize", str(model), "--mode", "static", "--format", "qoperator", "--method", "percentile",
               "--calibration", str(npz), "-o", str(tmp_path / "s.onnx"), "--iters", "20")  # fmt: skip
    assert text.returncode == 0, text.stderr
    assert "smaller" in text.stdout and "cosine" in text.stdout and "6 samples from the uploaded .npz" in text.stdout
    report = from_data(data, QuantizeReport)
    assert report.variants[1].size_bytes == (tmp_path / "d.onnx").stat().st_size

    np.savez(npz, input=np.zeros((6, 10), np.float32))
    bad = cli("quantize", str(model), "--mode", "static", "--calibration", str(npz), "-o", str(tmp_path / "x.onnx"))
    assert bad.returncode == 2 and "does not fit the model" in bad.stderr and not (tmp_path / "x.onnx").exists()


def test_cli_quantize_makes_the_pages_three_variants_by_default_and_dynamic_speaks_of_no_calibration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    model = builders.exported_sample("classifier", tmp_path)
    every = cli("quantize", str(model), "-o", str(tmp_path / "q.onnx"), "--iters", "10", "--json")
    assert every.returncode == 0, every.stderr
    data = json.loads(every.stdout)
    keys = ["dynamic-qint8", "static-qdq-minmax", "fp16"]
    assert [v["key"] for v in data["variants"][1:]] == keys  # the Quantize page's default variants
    assert data["outputs"] == {key: str(tmp_path / f"q.{key}.onnx") for key in keys}
    assert all((tmp_path / f"q.{key}.onnx").is_file() for key in keys)

    dynamic = cli("quantize", str(model), "--mode", "dynamic", "-o", str(tmp_path / "d.onnx"), "--iters", "10")
    assert dynamic.returncode == 0, dynamic.stderr
    assert "calibrat" not in dynamic.stdout.lower() and "cosine" in dynamic.stdout
    counted = cli("quantize", str(model), "--mode", "dynamic", "--calibration", "8", "-o", str(tmp_path / "x.onnx"))
    assert counted.returncode == 2 and "dynamic INT8 and FP16 use no calibration data" in counted.stderr


def test_for_size_the_fastest_of_the_smallest_is_recommended_and_a_slower_one_says_so() -> None:
    """An OCR detector: dynamic INT8 3.9× smaller at 0.15× the speed, static INT8 3.86× smaller at 0.90×. Both
    are about as small, so the faster one is recommended; and a recommendation for size that is surely slower
    says by how much."""
    from core.quantize.judge import recommend
    from core.quantize.records import Variant

    def variant(key: str, size: int, speedup: float, low: float, high: float) -> Variant:
        made = Variant(key=key, label=key, size_bytes=size, speedup=speedup, speedup_low=low, speedup_high=high)
        made.latency, made.accuracy_ok = object(), True  # type: ignore[assignment]  # measured, within tolerance
        return made

    fp32 = Variant(key="fp32", label="FP32 (original)", size_bytes=4_700_000)
    dynamic = variant("dynamic-qint8", 1_205_000, 0.15, 0.15, 0.15)
    static = variant("static-qdq-minmax", 1_217_000, 0.90, 0.88, 0.92)
    report = QuantizeReport(model="det", variants=[fp32, dynamic, static], calibration="", held_out="", threads=1,
                            notes=[], cpu_flags=[])  # fmt: skip
    key, said = recommend(report)
    headline = say(said)
    assert key == "static-qdq-minmax"
    assert headline.startswith("Recommended for size only: static-qdq-minmax, 3.9× smaller")
    assert "1.1× slower" in headline
    report.variants = [fp32, dynamic]
    key, said = recommend(report)
    headline = say(said)
    assert key == "dynamic-qint8" and "6.7× slower than float32" in headline and "95 % CI 6.7–6.7×" in headline


def test_the_reports_words_are_notes_said_in_the_readers_language_and_an_earlier_reports_sentences_still_read() -> None:
    """A quantization's headline, tolerance, a variant's verdict and its notes are notes: said in Chinese on a
    Chinese page though the worker made them in English. A report kept by an earlier version (its sentences) reads
    as it was written."""
    from core.i18n import using
    from core.jobs.wire import decode, encode, to_data
    from core.quantize.judge import Tolerance, judge
    from core.quantize.records import Accuracy, Variant

    fp32 = Variant(key="fp32", label="FP32 (original)")
    fp16 = Variant(key="fp16", label="FP16")
    fp16.accuracy = Accuracy(samples=3, max_abs_error=1.0, mean_abs_error=0.5, cosine_similarity=0.5)
    fp16.accuracy.reference_mean_abs = 1.0  # a mean error of 50 % of the outputs' magnitude
    judge([fp32, fp16], Tolerance())
    report = QuantizeReport(
        model="m", variants=[fp32, fp16], calibration="", held_out=note(FROM_NPZ, count=3), threads=1,
        notes=[], cpu_flags=[], tolerance=Tolerance().describe(),
    )  # fmt: skip
    kept: QuantizeReport = decode(encode(report), QuantizeReport)
    said = kept.variants[1].accuracy_note
    assert said == fp16.accuracy_note and isinstance(said, Note)
    assert say(said) == "cosine 0.5000 < 0.99; mean error 50% of the outputs' magnitude > 10%"
    with using("zh"):
        assert "余弦" in say(kept.tolerance) and "cosine" not in say(kept.tolerance), say(kept.tolerance)
    old = to_data(report)
    old |= {"tolerance": "cosine ≥ 0.99", "held_out": "3 inputs", "headline": "Keep it.", "notes": ["A note."]}
    old["variants"][1]["accuracy_note"] = "cosine 0.5 < 0.99"
    earlier: QuantizeReport = decode(encode(old), QuantizeReport)
    said_then = [say(earlier.tolerance), say(earlier.held_out), say(earlier.headline)]
    assert said_then == ["cosine ≥ 0.99", "3 inputs", "Keep it."]
    assert say(earlier.variants[1].accuracy_note) == "cosine 0.5 < 0.99"
    assert [say(n) for n in earlier.notes] == ["A note."]
