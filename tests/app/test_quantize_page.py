"""The Quantize page through AppTest: variants compared, a bad calibration file refused, a variant made current."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from tests import builders
from tests.app.pages import open_page


def open_quantize(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AppTest:
    monkeypatch.setenv("WORKBENCH_START_SAMPLE", "")
    model = builders.exported_sample("classifier", tmp_path).read_bytes()
    return open_page("quantize", ("classifier.onnx", model), timeout=300)


def _submit(at: AppTest) -> None:
    next(b for b in at.button if b.label == "Quantize and compare").click()
    at.run()
    assert not at.exception


def test_variants_are_compared_and_one_becomes_current(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = open_quantize(tmp_path, monkeypatch)
    assert any("Choose the variants" in i.value for i in at.info)
    at.multiselect(key="quantize_variants").set_value(["dynamic-qint8", "fp16"])
    at.number_input(key="quantize_iters").set_value(20)
    at.number_input(key="quantize_held_out").set_value(4)
    _submit(at)
    table = next(d.value for d in at.dataframe if "variant" in d.value.columns)
    assert list(table["variant"]) == [
        "FP32 (original)",
        "Dynamic INT8 (QInt8 weights)",
        "FP16 (float32 inputs and outputs kept)",
    ]
    assert table["smaller"].iloc[1] > 2 and table["smaller"].iloc[2] > 1.5  # a 6 kB file: graph overhead counts
    assert table["cosine"].iloc[0] == "(reference)" and float(table["cosine"].iloc[1]) > 0.95
    assert any("MatMulInteger" in str(v) or "DynamicQuantizeMatMul" in str(v) for v in table["integer ops ORT runs"])

    # Compare with the INT8 variant: its per-value tolerance is not Quantize's gate, and the page says so
    at.switch_page("app_pages/compare.py").run()
    at.radio(key="compare_against").set_value("variant")
    at.selectbox(key="compare_variant").set_value("dynamic-qint8")
    at.number_input(key="compare_rtol").set_value(0.0)  # every value within 1e-5: an INT8 variant never is
    next(b for b in at.button if b.label == "Compare").click()
    at.run()
    assert not at.exception, at.exception
    assert any(c.value.startswith("Quantize judges a variant by its outputs as a whole") for c in at.caption)
    at.switch_page("app_pages/quantize.py").run()

    at.selectbox(key=next(s.key for s in at.selectbox if s.key and s.key.endswith("_variant"))).set_value("fp16").run()
    next(b for b in at.button if b.label == "Make it the current model").click()
    at.run()
    assert not at.exception
    current = at.session_state["model"]
    assert current.format == "onnx" and current.name.endswith("(FP16 (float32 inputs and outputs kept))")
    # the comparison it was chosen from stays on the page
    assert any("this variant of" in i.value for i in at.info)
    assert any("variant" in d.value.columns for d in at.dataframe)


def test_a_calibration_file_that_does_not_fit_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = open_quantize(tmp_path, monkeypatch)
    buffer = io.BytesIO()
    np.savez(buffer, input=np.zeros((4, 10), np.float32))
    at.multiselect(key="quantize_variants").set_value(["static-qdq-minmax"])
    at.radio(key="quantize_source").set_value("upload")
    at.file_uploader(key="quantize_npz").set_value(("calib.npz", buffer.getvalue(), "application/octet-stream"))
    _submit(at)
    errors = [e.value.replace("\\", "") for e in at.error]  # as the reader sees them: escapes taken out
    assert any("does not fit the model" in e and "expected [N, 768]" in e for e in errors), errors
    assert at.session_state["model"].name == "classifier"  # nothing lost: the current model is unchanged


def test_upload_chosen_without_a_file_says_what_to_do(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = open_quantize(tmp_path, monkeypatch)
    at.radio(key="quantize_source").set_value("upload")
    _submit(at)
    assert any("Upload an .npz" in e.value.replace("\\", "") for e in at.error)


def test_a_detector_is_quantized_at_its_plans_image_size_and_judged(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests import wild

    monkeypatch.setenv("WORKBENCH_START_SAMPLE", "")
    at = open_page("quantize", ("det.onnx", wild.detector_model().SerializeToString()), timeout=300)
    plan = next(d.value for d in at.dataframe if "shape at batch 1" in d.value.columns)
    assert plan["shape at batch 1"].tolist() == ["1,3,640,640"]
    at.multiselect(key="quantize_variants").set_value(["dynamic-qint8", "fp16"])
    at.number_input(key="quantize_iters").set_value(10)
    at.number_input(key="quantize_held_out").set_value(2)
    at.number_input(key="quantize_count").set_value(2)
    _submit(at)
    table = next(d.value for d in at.dataframe if "variant" in d.value.columns)
    assert table["within tolerance"].tolist()[0] == "(reference)"
    assert all(v == "yes" or v.startswith("no: ") for v in table["within tolerance"].tolist()[1:])
    assert any("initializers first" in c.value for c in at.caption)
    assert any("Accuracy tolerance" in c.value for c in at.caption)
    headline = at.subheader[0].value.replace("\\", "")
    assert headline.startswith(("Recommended", "No variant"))
