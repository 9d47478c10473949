"""The model card and the sidebar summary of the current model."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.model import ModelRecord, TensorSpec, format_shape
from ui.text import escaped_frame, human_bytes, md_escape

__all__ = ["model_card", "sidebar_model", "signature_frame", "signature_tables"]

_FORMAT_HELP = {
    "onnx": "A protobuf ModelProto: a graph of standard operators with its weights. Runs in ONNX Runtime.",
    "sample": "A PyTorch module built by this app's own code, with fixed (seeded) weights.",
    "state_dict": "PyTorch weights only (parameter name → tensor), loaded into a matching sample architecture.",
    "safetensors": "Weights only, in a format that cannot carry code, loaded into a matching sample architecture.",
    "torchscript": "A compiled PyTorch program (code and weights), opened only inside the isolated worker.",
    "pt2": "A torch.export program (graph and weights), opened only inside the isolated worker.",
}


def _breakable(shape: str) -> str:
    """A long shape (converters name dims like "p2o.DynamicDimension.0") may wrap after each ×."""
    return shape.replace("×", "×\u200b") if len(shape) > 24 else shape


def signature_frame(specs: list[TensorSpec]) -> pd.DataFrame:
    """One row per input or output: name, dtype, shape, dynamic axes."""
    return pd.DataFrame(
        {
            "name": [s.name for s in specs],
            "dtype": [s.dtype for s in specs],
            "shape": [_breakable(format_shape(s.shape)) for s in specs],
            "dynamic axes": [", ".join(f"{v} (axis {k})" for k, v in s.dynamic_axes.items()) for s in specs],
        }
    )


def signature_tables(inputs: list[TensorSpec], outputs: list[TensorSpec]) -> None:
    """Inputs and outputs side by side."""
    left, right = st.columns(2)
    for column, title, specs in ((left, "Inputs", inputs), (right, "Outputs", outputs)):
        with column:
            st.markdown(f"**{title}**")
            st.table(escaped_frame(signature_frame(specs)), hide_index=True)


def model_card(record: ModelRecord) -> None:
    with st.container(border=True):
        st.subheader(md_escape(record.name, 120), anchor=False)
        st.caption(f"{record.format_label}. {_FORMAT_HELP.get(record.format, '')}")
        cols = st.columns(4)
        cols[0].metric("Size", human_bytes(record.size_bytes))
        cols[1].metric("Parameters", f"{record.parameter_count:,}" if record.parameter_count is not None else "—")
        cols[2].metric("Opset", str(record.opset) if record.opset is not None else "—")
        cols[3].metric("Nodes", f"{record.node_count:,}" if record.node_count is not None else "—")
        signature_tables(record.inputs, record.outputs)
        st.caption("sha256 of the model's bytes (its identity in the history and the caches)")
        st.code(record.id, language=None)
        details: dict[str, str] = {}
        if record.ir_version is not None:
            details["ir_version"] = str(record.ir_version)
        if record.producer:
            details["producer"] = record.producer
        if record.architecture:
            details["architecture"] = record.architecture
        if record.external_data:
            details["external data"] = ", ".join(record.external_data)
        if details:
            st.table(
                escaped_frame(pd.DataFrame({"field": list(details), "value": list(details.values())})), hide_index=True
            )
        for note in record.notes:
            st.markdown(f"- {md_escape(note, 400)}")
        if record.architecture_matches:
            with st.expander("Architecture check: the file's keys and shapes against every sample"):
                st.table(
                    escaped_frame(
                        pd.DataFrame(
                            {
                                "architecture": [m.architecture for m in record.architecture_matches],
                                "matches": ["yes" if m.matches else "no" for m in record.architecture_matches],
                                "missing keys": [len(m.missing_keys) for m in record.architecture_matches],
                                "unexpected keys": [len(m.unexpected_keys) for m in record.architecture_matches],
                                "wrong shapes": [len(m.shape_mismatches) for m in record.architecture_matches],
                            }
                        )
                    ),
                    hide_index=True,
                )


def sidebar_model(record: ModelRecord | None) -> None:
    st.sidebar.markdown("**Current model**")
    if record is None:
        st.sidebar.caption("None yet: upload one or pick a sample on the Model page.")
        return
    parts = [record.format_label, human_bytes(record.size_bytes)]
    if record.opset is not None:
        parts.append(f"opset {record.opset}")
    st.sidebar.markdown(f"**{md_escape(record.name, 60)}**")
    st.sidebar.caption(" · ".join(parts))
