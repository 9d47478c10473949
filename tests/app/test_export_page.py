"""The Export page through AppTest: defaults from the model, an export, its report, the model it leaves."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from streamlit.testing.v1 import AppTest

from core.jobs import EXPORT
from core.model import zoo
from tests.app.pages import open_page


@pytest.fixture
def app(monkeypatch: pytest.MonkeyPatch) -> AppTest:
    monkeypatch.setenv("WORKBENCH_START_SAMPLE", "transformer")
    return open_page("export")


def test_controls_start_from_the_models_own_shapes_and_dynamic_axes(app: AppTest) -> None:
    tag = app.session_state["model"].id[:12]
    assert app.text_input(key=f"shape_{tag}_tokens").value == "1,16,64"
    assert app.checkbox(key=f"dyn_{tag}_tokens_0").value and app.checkbox(key=f"dyn_{tag}_tokens_1").value
    assert not app.checkbox(key=f"dyn_{tag}_tokens_2").value
    assert app.text_input(key=f"dynname_{tag}_tokens_1").value == "seq"
    assert app.radio(key="exporter_choice").value == "dynamo"
    assert app.selectbox(key="opset_choice").value == 18


def test_legacy_export_of_the_transformer_reports_the_baked_sequence_length(app: AppTest) -> None:
    app.radio(key="exporter_choice").set_value("legacy")
    app.button(key="export_button").click().run()
    assert not app.exception
    assert "checks fail" in app.error[0].value
    checklist = "\n".join(m.value for m in app.markdown)
    assert "not really dynamic" in checklist
    # a failed export does not replace the current model unless the user says so
    assert app.session_state["model"].format == "sample"
    assert "was not replaced" in "\n".join(c.value for c in app.caption)
    app.button(key="use_failed_export").click().run()
    assert app.session_state["model"].format == "onnx"
    assert app.session_state["torch_model"].name == "transformer"  # the PyTorch original stays at hand


def _rename(app: AppTest, inputs: str, outputs: str) -> None:
    tag = app.session_state["model"].id[:12]
    app.text_input(key=f"inputs_{tag}").set_value(inputs)
    app.text_input(key=f"outputs_{tag}").set_value(outputs).run()


def test_dynamo_export_with_inputs_and_outputs_renamed_passes_and_offers_the_file_and_the_code(app: AppTest) -> None:
    _rename(app, "embeddings", "encoded")
    app.button(key="export_button").click().run()
    assert not app.exception
    assert "Exported and verified" in app.success[0].value
    assert "batch = 3" in app.success[0].value and "seq = 21" in app.success[0].value
    assert "dynamic_shapes=({0: 'batch', 1: 'seq'},)" in app.code[0].value
    record = app.session_state["model"]
    assert [i.name for i in record.inputs] == ["embeddings"] and [o.name for o in record.outputs] == ["encoded"]
    assert record.inputs[0].shape == ["batch", "seq", 64]

    # another session exporting the same sample with the same settings gets a copy at once: a file of its own with
    # the same bytes (the id is their sha256; core.export.reuse)
    again = open_page("export")
    _rename(again, "embeddings", "encoded")
    again.button(key="export_button").click().run()
    assert not again.exception
    assert "copied instead of being made again" in again.success[0].value
    first, second = app.session_state["model"], again.session_state["model"]
    assert first.path != second.path and Path(second.path).is_file() and first.id == second.id


def test_an_export_whose_outputs_are_all_zero_says_it_proves_nothing_and_still_becomes_current(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("WORKBENCH_START_SAMPLE", "")
    weights = {name: torch.zeros_like(value) for name, value in zoo.build_model("classifier").state_dict().items()}
    torch.save(weights, tmp_path / "untrained.pt")
    at = open_page("export", ("untrained.pt", (tmp_path / "untrained.pt").read_bytes()))
    at.radio(key="exporter_choice").set_value("legacy")
    at.button(key="export_button").click().run()
    assert not at.exception and not at.success and not at.error
    assert "3 of 5 checks pass, and the rest prove nothing" in at.warning[0].value
    assert "does not test the model" in at.warning[0].value and "'logits' all zero" in at.warning[0].value
    assert list(at.table[0].value["result"]) == ["proves nothing", "proves nothing"]
    assert at.session_state["model"].format == "onnx"  # nothing failed: the export is the current model


def test_an_onnx_model_without_pytorch_origin_is_sent_to_the_model_page(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_START_SAMPLE", "")
    at = open_page("export", timeout=60)
    assert "Export needs a PyTorch model" in at.info[0].value


def test_export_again_with_the_legacy_exporter_honours_opset_14(app: AppTest) -> None:
    app.selectbox(key="opset_choice").set_value(14)
    app.button(key="export_button").click().run()
    assert "produced opset 18" in app.warning[0].value
    again = next(b for b in app.button if "legacy exporter at opset 14" in b.label)
    again.click().run()
    assert not app.exception
    assert app.radio(key="exporter_choice").value == "legacy"
    report = app.session_state[EXPORT.name][1]
    assert report.exporter == "legacy" and report.opset_produced == 14


def test_a_bad_shape_is_refused_before_export(app: AppTest) -> None:
    tag = app.session_state["model"].id[:12]
    app.text_input(key=f"shape_{tag}_tokens").set_value("1,a,64").run()
    assert "must be whole numbers" in app.error[0].value
    assert app.button(key="export_button").disabled


def test_an_empty_shape_asks_for_it_without_an_error_and_no_text_is_about_another_model(app: AppTest) -> None:
    tag = app.session_state["model"].id[:12]
    assert "BatchNorm" not in app.checkbox(key="optimize").label  # the transformer has none
    app.text_input(key=f"shape_{tag}_tokens").set_value("").run()
    assert not app.error and "Type the shape of 'tokens'" in app.info[0].value
    assert app.button(key="export_button").disabled


def test_a_torchscript_int_argument_gets_a_value_and_the_plan_starts_from_the_sizes_and_values_exported_at(
    monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    import torch

    from tests.unit.test_export_scalars import RateModel

    monkeypatch.setenv("WORKBENCH_START_SAMPLE", "")
    path = tmp_path / "rate.pt"
    torch.jit.save(torch.jit.script(RateModel().eval()), str(path))
    at = open_page("export", ("rate.pt", path.read_bytes()), timeout=300)
    tag = at.session_state["model"].id[:12]
    assert at.number_input(key=f"value_{tag}_sr").value == 16000  # a sample rate, not a shape
    at.text_input(key=f"shape_{tag}_x").set_value("1,6,4").run()
    at.checkbox(key=f"dyn_{tag}_x_1").check().run()
    at.text_input(key=f"dynname_{tag}_x_1").set_value("frames").run()
    at.number_input(key=f"value_{tag}_sr").set_value(8000).run()
    at.button(key="export_button").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    record = at.session_state["model"]
    assert record.format == "onnx" and [i.name for i in record.inputs] == ["x", "sr"]
    assert record.inputs[0].shape == [1, "frames", 4]
    at.switch_page("app_pages/benchmark.py").run()
    assert not at.exception
    x, sr = at.session_state["input_plans"][record.id]
    assert x.shape == [1, 6, 4] and x.free[0].why.english() == "the size it was exported at"
    assert (sr.kind, sr.low) == ("constant", 8000) and sr.why is not None
    assert sr.why.english() == "the value it was exported with"
