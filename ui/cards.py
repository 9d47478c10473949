"""The model card and the sidebar summary of the current model."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.i18n import N_, _, ngettext, number, pgettext
from core.model import ModelRecord, TensorSpec, format_shape
from core.model.dims import what_made
from core.model.metadata import ModelMetadata
from core.notes import say
from ui.text import human_bytes, md_escape, md_table

__all__ = ["family_frame", "figures_frame", "model_card", "sidebar_model", "signature_frame", "signature_tables"]

_FORMAT_HELP = {  # translated where shown
    "onnx": N_("A protobuf ModelProto: a graph of standard operators with its weights. Runs in ONNX Runtime."),
    "sample": N_("A PyTorch module built by this app's own code, with fixed (seeded) weights."),
    "state_dict": N_("PyTorch weights only (parameter name → tensor), loaded into a matching sample architecture."),
    "safetensors": N_("Weights only, in a format that cannot carry code, loaded into a matching sample architecture."),
    "torchscript": N_("A compiled PyTorch program (code and weights), opened only inside the isolated worker."),
    "pt2": N_("A torch.export program (graph and weights), opened only inside the isolated worker."),
    "code": N_(
        "Your model's own Python class, built with your arguments and loaded with your weights, only inside the "
        "isolated worker (again in every later job)."
    ),
    "hf": N_(
        "A causal language model that transformers builds from its config.json and weights, offline, only inside "
        "the isolated worker; none of the folder's own code runs. It takes its past and gives its present as flat "
        "tensors, as its ONNX export does."
    ),
}


_FULL_SHAPE = 20_000  # characters of a full shape under the table (a hostile file may write megabytes)
_SHOWN_DIM = 24  # characters of one symbolic dim in the tables; shape inference writes whole formulas
_SHOWN_NAMES = 6  # made-up dim names named in one caption


def _breakable(shape: str) -> str:
    """A long shape (converters name dims like "p2o.DynamicDimension.0") may wrap after each ×."""
    return shape.replace("×", "×\u200b") if len(shape) > 24 else shape


def _short_dim(dim: int | str) -> str:
    text = str(dim)
    return text if len(text) <= _SHOWN_DIM else f"{text[: _SHOWN_DIM - 1]}…"


def _shown_shape(shape: list[int | str] | None) -> str:
    """The shape with every long symbolic dim cut to its start (the full one is under the table)."""
    if shape is None:
        return _("unknown")  # the rank is not known
    return _breakable(format_shape([_short_dim(d) for d in shape])) if shape else _("scalar")


def signature_frame(specs: list[TensorSpec]) -> pd.DataFrame:
    """One row per input or output: name, dtype, shape, dynamic axes (headers in the reader's language)."""
    axis = _("{name} (axis {index})")
    return pd.DataFrame(
        {
            _("name"): [s.name for s in specs],
            "dtype": [s.dtype for s in specs],
            _("shape"): [_shown_shape(s.shape) for s in specs],
            _("dynamic axes"): [
                pgettext("list", ", ").join(axis.format(name=_short_dim(v), index=k) for k, v in s.dynamic_axes.items())
                for s in specs
            ],
        }
    )


def long_shapes(specs: list[TensorSpec]) -> dict[str, str]:
    """Name → full shape of each tensor whose shape the table cuts."""
    return {s.name: format_shape(s.shape) for s in specs if any(len(str(d)) > _SHOWN_DIM for d in s.shape or [])}


def dim_name_notes(specs: list[TensorSpec]) -> dict[str, str]:
    """Each dim name a tool made up (``unk__30``, ``p2o.DynamicDimension.0``) → what made it."""
    names = dict.fromkeys(str(d) for s in specs for d in s.shape or [] if isinstance(d, str))
    return {name: said for name in names if (said := made_note(name))}


def made_note(symbol: str) -> str:
    """What made up a dim's name, when a tool did, and that such a name says nothing about the size; "" for a
    name a person chose (``batch``)."""
    made = what_made(symbol)
    return _("{what}: it says nothing about the size").format(what=_(made)) if made else ""


def dim_name_captions(specs: list[TensorSpec]) -> list[str]:
    """One line (Markdown, escaped) per tool that made up dim names: the names, then what made them
    (``DynamicDimension.0``, ``.1`` and ``.2`` of one paddle2onnx export are one line, not three alike)."""
    by_note: dict[str, list[str]] = {}
    for name, note in dim_name_notes(specs).items():
        by_note.setdefault(note, []).append(name)
    lines = []
    for note, names in by_note.items():
        shown = ", ".join(f"**{md_escape(_short_dim(n))}**" for n in names[:_SHOWN_NAMES])
        more = (
            _(", … ({count} more)").format(count=number(len(names) - _SHOWN_NAMES)) if len(names) > _SHOWN_NAMES else ""
        )
        lines.append(f"{shown}{more}: {md_escape(note)}.")
    return lines


def signature_tables(inputs: list[TensorSpec], outputs: list[TensorSpec]) -> None:
    """Inputs and outputs side by side; under them, what generated dim names mean and the shapes cut short."""
    frames = [(_("Inputs"), signature_frame(inputs)), (_("Outputs"), signature_frame(outputs))]
    # side by side unless a cell holds a long unbroken run of characters (paddle2onnx's dim names): half the page
    # cannot wrap "p2o.DynamicDimension.3 (axis 0)", and the table's last column was cut off at its edge
    longest = max((len(word) for _t, f in frames for v in f.to_numpy().ravel() for word in str(v).split()), default=0)
    places = st.columns(2) if longest <= _SIDE_BY_SIDE_WORD else [st.container(), st.container()]
    for place, (title, frame) in zip(places, frames, strict=True):
        with place:
            st.markdown(f"**{title}**")
            st.markdown(md_table(frame))
    for caption in dim_name_captions(inputs + outputs):
        st.caption(caption)
    cut = long_shapes(inputs + outputs)
    if cut:
        with st.expander(_("Full shapes ({count} cut short above)").format(count=number(len(cut)))):
            for name, shape in cut.items():
                st.markdown(f"**{md_escape(name, 200)}**")
                more = _("{count} characters").format(count=number(len(shape)))
                shown = shape if len(shape) <= _FULL_SHAPE else f"{shape[:_FULL_SHAPE]}… ({more})"
                st.code(shown, language=None, wrap_lines=True)  # a code block shows text as text


_HEX = frozenset("0123456789abcdef")
_SIDE_BY_SIDE_WORD = 16  # characters: longer unbroken words put the inputs and outputs one under the other
_SHOWN_CHARS = 160  # of one metadata value in the table
_SHOWN_CLASSES = 12


def _about(meta: ModelMetadata) -> list[str]:
    """What the metadata says, one sentence each (escaped: every word of it comes from the file)."""
    lines = []
    if meta.exporter:
        made = []
        if meta.task:
            made.append(_("a {task} model").format(task=md_escape(meta.task, 20)))
        if meta.image_size:
            made.append(
                _("made for {width}×{height} images (`imgsz`)").format(
                    width=meta.image_size[0], height=meta.image_size[1]
                )
            )
        if meta.stride:
            made.append(_("stride {stride}").format(stride=meta.stride))
        if meta.batch:
            made.append(_("exported at batch {batch}").format(batch=meta.batch))
        # a guess from its entries ("an Ultralytics export"), or what wrote them
        by = _("Looks like {exporter}") if meta.exporter.startswith(("a ", "an ")) else _("Written by {exporter}")
        who = by.format(exporter=md_escape(_(meta.exporter), 80))
        details = pgettext("list", ", ").join(made)
        lines.append((_("{who}: {details}.") if made else _("{who}.")).format(who=who, details=details))
    if meta.class_count:
        first = pgettext("list", ", ").join(md_escape(repr(c)[1:-1] or " ", 40) for c in meta.classes[:_SHOWN_CLASSES])
        rest = meta.class_count - _SHOWN_CLASSES
        more = _(", … ({count} more)").format(count=number(rest)) if rest > 0 else ""
        what = (
            ngettext("{count} character it reads", "{count} characters it reads", meta.class_count)
            if meta.text_line
            else ngettext("{count} class name", "{count} class names", meta.class_count)
        )
        named = what.format(count=number(meta.class_count))
        lines.append(_("{what} (`{key}`): {names}.").format(what=named, key=meta.classes_key, names=first + more))
    if meta.image_size:
        lines.append(
            _(
                "The input plan runs it at {width}×{height} wherever its image's height or width is open (Benchmark, "
                "Profile and Quantize say so beside each dim)."
            ).format(width=meta.image_size[0], height=meta.image_size[1])
        )
    elif meta.text_line:
        lines.append(_("The input plan runs it on a line of text (48 high, 320 wide wherever those are open)."))
    return lines


def _metadata_section(record: ModelRecord) -> None:
    """Who produced the model and what its exporter wrote into it (metadata_props), escaped and cut short."""
    meta = record.metadata
    if not (meta.entries or meta.producer):
        return
    st.markdown("**" + _("What the exporter wrote into the model") + "**")
    lines = _about(meta)
    if meta.producer:
        lines.insert(0, _("Produced by {producer}.").format(producer=md_escape(_(meta.producer), 120)))
    st.markdown("\n".join(f"- {line}" for line in lines))
    if meta.entries:
        length = _("{count} characters")
        values = [
            v[:_SHOWN_CHARS]
            + (f"… ({length.format(count=number(meta.lengths.get(k, len(v))))})" if len(v) > _SHOWN_CHARS else "")
            for k, v in meta.entries.items()
        ]
        title = (
            _("Metadata entries ({count}, {dropped} more not kept)")
            if meta.dropped
            else _("Metadata entries ({count})")
        ).format(count=number(len(meta.entries)), dropped=number(meta.dropped))
        with st.expander(title):
            frame = pd.DataFrame({_("key"): list(meta.entries), _("value"): values})
            st.markdown(md_table(frame))


def figures_frame(record: ModelRecord) -> pd.DataFrame:
    """The card's four figures, one column each (size, parameters, opset, nodes): one row."""
    unknown = "—"
    return pd.DataFrame(
        {
            _("Size"): [human_bytes(record.size_bytes)],
            _("Parameters"): [number(record.parameter_count) if record.parameter_count is not None else unknown],
            _("Opset"): [str(record.opset) if record.opset is not None else unknown],
            _("Nodes"): [number(record.node_count) if record.node_count is not None else unknown],
        }
    )


def model_card(record: ModelRecord) -> None:
    with st.container(border=True):
        st.subheader(md_escape(record.name, 120), anchor=False)
        help_text = _(_FORMAT_HELP[record.format]) if record.format in _FORMAT_HELP else ""
        st.caption(_("{format}. {help}").format(format=_(record.format_label), help=help_text))
        st.markdown(md_table(figures_frame(record)))  # Markdown: st.metric and st.table load frontend code first
        signature_tables(record.inputs, record.outputs)
        st.caption(_("sha256 of the model's bytes (its identity in the history and the caches)"))
        # inline code, not st.code: a code block makes the browser load Streamlit's syntax highlighter (1.5 MB of
        # JavaScript, half a second of a new visitor's first page) to show 64 hex digits
        st.markdown(f"`{''.join(c for c in record.id if c in _HEX)}`")
        details: dict[str, str] = {}
        if record.ir_version is not None:
            details["ir_version"] = str(record.ir_version)
        if record.producer:
            details["producer"] = record.producer
        if record.architecture:
            details[_("architecture")] = record.architecture
        if record.external_data:
            details[_("external data")] = ", ".join(record.external_data)
        if details:
            frame = pd.DataFrame({_("field"): list(details), _("value"): list(details.values())})
            st.markdown(md_table(frame))
        for note in record.notes:  # kept as data; said here in the reader's language (core.notes)
            st.markdown(f"- {md_escape(say(note), 400)}")
        if record.family:
            _family_section(record)
        _metadata_section(record)
        if record.architecture_matches:
            title = (
                _("Architecture check: the file's keys and shapes against your class")
                if record.code is not None
                else _("Architecture check: the file's keys and shapes against every sample")
            )
            with st.expander(title):
                matches = record.architecture_matches
                frame = pd.DataFrame(
                    {
                        _("architecture"): [m.architecture for m in matches],
                        _("matches"): [_("yes") if m.matches else _("no") for m in matches],
                        _("missing keys"): [len(m.missing_keys) for m in matches],
                        _("unexpected keys"): [len(m.unexpected_keys) for m in matches],
                        _("wrong shapes"): [len(m.shape_mismatches) for m in matches],
                    }
                )
                st.markdown(md_table(frame))


def family_frame(record: ModelRecord) -> pd.DataFrame:
    """A Hugging Face folder's ONNX files, one row each: its variant (transformers.js's dtype name), its path in the
    folder, its size with its external data, and whether it is the current model."""
    return pd.DataFrame(
        {
            _("variant"): [m.variant if m.component == record.family[0].component else m.key for m in record.family],
            _("file"): [m.file for m in record.family],
            _("size"): [human_bytes(m.size_bytes) for m in record.family],
            _("external data"): [", ".join(m.data_files) or "—" for m in record.family],
            _("current"): ["●" if m.path == record.path else "" for m in record.family],
        }
    )


def _family_section(record: ModelRecord) -> None:
    """The folder's ONNX files: one model in several precisions."""
    st.markdown("**" + _("ONNX files of this folder: one model in {count} precisions").format(
        count=number(len(record.family))
    ) + "**")  # fmt: skip
    st.markdown(md_table(family_frame(record)))


def sidebar_model(record: ModelRecord | None) -> None:
    st.sidebar.markdown("**" + _("Current model") + "**")
    if record is None:
        st.sidebar.caption(_("None yet: upload one or pick a sample on the Model page."))
        return
    parts = [_(record.format_label), human_bytes(record.size_bytes)]
    if record.opset is not None:
        parts.append(_("opset {version}").format(version=record.opset))
    st.sidebar.markdown(f"**{md_escape(record.name, 60)}**")
    st.sidebar.caption(" · ".join(parts))
