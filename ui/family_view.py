"""A Hugging Face folder's ONNX files on the Model page: one model in several precisions (model.onnx,
model_fp16.onnx, model_q4.onnx, ...), each one click from Benchmark's generate panel and from Compare. The file is
read by the worker with its folder (core.model.hf_folder), and becomes the current model; the folder's PyTorch model,
when it has one, stays at hand as the eager side."""

from __future__ import annotations

import streamlit as st

from core.errors import WorkbenchError
from core.i18n import _
from core.jobs import INTAKE
from core.model.intake import IntakeRequest
from core.model.records import FamilyMember, ModelRecord
from ui import jobs, pages, session
from ui.jobs import show_error
from ui.text import human_bytes, md_escape

__all__ = ["family_actions", "open_first"]


def _opened(record: ModelRecord, member: FamilyMember) -> ModelRecord:
    """``member`` read with its folder (its family beside it), by the worker."""
    request = IntakeRequest(paths=[record.folder], variant=member.file)
    return jobs.run(INTAKE, request, _("Reading {file}").format(file=member.file))


def _original(record: ModelRecord) -> ModelRecord | None:
    """The folder's PyTorch model: the record itself, or the one kept beside the current ONNX file of the folder."""
    if record.format == "hf":
        return record
    kept = session.torch_model()
    return kept if kept is not None and kept.format == "hf" and kept.folder == record.folder else None


def _open(record: ModelRecord, member: FamilyMember, step: str, **state: str) -> None:
    """Make ``member`` the current model and open page ``step`` (``state``: that page's widgets, set first)."""
    try:
        opened = _opened(record, member)
    except WorkbenchError as exc:
        show_error(exc)
        return
    session.set_current_model(opened, exported_from=_original(record), rerun=False)
    st.session_state.update(state)
    st.switch_page(pages.page(step).path)


def _baseline(record: ModelRecord, member: FamilyMember) -> FamilyMember | None:
    """What a variant is compared with: the folder's first file of the same component (its fp32 one), else none."""
    return next((m for m in record.family if m.component == member.component and m.key != member.key), None)


def family_actions(record: ModelRecord) -> None:
    """One row per ONNX file of the folder: generate from it, or compare it with the folder's first file."""
    if not record.family:
        return
    st.markdown(
        _(
            "Each ONNX file of the folder is the same model at another precision. Open one to generate from it "
            "(Benchmark, token by token), or to compare it with the folder's first file, tensor by tensor."
        )
    )
    for member in record.family:
        name, size, generate, compare = st.columns([2, 1, 1, 1], vertical_alignment="center")
        name.markdown(f"**{md_escape(member.variant, 40)}** {md_escape(member.file, 200)}")  # escapes show in `code`
        size.caption(human_bytes(member.size_bytes))
        if generate.button(_("Generate"), key=f"family_generate_{member.key}", icon=":material/speed:"):
            _open(record, member, "benchmark")
        baseline = _baseline(record, member)
        label = _("Compare with {variant}").format(variant=baseline.variant) if baseline else _("Compare")
        if compare.button(label, key=f"family_compare_{member.key}", disabled=baseline is None):
            assert baseline is not None
            _open(record, baseline, "compare", compare_against="family", compare_member=member.key)


def open_first(record: ModelRecord, step: str) -> None:
    """For page ``step``, which needs an ONNX model: a button that makes the folder's first ONNX file the current
    model and opens ``step`` again (rather than export what the folder holds exported already)."""
    member = record.family[0]
    label = _("Open the folder's ONNX file ({variant}: {file})").format(variant=member.variant, file=member.file)
    if st.button(label, type="primary", key="family_open_first", icon=":material/folder_open:"):
        _open(record, member, step)
