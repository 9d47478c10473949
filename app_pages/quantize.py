"""Quantize: INT8 and FP16 variants of the current model, with size, speed and accuracy side by side."""

from __future__ import annotations

import os

import streamlit as st

from core.errors import WorkbenchError
from core.jobs import CALIBRATION, INTAKE, QUANTIZE
from core.model.data import image_layout
from core.model.intake import IntakeRequest
from core.quantize import VARIANTS, CalibrationRequest, QuantizeReport, QuantizeRequest
from core.runtime.machine import default_threads
from core.workspace import safe_filename
from ui import jobs, session
from ui.jobs import stop_with_error
from ui.needs import next_steps, require_onnx
from ui.plan_view import measured_model, plan_ready, plan_section
from ui.quantize_view import results_section
from ui.text import md_escape

st.title("Quantize")
st.markdown(
    "Quantization stores weights (and, for static quantization, activations) as 8-bit integers instead of 32-bit "
    "floats: about 4× smaller, and faster where the hardware has fast integer arithmetic. **Dynamic** quantization "
    "converts the weights ahead of time and quantizes each activation on the fly, with no data needed. **Static** "
    "quantization also fixes the activations' ranges ahead of time, from calibration data you provide, and saves "
    "the on-the-fly work. **Quantization-aware training** (QAT) learns with the rounding in the loop and is the most "
    "accurate, but it happens in training, not here. **FP16** halves the size with little loss; its speed depends "
    "on the hardware having float16 arithmetic."
)
st.markdown(
    "On a CPU without VNNI or AMX instructions, int8 dot products are emulated with wider instructions, and a "
    "small model spends its time quantizing and dequantizing at each boundary rather than multiplying: int8 can "
    "then be *slower* than float32. The measurements below say which it is on this machine."
)

record = require_onnx("quantize")
inputs = plan_section(record, session.torch_model(), key="quantize_plan")
if any(image_layout(i) and i.kind != "data" for i in inputs):
    st.info(
        "This model takes images, and the plan feeds it noise: calibration scales and the accuracy check mean "
        "more on a real picture. Give one under **Use a real image** above (or an .npz of many real inputs below)."
    )
cores = os.cpu_count() or 1

with st.form("quantize_form"):
    variants = st.multiselect(
        "Variants",
        list(VARIANTS),
        default=["dynamic-qint8", "static-qdq-minmax", "fp16"],
        format_func=lambda k: VARIANTS[k].label,
        key="quantize_variants",
    )
    left, mid, right = st.columns(3)
    source = left.radio(
        "Calibration data (static variants)",
        ["generated", "upload"],
        format_func=lambda s: {"generated": "Generated from the input spec", "upload": "An .npz of real inputs"}[s],
        key="quantize_source",
    )
    count = mid.number_input("Generated calibration samples", 1, 10_000, 32, key="quantize_count")
    held_out = right.number_input("Held-out samples for accuracy", 1, 10_000, 32, key="quantize_held_out")
    upload = st.file_uploader(
        "Calibration .npz: one array per input, named after it, with the samples along the first axis",
        type=["npz"],
        key="quantize_npz",
    )
    left, right = st.columns(2)
    iterations = left.number_input("Measured calls per model", 10, 100_000, 100, step=50, key="quantize_iters")
    threads = right.number_input("Intra-op threads", 1, cores, default_threads(), key="quantize_threads")
    submitted = st.form_submit_button("Quantize and compare", type="primary", disabled=not plan_ready(inputs))

st.caption(
    "Generated calibration and held-out samples follow the input plan above (its shapes at batch 1 and its "
    "values), from a fixed seed; an uploaded .npz must match its shapes."
)


def calibration_path() -> str:
    """The uploaded calibration file, saved in this session's folder and checked against the model in the
    worker; "" for generated data."""
    if source != "upload":
        return ""
    if upload is None:
        raise WorkbenchError("Upload an .npz with the calibration data, or choose generated data.")
    target = session.workspace().new_folder("calibration") / safe_filename(upload.name or "calibration.npz")
    target.write_bytes(upload.getvalue())
    request = CalibrationRequest(path=str(target), inputs=inputs)
    calls = jobs.run(CALIBRATION, request, "Checking the calibration data")
    st.caption(f"The calibration file fits the model: {calls} sample(s).")
    return str(target)


if submitted:
    try:
        if not variants:
            raise WorkbenchError("Choose at least one variant.")
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
    label = f"Quantizing '{record.name}' and measuring {len(variants) + 1} models"
    jobs.run(QUANTIZE, request, label, model=record.id)

report: QuantizeReport | None = jobs.kept(QUANTIZE, record.id)
made_from = st.session_state.get("quantized_from")  # (variant's id, the report it was chosen from, the original)
if report is None and made_from is not None and made_from[0] == record.id:
    report = made_from[1]
    st.info(
        f"The current model is this variant of **{md_escape(made_from[2])}**; the comparison it was chosen from "
        "stays below. Benchmark it, or go back to the original on the Model page."
    )
if report is None:
    st.info("Choose the variants and press **Quantize and compare**. The current model is not changed.")
    st.stop()
chosen = results_section(report, key=f"quantize_{record.id[:12]}")
if chosen is not None:
    try:
        variant_record = jobs.run(INTAKE, IntakeRequest(paths=[chosen.path]), f"Opening {chosen.label}")
    except WorkbenchError as exc:
        stop_with_error(exc)
    variant_record.name = f"{record.name} ({chosen.label})"
    if variant_record.id != record.id:
        st.session_state["quantized_from"] = (variant_record.id, report, record.name)
        session.set_current_model(variant_record, exported_from=session.torch_model())

next_steps("benchmark", "history")
