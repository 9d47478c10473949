"""Export: the current PyTorch model to ONNX with a chosen exporter, opset and dynamic axes, then verified."""

from __future__ import annotations

import streamlit as st

from core.errors import ExportError, WorkbenchError
from core.export import DEFAULT_OPSET, EXPORTERS, ExportOptions, choose_exporter, default_options, offered_axes
from core.i18n import _, pgettext
from core.model import format_shape
from core.model.inputs import SCALAR_TYPES, scalar_default
from core.model.shapes import parse_dims
from ui import session, tutorial_view
from ui.export_lm_view import lm_export
from ui.export_view import kept_report, run_export, show_report
from ui.needs import next_steps, require_pytorch
from ui.text import md_escape

st.title(_("Export"))
st.markdown(
    _(
        "Export turns a PyTorch module into an ONNX graph. The exporter runs the model on example inputs and "
        "records every operation it performs (torch.export captures the graph; the legacy exporter traces it), "
        "translates each one into standard ONNX operators, and freezes the weights as initializers. Dynamic axes "
        "are the dimensions that may change at run time, such as the batch size; every export here is checked "
        "against PyTorch at the export shape **and** at another size of each dynamic axis."
    )
)

source = require_pytorch("export")
current = session.current_model()
if current is not None and current.id != source.id:
    st.caption(
        _("The current model is the ONNX export of **{name}**; exporting again replaces it.").format(
            name=md_escape(source.name)
        )
    )

try:
    defaults = default_options(source)
except ExportError:
    defaults = ExportOptions(  # no shapes yet (a model's code, TorchScript): the dims its first layer leaves free
        input_shapes={s.name: [] for s in source.inputs}, dynamic_axes=offered_axes(source), exporter="legacy"
    )
forced_exporter, forced_reason = (
    choose_exporter(source.format, "dynamo") if source.format in ("torchscript", "pt2") else (None, "")
)

# Widget defaults go through session state (the "export again" button sets them in a callback, before the
# widgets exist); per-model widgets carry the model's id in their key, so another model starts fresh.
if forced_exporter:
    st.session_state["exporter_choice"] = forced_exporter
st.session_state.setdefault("exporter_choice", "dynamo")
tag = source.id[:12]


# labels made in this run's language (a format_func may be called outside the run, where no language is set)
exporter_labels = {e: _(EXPORTERS[e][2]) for e in EXPORTERS}
left, right = st.columns(2)
exporter = left.radio(
    _("Exporter"),
    list(EXPORTERS),
    format_func=exporter_labels.__getitem__,
    disabled=forced_exporter is not None,
    key="exporter_choice",
)
if forced_reason:
    left.caption(_(forced_reason))
opsets = list(range(25, 8, -1))
opset_labels = {
    v: f"{v}"
    + (_(" (recommended)") if v == DEFAULT_OPSET else "")
    + ("" if v in EXPORTERS["dynamo"][1] else _(" (the dynamo exporter produces 18)"))
    + ("" if v in EXPORTERS["legacy"][0] else _(" (dynamo only)"))
    for v in opsets
}
opset = right.selectbox(
    _("Opset"),
    opsets,
    index=opsets.index(DEFAULT_OPSET),
    format_func=opset_labels.__getitem__,
    key="opset_choice",
)
optimize = right.checkbox(
    _("Fold constants and optimize"),
    value=True,
    key="optimize",
    help=_(
        "Dynamo: torch.onnx's optimizer runs on the graph (optimize=True); legacy: do_constant_folding=True. "
        "Parts of the graph that depend only on weights are computed once at export and stored as weights."
    ),
)
external = right.checkbox(
    _("Weights in a separate .onnx.data file (required past 2 GB)"), value=False, key="external_data"
)
if source.format == "hf":  # a language model: its cache's axes are its own, and generation verifies it
    lm_export(source, exporter or "dynamo", int(opset), optimize, external)
    st.stop()

st.markdown(
    _(
        "**Inputs**: the example shape, and which axes may change at run time. The exported model's input plan "
        "(what Benchmark and Quantize run it on) starts from these sizes and values."
    )
)
problems: list[str] = []
missing: list[str] = []  # inputs whose shape is still empty: a request, not an error
shapes: dict[str, list[int]] = {}
dynamic: dict[str, dict[str, str]] = {}
values: dict[str, float] = {}
for spec in source.inputs:
    if spec.dtype in SCALAR_TYPES:  # a Python int, float or bool argument: a value, not a shape
        shapes[spec.name] = []
        values[spec.name] = float(
            st.number_input(
                _("Value of '{name}' (a Python {dtype})").format(name=md_escape(spec.name), dtype=spec.dtype),
                value=float(defaults.input_values.get(spec.name, scalar_default(spec.name, spec.dtype))),
                key=f"value_{tag}_{spec.name}",
                help=_(
                    "The example value the export and its checks run with. A scripted model keeps the argument "
                    "as a graph input (an If picks the branch at run time); a traced one bakes this value in."
                ),
            )
        )
        continue
    text = st.text_input(
        _("Shape of '{name}' ({dtype})").format(name=md_escape(spec.name), dtype=spec.dtype),
        value=",".join(map(str, defaults.input_shapes.get(spec.name, []))),
        placeholder=_("e.g. 1,3,224,224"),
        key=f"shape_{tag}_{spec.name}",
    )
    if not text.strip():  # nothing typed yet: ask, without an error the user did not cause
        missing.append(spec.name)
        continue
    try:
        shapes[spec.name] = parse_dims(text, _("the shape of '{name}'").format(name=spec.name))
    except WorkbenchError as exc:
        problems.append(str(exc))
        continue
    cols = st.columns(min(len(shapes[spec.name]), 6))
    for axis in range(len(shapes[spec.name])):
        col = cols[axis % len(cols)]
        label_default = defaults.dynamic_axes.get(spec.name, {}).get(str(axis), "")
        ticked = col.checkbox(
            _("axis {axis} dynamic").format(axis=axis), value=bool(label_default), key=f"dyn_{tag}_{spec.name}_{axis}"
        )
        label = col.text_input(
            _("name of axis {axis}").format(axis=axis),
            value=label_default or ("batch" if axis == 0 else f"dim{axis}"),
            key=f"dynname_{tag}_{spec.name}_{axis}",
            label_visibility="collapsed",
            disabled=not ticked,
        )
        if ticked:
            dynamic.setdefault(spec.name, {})[str(axis)] = label.strip() or f"dim{axis}"
names_left, names_right = st.columns(2)
input_names = names_left.text_input(
    _("Input names in the ONNX graph (comma-separated)"),
    value=", ".join(s.name for s in source.inputs),
    key=f"inputs_{tag}",
)
outputs = names_right.text_input(
    _("Output names (comma-separated)"), value=", ".join(defaults.output_names), key=f"outputs_{tag}"
)
renamed = [n.strip() for n in input_names.split(",") if n.strip()]
if len(renamed) != len(source.inputs) or len(set(renamed)) != len(renamed):
    problems.append(
        _("Give {count} different input name(s), one per input, separated by commas.").format(count=len(source.inputs))
    )
rename = dict(zip([s.name for s in source.inputs], renamed, strict=False))
for problem in problems:
    st.error(md_escape(problem, 600))
if missing:
    named = pgettext("list", ", ").join(f"'{name}'" for name in missing)
    st.info(md_escape(_("Type the shape of {names} (e.g. 1,3,224,224) to export.").format(names=named), 600))
clicked = st.button(_("Export"), type="primary", disabled=bool(problems or missing), key="export_button")

scalar_dtypes = {s.name: s.dtype for s in source.inputs if s.dtype in SCALAR_TYPES}
if (st.session_state.pop("export_again", False) or clicked) and not problems and not missing:
    options = ExportOptions(
        input_shapes={rename[k]: v for k, v in shapes.items()},
        input_dtypes={
            rename[k]: v
            for k, v in {
                **defaults.input_dtypes,
                **{s.name: s.dtype for s in source.inputs if s.dtype in SCALAR_TYPES},
            }.items()
            if k in rename
        },
        input_values={rename[k]: v for k, v in values.items()},
        dynamic_axes={rename[k]: v for k, v in dynamic.items()},
        input_kinds={rename[k]: v for k, v in defaults.input_kinds.items() if k in rename},
        output_names=[n.strip() for n in outputs.split(",") if n.strip()],
        exporter=exporter or "dynamo",
        opset=int(opset),
        optimize=optimize,
        external_data=external,
    )
    run_export(source, options, _("Exporting '{name}'").format(name=source.name))

report = kept_report(source)
if report is None:
    dims = ", ".join(f"{s.name} {format_shape(s.shape)}" for s in source.inputs)
    st.caption(
        _("Ready to export **{name}** ({inputs}). Choose the settings and press Export.").format(
            name=md_escape(source.name), inputs=md_escape(dims)
        )
    )
    st.stop()

show_report(report)
tutorial_view.export_figure(report, source)  # the tutorial's largest difference beside this one


def export_with_legacy() -> None:
    """A callback: runs before the widgets are drawn, so it may change the exporter choice."""
    st.session_state["exporter_choice"] = "legacy"
    st.session_state["export_again"] = True


legacy_can_honour = report.exporter == "dynamo" and report.opset_requested in EXPORTERS["legacy"][1]
if report.opset_produced != report.opset_requested and legacy_can_honour:
    st.button(
        _("Export again with the legacy exporter at opset {opset}").format(opset=report.opset_requested),
        on_click=export_with_legacy,
    )
current = session.current_model()
if report.record is not None and not report.usable and (current is None or current.id != report.record.id):
    st.caption(_("The current model was not replaced, because the export failed a check."))
    if st.button(_("Use this export as the current model anyway"), key="use_failed_export"):
        session.set_current_model(report.record, exported_from=source)
elif report.record is not None:
    st.caption(_("The exported model is now the current model."))
    next_steps("decode", "partition", "benchmark")
