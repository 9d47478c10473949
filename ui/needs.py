"""What a page needs before it can start: an ONNX model. A PyTorch model can be exported on the spot with the
Export page's default settings, so a first answer is one click away."""

from __future__ import annotations

import streamlit as st

from core.errors import WorkbenchError
from core.export import default_options
from core.model import ModelRecord
from ui import session
from ui.export_view import run_export
from ui.jobs import stop_with_error
from ui.text import md_escape

__all__ = ["next_steps", "require_onnx"]

# step -> (page, what the link says, icon): the walk-through's order, as the sidebar shows it
STEPS = {
    "model": ("app_pages/model.py", "Model: see its card, or open another", ":material/deployed_code:"),
    "export": ("app_pages/export.py", "Export: choose the opset, shapes and dynamic axes", ":material/output:"),
    "decode": (
        "app_pages/decode.py",
        "Decode: the protobuf from the first bytes to the graph",
        ":material/data_object:",
    ),
    "partition": ("app_pages/partition.py", "Partition: which provider runs each node", ":material/account_tree:"),
    "benchmark": ("app_pages/benchmark.py", "Benchmark: PyTorch eager against ONNX Runtime", ":material/speed:"),
    "profile": ("app_pages/profile.py", "Profile: where the time goes, node by node", ":material/timer:"),
    "quantize": (
        "app_pages/quantize.py",
        "Quantize: INT8 and FP16 variants, size against accuracy",
        ":material/compress:",
    ),
    "history": ("app_pages/history.py", "History: compare this run with earlier ones", ":material/history:"),
    "dashboard": (
        "app_pages/dashboard.py",
        "Dashboard: the team's latest results and regressions",
        ":material/dashboard:",
    ),
}


def next_steps(*steps: str) -> None:
    """Where to go from here: the end of every page."""
    st.divider()
    st.markdown("**Next**")
    columns = st.columns(len(steps))
    for column, step in zip(columns, steps, strict=True):
        page, label, icon = STEPS[step]
        with column:
            st.page_link(page, label=label, icon=icon)


def _export_defaults(record: ModelRecord) -> None:
    try:
        options = default_options(record)
    except WorkbenchError as exc:
        stop_with_error(exc)
    report = run_export(record, options, f"Exporting '{record.name}' with the default settings")
    if report.record is None or not report.ok:
        st.error("The export did not pass its checks; open the Export page to see why and to change the settings.")


def require_onnx(what: str) -> ModelRecord:
    """The current model if it is ONNX; otherwise explain, offer the way there, and stop the page."""
    record = session.current_model()
    if record is not None and record.format == "onnx":
        return record
    if record is None:
        st.info(f"{what} needs an ONNX model, and there is none yet.")
        st.page_link("app_pages/model.py", label="Upload a model or pick a sample", icon=":material/deployed_code:")
        st.stop()
    assert record is not None
    if record.is_pytorch:
        st.info(
            f"{what} needs an ONNX model; the current model, **{md_escape(record.name)}**, is a "
            f"{record.format_label}. Export it with the default settings here (opset, shapes and dynamic axes "
            "taken from the model), or choose them yourself on the Export page."
        )
        left, right = st.columns([1, 2])
        if left.button("Export with the defaults and continue", type="primary", key="export_defaults"):
            _export_defaults(record)
        with right:
            st.page_link("app_pages/export.py", label="Choose the export settings", icon=":material/output:")
    else:
        st.info(f"{what} needs an ONNX model; the current model is a {record.format_label}.")
        st.page_link("app_pages/model.py", label="Upload an ONNX model", icon=":material/deployed_code:")
    st.stop()
    raise AssertionError  # st.stop() does not return
