"""The model card and the sidebar summary of the current model."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.model import ModelRecord, TensorSpec, format_shape
from core.model.dims import generated_name
from core.model.metadata import ModelMetadata
from ui.text import escaped_frame, human_bytes, md_escape

__all__ = ["model_card", "sidebar_model", "signature_frame", "signature_tables"]

_FORMAT_HELP = {
    "onnx": "A protobuf ModelProto: a graph of standard operators with its weights. Runs in ONNX Runtime.",
    "sample": "A PyTorch module built by this app's own code, with fixed (seeded) weights.",
    "state_dict": "PyTorch weights only (parameter name → tensor), loaded into a matching sample architecture.",
    "safetensors": "Weights only, in a format that cannot carry code, loaded into a matching sample architecture.",
    "torchscript": "A compiled PyTorch program (code and weights), opened only inside the isolated worker.",
    "pt2": "A torch.export program (graph and weights), opened only inside the isolated worker.",
    "code": "Your model's own Python class, built with your arguments and loaded with your weights, only inside the "
    "isolated worker (again in every later job).",
}


_FULL_SHAPE = 20_000  # characters of a full shape under the table (a hostile file may write megabytes)
_SHOWN_DIM = 24  # characters of one symbolic dim in the tables; shape inference writes whole formulas


def _breakable(shape: str) -> str:
    """A long shape (converters name dims like "p2o.DynamicDimension.0") may wrap after each ×."""
    return shape.replace("×", "×\u200b") if len(shape) > 24 else shape


def _short_dim(dim: int | str) -> str:
    text = str(dim)
    return text if len(text) <= _SHOWN_DIM else f"{text[: _SHOWN_DIM - 1]}…"


def _shown_shape(shape: list[int | str] | None) -> str:
    """The shape with every long symbolic dim cut to its start (the full one is under the table)."""
    return _breakable(format_shape(None if shape is None else [_short_dim(d) for d in shape]))


def signature_frame(specs: list[TensorSpec]) -> pd.DataFrame:
    """One row per input or output: name, dtype, shape, dynamic axes."""
    return pd.DataFrame(
        {
            "name": [s.name for s in specs],
            "dtype": [s.dtype for s in specs],
            "shape": [_shown_shape(s.shape) for s in specs],
            "dynamic axes": [
                ", ".join(f"{_short_dim(v)} (axis {k})" for k, v in s.dynamic_axes.items()) for s in specs
            ],
        }
    )


def long_shapes(specs: list[TensorSpec]) -> dict[str, str]:
    """Name → full shape of each tensor whose shape the table cuts."""
    return {s.name: format_shape(s.shape) for s in specs if any(len(str(d)) > _SHOWN_DIM for d in s.shape or [])}


def dim_name_notes(specs: list[TensorSpec]) -> dict[str, str]:
    """Each dim name a tool made up (``unk__30``, ``p2o.DynamicDimension.0``) → what made it."""
    names = dict.fromkeys(str(d) for s in specs for d in s.shape or [] if isinstance(d, str))
    return {name: note for name in names if (note := generated_name(name))}


def signature_tables(inputs: list[TensorSpec], outputs: list[TensorSpec]) -> None:
    """Inputs and outputs side by side; under them, what generated dim names mean and the shapes cut short."""
    left, right = st.columns(2)
    for column, title, specs in ((left, "Inputs", inputs), (right, "Outputs", outputs)):
        with column:
            st.markdown(f"**{title}**")
            st.table(escaped_frame(signature_frame(specs)), hide_index=True)
    for name, note in dim_name_notes(inputs + outputs).items():
        st.caption(f"**{md_escape(_short_dim(name))}**: {md_escape(note)}.")
    cut = long_shapes(inputs + outputs)
    if cut:
        with st.expander(f"Full shapes ({len(cut)} cut short above)"):
            for name, shape in cut.items():
                st.markdown(f"**{md_escape(name, 200)}**")
                shown = shape if len(shape) <= _FULL_SHAPE else f"{shape[:_FULL_SHAPE]}… ({len(shape):,} characters)"
                st.code(shown, language=None, wrap_lines=True)  # a code block shows text as text


_SHOWN_CHARS = 160  # of one metadata value in the table
_SHOWN_CLASSES = 12


def _about(meta: ModelMetadata) -> list[str]:
    """What the metadata says, one sentence each (escaped: every word of it comes from the file)."""
    lines = []
    if meta.exporter:
        made = []
        if meta.task:
            made.append(f"a {md_escape(meta.task, 20)} model")
        if meta.image_size:
            made.append(f"made for {meta.image_size[0]}×{meta.image_size[1]} images (`imgsz`)")
        if meta.stride:
            made.append(f"stride {meta.stride}")
        if meta.batch:
            made.append(f"exported at batch {meta.batch}")
        by = "Looks like" if meta.exporter.startswith(("a ", "an ")) else "Written by"  # a guess from its entries
        lines.append(f"{by} {md_escape(meta.exporter, 80)}" + (": " + ", ".join(made) if made else "") + ".")
    if meta.class_count:
        first = ", ".join(md_escape(repr(c)[1:-1] or " ", 40) for c in meta.classes[:_SHOWN_CLASSES])
        more = f", … ({meta.class_count - _SHOWN_CLASSES:,} more)" if meta.class_count > _SHOWN_CLASSES else ""
        what = "characters it reads" if meta.text_line else "class names"
        lines.append(f"{meta.class_count:,} {what} (`{meta.classes_key}`): {first}{more}.")
    if meta.image_size:
        lines.append(
            f"The input plan runs it at {meta.image_size[0]}×{meta.image_size[1]} wherever its image's height or "
            "width is open (Benchmark, Profile and Quantize say so beside each dim)."
        )
    elif meta.text_line:
        lines.append("The input plan runs it on a line of text (48 high, 320 wide wherever those are open).")
    return lines


def _metadata_section(record: ModelRecord) -> None:
    """Who produced the model and what its exporter wrote into it (metadata_props), escaped and cut short."""
    meta = record.metadata
    if not (meta.entries or meta.producer):
        return
    st.markdown("**What the exporter wrote into the model**")
    lines = _about(meta)
    if meta.producer:
        lines.insert(0, f"Produced by {md_escape(meta.producer, 120)}.")
    st.markdown("\n".join(f"- {line}" for line in lines))
    if meta.entries:
        values = [
            v[:_SHOWN_CHARS] + (f"… ({meta.lengths.get(k, len(v)):,} characters)" if len(v) > _SHOWN_CHARS else "")
            for k, v in meta.entries.items()
        ]
        more = f", {meta.dropped:,} more not kept" if meta.dropped else ""
        with st.expander(f"Metadata entries ({len(meta.entries)}{more})"):
            st.table(escaped_frame(pd.DataFrame({"key": list(meta.entries), "value": values})), hide_index=True)


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
        _metadata_section(record)
        if record.architecture_matches:
            against = "your class" if record.code is not None else "every sample"
            with st.expander(f"Architecture check: the file's keys and shapes against {against}"):
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
