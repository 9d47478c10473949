"""Quantize: INT8 and FP16 variants of the current model, with size, speed and accuracy side by side."""

from __future__ import annotations

import os

import streamlit as st

from core.errors import WorkbenchError
from core.i18n import _, ngettext, number
from core.jobs import CALIBRATION, INTAKE, QUANTIZE
from core.model.data import image_layout
from core.model.intake import IntakeRequest
from core.quantize import VARIANTS, CalibrationRequest, QuantizeReport, QuantizeRequest
from core.quantize.records import variant_label
from core.runtime.machine import default_threads
from core.workspace import safe_filename
from ui import jobs, session
from ui.jobs import stop_with_error
from ui.needs import next_steps, require_onnx
from ui.plan_view import measured_model, plan_ready, plan_section
from ui.quantize_view import results_section
from ui.text import md_escape

st.title(_("Quantize"))
st.markdown(
    _(
        "Quantization stores weights (and, for static quantization, activations) as 8-bit integers instead of 32-bit "
        "floats: about 4× smaller, and faster where the hardware has fast integer arithmetic. **Dynamic** quantization "
        "converts the weights ahead of time and quantizes each activation on the fly, with no data needed. **Static** "
        "quantization also fixes the activations' ranges ahead of time, from calibration data you provide, and saves "
        "the on-the-fly work. **Quantization-aware training** (QAT) learns with the rounding in the loop and is the "
        "most accurate, but it happens in training, not here. **FP16** halves the weights' size with little loss; its "
        "speed depends on the hardware having float16 arithmetic."
    )
)
st.markdown(
    _(
        "On a CPU without VNNI or AMX instructions, int8 dot products are emulated with wider instructions, and a "
        "small model spends its time quantizing and dequantizing at each boundary rather than multiplying: int8 can "
        "then be *slower* than float32. The measurements below say which it is on this machine."
    )
)

record = require_onnx("quantize")
inputs = plan_section(record, session.torch_model(), key="quantize_plan")
if any(image_layout(i) and not i.real_data for i in inputs):
    st.info(
        _(
            "This model takes images, and the plan feeds it noise: calibration scales and the accuracy check mean "
            "more on a real picture. Give one under **Use a real image** above (or an .npz of many real inputs below)."
        )
    )
cores = os.cpu_count() or 1

with st.form("quantize_form"):
    variants = st.multiselect(
        _("Variants"),
        list(VARIANTS),
        default=["dynamic-qint8", "static-qdq-minmax", "fp16"],
        format_func=variant_label,
        key="quantize_variants",
    )
    left, mid, right = st.columns(3)
    source = left.radio(
        _("Calibration data (static variants)"),
        ["generated", "upload"],
        format_func=lambda s: _("Generated from the input spec") if s == "generated" else _("An .npz of real inputs"),
        key="quantize_source",
    )
    count = mid.number_input(_("Generated calibration samples"), 1, 10_000, 32, key="quantize_count")
    held_out = right.number_input(_("Held-out samples for accuracy"), 1, 10_000, 32, key="quantize_held_out")
    upload = st.file_uploader(
        _("Calibration .npz: one array per input, named after it, with the samples along the first axis"),
        type=["npz"],
        key="quantize_npz",
    )
    left, right = st.columns(2)
    iterations = left.number_input(_("Measured calls per model"), 10, 100_000, 100, step=50, key="quantize_iters")
    threads = right.number_input(_("Intra-op threads"), 1, cores, default_threads(), key="quantize_threads")
    submitted = st.form_submit_button(_("Quantize and compare"), type="primary", disabled=not plan_ready(inputs))

st.caption(
    _(
        "Generated calibration and held-out samples follow the input plan above (its shapes at batch 1 and its "
        "values), from a fixed seed; an uploaded .npz must match its shapes."
    )
)


def calibration_path() -> str:
    """The uploaded calibration file, saved in this session's folder and checked against the model in the
    worker; "" for generated data."""
    if source != "upload":
        return ""
    if upload is None:
        raise WorkbenchError(_("Upload an .npz with the calibration data, or choose generated data."))
    target = session.workspace().new_folder("calibration") / safe_filename(upload.name or "calibration.npz")
    target.write_bytes(upload.getvalue())
    request = CalibrationRequest(path=str(target), inputs=inputs)
    calls = jobs.run(CALIBRATION, request, _("Checking the calibration data"))
    st.caption(
        ngettext(
            "The calibration file fits the model: {count} sample.",
            "The calibration file fits the model: {count} samples.",
            calls,
        ).format(count=number(calls))
    )
    return str(target)


if submitted:
    try:
        if not variants:
            raise WorkbenchError(_("Choose at least one variant."))
        calibration_file = calibration_path()
    except WorkbenchError as exc:
        stop_with_error(exc)
    request = QuantizeRequest(
        model=measured_model(record, inputs),
        out_dir="",  # a fresh folder of this session's (ui.jobs)
        variants=variants,
        calibration_count=int(count),
        calibration_file=calibration_file,
        held_out=int(held_out),
        iterations=int(iterations),
        threads=int(threads),
    )
    label = _("Quantizing “{name}” and measuring {count} models").format(
        name=record.name, count=number(len(variants) + 1)
    )
    jobs.run(QUANTIZE, request, label, model=record.id)

report: QuantizeReport | None = jobs.kept(QUANTIZE, record.id)
made_from = st.session_state.get("quantized_from")  # (variant's id, the report it was chosen from, the original)
if report is None and made_from is not None and made_from[0] == record.id:
    report = made_from[1]
    st.info(
        _(
            "The current model is this variant of **{name}**; the comparison it was chosen from stays below. "
            "Benchmark it, or go back to the original on the Model page."
        ).format(name=md_escape(made_from[2]))
    )
if report is None:
    st.info(_("Choose the variants and press **Quantize and compare**. The current model is not changed."))
    st.stop()
chosen = results_section(report, key=f"quantize_{record.id[:12]}")
if chosen is not None:
    try:
        variant_record = jobs.run(
            INTAKE, IntakeRequest(paths=[chosen.path]), _("Opening {variant}").format(variant=chosen.label)
        )
    except WorkbenchError as exc:
        stop_with_error(exc)
    english = VARIANTS[chosen.key].label  # a name kept in the library, read in either language: English
    variant_record.name = f"{record.name} ({english})"
    if variant_record.id != record.id:
        st.session_state["quantized_from"] = (variant_record.id, report, record.name)
        session.set_current_model(variant_record, exported_from=session.torch_model())

next_steps("benchmark", "history")
