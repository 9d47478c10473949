"""Profile: where one call's time goes, node by node in ONNX Runtime and layer by layer in PyTorch eager."""

from __future__ import annotations

import os

import streamlit as st

from core.i18n import _
from core.jobs import PROFILE
from core.profile import ProfileRequest
from core.runtime.machine import default_threads
from core.runtime.ort import LEVELS
from ui import jobs, runtime_view, session
from ui.graph_panel import graph_of
from ui.needs import next_steps, require_onnx
from ui.plan_view import eager_checkbox, measured_model, plan_fits, plan_ready, plan_section
from ui.profile_view import profile_section

st.title(_("Profile"))
st.markdown(
    _(
        "Benchmark says how much faster; Profile says where the time goes. ONNX Runtime runs the graph as a list "
        "of **kernels**, one compiled routine per node, and its profiler times each of them; PyTorch eager runs the "
        "model layer by layer, each layer one or more aten kernels, with Python in between. Whatever a call spends "
        "outside the kernels is **overhead**: scheduling, copies, the Python around them."
    )
)
with st.expander(_("Why fusions save time, and which models gain the most")):
    st.markdown(
        _(
            "A Conv followed by a Relu is two kernels in eager: the Conv writes its whole output to memory and the "
            "Relu reads it back. ONNX Runtime **fuses** them into one kernel that applies the Relu while the values "
            "are still in the CPU's registers, so one pass over memory disappears; BatchNorm is folded into the "
            "Conv's weights before the model even runs. A model made of **many small ops** (a small CNN, a "
            "detector's head) spends much of eager's time on per-op overhead and memory passes, so it gains a lot; "
            "a model that is a few **large matrix multiplications** (a big Linear or a transformer at long sequence "
            "lengths) spends its time inside BLAS kernels that both engines share, and gains little."
        )
    )

record = require_onnx("profile")
torch_record = session.torch_model()
inputs = plan_section(record, torch_record, key="profile_plan")
batch_dynamic = any(i.batch_axis is not None for i in inputs)
cores = os.cpu_count() or 1

with st.form("profile_form"):
    runtime = runtime_view.runtime_picker("profile_runtime")  # another build: its providers, the CPU provider last
    strict = len(runtime_view.runtime_choices()) > 1 and st.checkbox(
        _("Refuse a provider that leaves nodes to the CPU provider (strict)"),
        key="profile_strict",
        help=_("ONNX Runtime is told not to fall back (session.disable_cpu_ep_fallback): nothing is profiled then."),
    )
    left, mid, right = st.columns(3)
    level = left.selectbox(
        _("ONNX Runtime optimization level"),
        list(LEVELS),
        index=list(LEVELS).index("all"),
        format_func=lambda k: LEVELS[k].name,
        help=_("Profile at DISABLE_ALL and at ALL to see what the fusions bought: Conv and Relu as one FusedConv."),
        key="profile_level",
    )
    threads = mid.number_input(
        _("Intra-op threads (both engines)"), 1, cores, default_threads(), key="profile_threads",
        help=_("Every core but one by default, left to this server, your browser and the system."),
    )  # fmt: skip
    batch = right.number_input(
        _("Batch size"), 1, 4096, 1, disabled=not batch_dynamic, key="profile_batch",
        help=None if batch_dynamic else _("The model's batch axis is fixed."),
    )  # fmt: skip
    left, mid, right = st.columns(3)
    eager = eager_checkbox(left, _("PyTorch eager too, layer by layer"), torch_record, key="profile_eager")
    iterations = mid.number_input(_("Profiled calls per engine"), 5, 10_000, 100, step=25, key="profile_iters")
    warmup = right.number_input(_("Warm-up calls"), 0, 1000, 10, key="profile_warmup")
    submitted = st.form_submit_button(_("Profile"), type="primary", disabled=not plan_ready(inputs))

if submitted or st.session_state.pop("profile_again", False):
    plan_fits(inputs, int(batch) if batch_dynamic else 1)
    request = ProfileRequest(
        model=measured_model(record, inputs, torch_record if eager else None),
        level=level,
        threads=int(threads),
        batch=int(batch) if batch_dynamic else 1,
        iterations=int(iterations),
        warmup=int(warmup),
        runtime=runtime,
        strict=bool(strict),
    )
    jobs.run(PROFILE, request, _("Profiling “{name}”").format(name=record.name), model=record.id)

report = jobs.kept(PROFILE, record.id)
if report is None:
    st.info(_("Choose the level and press **Profile**."))  # nothing about the sample: this may be any model
    st.stop()
profile_section(report, key=f"profile_{report.id}", view=graph_of(record))
next_steps("benchmark", "quantize", "partition")
