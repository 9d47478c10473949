"""What a page needs before it can start: an ONNX model. A PyTorch model can be exported on the spot with the
Export page's default settings, so a first answer is one click away."""

from __future__ import annotations

from typing import Literal

import streamlit as st

from core.errors import WorkbenchError
from core.export import default_options
from core.i18n import N_, _
from core.model import ModelRecord
from ui import pages, session
from ui.export_view import run_export
from ui.family_view import open_first
from ui.hooks import NEXT_STEP
from ui.jobs import stop_with_error
from ui.notebook_view import notebook_downloads
from ui.text import md_escape
from ui.upgrade_view import upgrade_section

__all__ = ["next_steps", "offered", "require_onnx", "require_pytorch"]


def next_steps(*steps: str) -> None:
    """Where to go from here: the end of every page."""
    st.divider()
    st.markdown("**" + _("Next") + "**")  # the links are the table's words, translated (ui/pages.py)
    # one under the other: side by side, a link's words were cut off at its column's edge
    drawn = [step for step in steps if pages.link(step)]  # a workshop's room may keep some shut
    notebook_downloads()  # this page's step as a notebook, and the whole walk-through (ui/notebook_view.py)
    if drawn:
        offered(drawn[0])


def offered(step: str) -> None:
    """``step`` is the one a person most likely opens next (its link drawn first): its view may start its job now
    (ui.hooks.NEXT_STEP), where the settings allow it."""
    if session.settings().start_ahead:
        for hook in NEXT_STEP:
            hook(step)


def _export_defaults(record: ModelRecord) -> None:
    try:
        options = default_options(record)
    except WorkbenchError as exc:
        stop_with_error(exc)
    report = run_export(record, options, _("Exporting “{name}” with the default settings").format(name=record.name))
    if report.record is None or not report.usable:
        st.error(_("The export did not pass its checks; open the Export page to see why and to change the settings."))


def require_pytorch(step: str) -> ModelRecord:
    """The PyTorch model of this session (the current one, or the one it was exported from); otherwise explain,
    offer the way there, and stop page ``step``."""
    source = session.torch_model()
    if source is not None:
        return source
    st.info(
        _(
            "{doing} needs a PyTorch model, and the current model is ONNX already. Pick a sample or upload a "
            "state_dict, TorchScript or .pt2 file on the Model page."
        ).format(doing=_(pages.page(step).doing))
    )
    pages.link("model", _("Go to the Model page"))
    st.stop()
    raise AssertionError  # st.stop() does not return


# what each page does to the model, as ui/pages.py's ``doing`` says it: marked here for the catalog, translated where
# "… needs an ONNX model" is said
_DOING: tuple[str, ...] = (
    N_("Export"),
    N_("Decoding"),
    N_("Partitioning"),
    N_("Benchmarking"),
    N_("Profiling"),
    N_("Quantizing"),
    N_("Comparing"),
    N_("Tuning"),
)


def require_onnx(step: str) -> ModelRecord:
    """The current model if it is ONNX; otherwise explain, offer the way there, and stop page ``step``."""
    what = _(pages.page(step).doing)
    record = session.current_model()
    if record is not None and record.format == "onnx":
        upgrade_section(record)  # an upgrade asked for on the last run, or the note that this is one
        return record
    if record is None:
        st.info(_("{doing} needs an ONNX model, and there is none yet.").format(doing=what))
        pages.link("model", _("Upload a model or pick a sample"))
        st.stop()
    assert record is not None
    if record.is_pytorch:
        st.info(
            _(
                "{doing} needs an ONNX model; the current model, **{name}**, is a {format}. Export it with the "
                "default settings here (opset, shapes and dynamic axes taken from the model), or choose them "
                "yourself on the Export page."
            ).format(doing=what, name=md_escape(record.name), format=_(record.format_label))
        )
        if record.family:  # a Hugging Face folder with its onnx/ files: no export needed
            open_first(record, step)
        left, right = st.columns([1, 2])
        kind: Literal["primary", "secondary"] = "secondary" if record.family else "primary"
        if left.button(_("Export with the defaults and continue"), type=kind, key="export_defaults"):
            _export_defaults(record)
        with right:
            pages.link("export", _("Choose the export settings"))
    else:
        st.info(
            _("{doing} needs an ONNX model; the current model is a {format}.").format(
                doing=what, format=_(record.format_label)
            )
        )
        pages.link("model", _("Upload an ONNX model"))
    st.stop()
    raise AssertionError  # st.stop() does not return
