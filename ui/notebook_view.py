"""The notebook downloads at the end of every page: this page's step for the current model as an .ipynb, and the
whole walk-through zipped with the model's files (a job: it reads them)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from core.errors import WorkbenchError
from core.i18n import _, language
from core.jobs import NOTEBOOK
from core.model import ModelRecord
from core.model.export_options import ExportOptions
from core.notebook import (
    STEPS,
    NotebookPlan,
    NotebookRequest,
    default_export,
    model_files,
    notebook_bytes,
    plan_steps,
    start_inputs,
)
from core.workspace import open_within
from ui import jobs, pages, session
from ui.export_view import kept_report
from ui.plan_view import input_plan, plan_ready

__all__ = ["PLAN_KEY", "current_step", "notebook_downloads", "walk_plan"]

PLAN_KEY = "notebook_plan"  # the plan of this page's notebook, as last offered (tests read it)
_ZIP_KEY = "notebook_zip"  # (model id, language) -> the zip's bytes, once made


def current_step() -> str:
    """The step of the page this run shows ("" when it cannot be told)."""
    ctx = get_script_run_ctx()
    if ctx is None:
        return ""
    found: dict[str, object] = dict(ctx.pages_manager.get_pages().get(ctx.page_script_hash, {}))
    script = Path(str(found.get("script_path", ""))).name
    return next((row.step for row in pages.PAGES if Path(row.path).name == script), "")


def _export_choice(torch_record: ModelRecord, exported: ModelRecord | None) -> ExportOptions:
    """The export as the Export page made it in this session (exporter and opset from its report; the input and
    output names and the dynamic axes as the exported model has them, at the input plan's sizes), else its
    defaults."""
    choice = default_export(torch_record)
    report = kept_report(torch_record)
    if report is not None:
        choice = dataclasses.replace(choice, exporter=report.exporter, opset=report.opset_requested)
    if exported is None or exported.format != "onnx" or len(exported.inputs) != len(choice.input_shapes):
        return choice
    dtypes = list(choice.input_dtypes.values())
    return dataclasses.replace(
        choice,
        input_shapes={
            s.name: [d if isinstance(d, int) and d > 0 else 1 for d in s.shape or []] for s in exported.inputs
        },
        input_dtypes={s.name: dtypes[i] if i < len(dtypes) else s.dtype for i, s in enumerate(exported.inputs)},
        dynamic_axes={
            s.name: {str(a): d for a, d in enumerate(s.shape or []) if isinstance(d, str) and d}
            for s in exported.inputs
            if any(isinstance(d, str) and d for d in s.shape or [])
        },
        output_names=[s.name for s in exported.outputs],
    )


def walk_plan(steps: tuple[str, ...]) -> NotebookPlan | None:
    """The notebook of ``steps`` for this session's model: from its PyTorch original when it has one (exported
    as the Export page did), on the input plan every page runs it on."""
    record = session.current_model()
    if record is None:
        return None
    torch_record = session.torch_model()
    start = torch_record if torch_record is not None else record
    # the plan every page runs the ONNX model on; before an export, the PyTorch model's own examples
    inputs = input_plan(record, torch_record) if record.format == "onnx" else start_inputs(start)
    if not plan_ready(inputs):
        return None  # a size nothing gives: the page's plan asks for it first
    return NotebookPlan(
        model=start,
        inputs=inputs,
        export=_export_choice(start, record if torch_record is not None else None) if start.is_pytorch else None,
        steps=plan_steps(start, steps),
        language=language(),
    )


def _zip(plan: NotebookPlan) -> None:
    record = plan.model
    key = (record.id, plan.language)
    made = st.session_state.get(_ZIP_KEY)
    if made is None or made[0] != key:
        if not st.button(_("Prepare the whole walk-through (notebook + model, .zip)"), key="notebook_zip_make"):
            return
        request = NotebookRequest(plan=plan, files=model_files(record, plan.inputs), out_dir="", name="walk-through")
        result = jobs.run(NOTEBOOK, request, _("Zipping the notebook with the model's files"), model=record.id)
        with open_within(result.path, session.workspace().path) as f:
            made = (key, f.read())
        st.session_state[_ZIP_KEY] = made
    st.download_button(
        _("Download the whole walk-through (notebook + model, .zip)"),
        made[1],
        file_name="walk-through.zip",
        mime="application/zip",
        key="notebook_zip_download",
        on_click="ignore",
    )


def notebook_downloads() -> None:
    """This page's step as a notebook, and the whole walk-through as a zip (nothing without a model)."""
    step = current_step()
    try:
        page_plan = walk_plan((step,)) if step in STEPS else None
        # the whole walk-through differs from this page's plan only in its steps: built once, not twice a run
        whole = (
            dataclasses.replace(page_plan, steps=plan_steps(page_plan.model, tuple(STEPS)))
            if page_plan is not None
            else walk_plan(tuple(STEPS))
        )
    except WorkbenchError:
        return  # a plan with an open size: its page says so; a notebook waits until it runs
    if whole is None:
        return
    left, right = st.columns(2)
    if page_plan is not None:
        st.session_state[PLAN_KEY] = page_plan
        left.download_button(
            _("Download as notebook"),
            lambda: notebook_bytes(page_plan),
            file_name=f"{step}.ipynb",
            mime="application/x-ipynb+json",
            help=_("An .ipynb that redoes this page on your model with torch, onnx and onnxruntime only."),
            key="notebook_page_download",
            on_click="ignore",
        )
    with right:
        _zip(whole)
