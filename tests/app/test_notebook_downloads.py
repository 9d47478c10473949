"""The notebook downloads at the end of every page, through AppTest: "Download as notebook" offers the page's own
step for the current model, and the whole walk-through zips the notebook with the model's file."""

from __future__ import annotations

import io
import zipfile

import nbformat
import pytest

from core.notebook import notebook_bytes
from tests import builders
from tests.app.pages import open_page
from ui.notebook_view import PLAN_KEY


def _labels(at: object) -> list[str]:
    return [e.proto.label for e in at.get("download_button")]  # type: ignore[attr-defined]


def test_a_page_offers_its_own_step_as_a_valid_notebook_and_the_whole_walk_as_a_zip(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORKBENCH_START_SAMPLE", "")
    model = builders.exported_sample("tinycnn", tmp_path_factory.mktemp("m")).read_bytes()
    at = open_page("decode", ("tinycnn.onnx", model))
    assert "Download as notebook" in _labels(at)
    plan = at.session_state[PLAN_KEY]
    assert plan.steps == ("model", "decode") and plan.model.format == "onnx"
    notebook = nbformat.reads(notebook_bytes(plan).decode(), as_version=4)
    nbformat.validate(notebook)
    assert any("onnx.load" in c.source for c in notebook.cells if c.cell_type == "code")

    next(b for b in at.button if b.key == "notebook_zip_make").click().run()
    assert not at.exception
    assert "Download the whole walk-through (notebook + model, .zip)" in _labels(at)
    made = at.session_state["notebook_zip"][1]
    with zipfile.ZipFile(io.BytesIO(made)) as zf:
        names = zf.namelist()
        assert names[0] == "walk-through.ipynb" and any(n.endswith(".onnx") for n in names)
        whole = nbformat.reads(zf.read(names[0]).decode(), as_version=4)
    nbformat.validate(whole)


def test_after_an_export_the_pages_notebook_starts_from_the_pytorch_model_and_exports_it_the_same_way() -> None:
    at = open_page("partition")  # the start sample, TinyCNN in PyTorch
    at.button(key="export_defaults").click().run()
    assert not at.exception
    plan = at.session_state[PLAN_KEY]
    assert plan.model.format == "sample" and plan.steps == ("model", "export", "partition")
    assert plan.export is not None and plan.export.exporter == "dynamo"
    assert plan.export.input_shapes == {"input": [1, 3, 112, 112]}
    assert plan.export.dynamic_axes == {"input": {"0": "batch"}}
    assert plan.inputs[0].shape == [1, 3, 112, 112]
