"""Quantize: INT8 and FP16 variants of the current model, with size, speed and accuracy side by side."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TypeVar

import streamlit as st

from core.errors import WorkbenchError
from core.i18n import _, ngettext, number
from core.jobs import CALIBRATION, INTAKE, QUANTIZE, QUANTIZE_LM
from core.model.data import image_layout
from core.model.intake import IntakeRequest
from core.quantize import VARIANTS, CalibrationRequest, QuantizeReport, QuantizeRequest
from core.quantize.lm_records import LMQuantizeReport
from core.quantize.records import variant_label
from core.runtime.machine import default_threads
from core.workspace import safe_filename
from ui import jobs, session, uploads
from ui.jobs import stop_with_error
from ui.needs import next_steps, require_onnx
from ui.plan_view import measured_model, plan_ready, plan_section
from ui.quantize_lm_view import language_model_form, language_model_results
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
Report = TypeVar("Report", QuantizeReport, LMQuantizeReport)


def make_current(path: str, label: str, english: str, report: QuantizeReport | LMQuantizeReport) -> None:
    """The chosen variant (with its external data) opened and made the current model, named after the original and
    the variant in English (a name kept in the library, read in either language)."""
    data = Path(f"{path}.data")
    try:
        variant_record = jobs.run(
            INTAKE,
            IntakeRequest(paths=[path, *([str(data)] if data.is_file() else [])]),
            _("Opening {variant}").format(variant=label),
        )
    except WorkbenchError as exc:
        stop_with_error(exc)
    variant_record.name = f"{record.name} ({english})"
    if variant_record.id != record.id:
        st.session_state["quantized_from"] = (variant_record.id, report, record.name)
        session.set_current_model(variant_record, exported_from=session.torch_model())


def chosen_from(kind: type[Report]) -> Report | None:
    """The comparison the current model was chosen from, when it is a variant made here, said so."""
    made_from = st.session_state.get("quantized_from")  # (variant's id, the report it was chosen from, the original)
    if made_from is None or made_from[0] != record.id or not isinstance(made_from[1], kind):
        return None
    st.info(
        _(
            "The current model is this variant of **{name}**; the comparison it was chosen from stays below. "
            "Benchmark it, or go back to the original on the Model page."
        ).format(name=md_escape(made_from[2]))
    )
    return made_from[1]


if record.generative is not None:  # a language model: each variant judged by its greedy tokens
    lm_request = language_model_form(record)
    if lm_request is not None:
        label = _("Quantizing “{name}” and comparing the tokens of {count} models").format(
            name=record.name, count=number(len(lm_request.variants) + 1)
        )
        jobs.run(QUANTIZE_LM, lm_request, label, model=record.id)
    lm_report = jobs.kept(QUANTIZE_LM, record.id) or chosen_from(LMQuantizeReport)
    if lm_report is None:
        st.info(
            _("Choose the variants and press **Quantize and compare the tokens**. The current model is not changed.")
        )
        st.stop()
    lm_chosen = language_model_results(lm_report, key=f"quantize_lm_{record.id[:12]}")
    if lm_chosen is not None:
        make_current(lm_chosen.path, lm_chosen.label, lm_chosen.english, lm_report)
    next_steps("benchmark", "history")
    st.stop()

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
    uploads.save(upload, target)
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

report = jobs.kept(QUANTIZE, record.id) or chosen_from(QuantizeReport)
if report is None:
    st.info(_("Choose the variants and press **Quantize and compare**. The current model is not changed."))
    st.stop()
chosen = results_section(report, key=f"quantize_{record.id[:12]}")
if chosen is not None:
    make_current(chosen.path, chosen.label, VARIANTS[chosen.key].label, report)

next_steps("benchmark", "history")
