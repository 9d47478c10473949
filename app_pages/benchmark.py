"""Benchmark: PyTorch eager against ONNX Runtime on this machine, measured honestly, charted and saved."""

from __future__ import annotations

import os

import streamlit as st

from core.bench import BenchRequest
from core.errors import WorkbenchError
from core.i18n import _
from core.jobs import BENCH
from core.runtime.machine import default_threads
from core.runtime.ort import LEVELS
from ui import jobs, pages, runtime_view, session, targets, tutorial_view
from ui.bench_view import environment_section, results_section
from ui.browser_bench import browser_section
from ui.generate_view import generate_section
from ui.needs import next_steps, require_onnx
from ui.plan_view import eager_checkbox, measured_model, plan_fits, plan_ready, plan_section

st.title(_("Benchmark"))
st.markdown(
    _(
        "How much faster is the model in ONNX Runtime than in PyTorch, on this machine? Each configuration is timed "
        "call by call after a warm-up, in rounds that interleave the configurations so that whatever else the "
        "machine does hits all of them alike. The answer is a median with its confidence interval, not a single "
        "number: latency on a shared machine varies by 10–25 % between runs."
    )
)

record = require_onnx("benchmark")
torch_record = session.torch_model()
generate_section(record, torch_record)  # a language model: token by token first, then one call at a time
inputs = plan_section(record, torch_record, key="bench_plan")
batch_dynamic = any(i.batch_axis is not None for i in inputs)
cores = targets.cores() or os.cpu_count() or 1  # the chosen target's, when jobs run on one

with st.form("bench_form"):
    runtime = runtime_view.runtime_picker("bench_runtime")  # another build: its providers, each a configuration
    left, right = st.columns(2)
    eager = eager_checkbox(left, _("PyTorch eager (inference_mode)"), torch_record, key="bench_eager")
    levels = right.multiselect(
        _("ONNX Runtime optimization levels"),
        list(LEVELS),
        default=["disable", "all"],
        format_func=lambda k: LEVELS[k].name,
        key="bench_levels",
    )
    left, mid, right = st.columns(3)
    thread_options = sorted({1, 2, 4, 8, 16, cores, default_threads()} & set(range(1, cores + 1)))
    threads = left.multiselect(
        _("Intra-op threads"),
        thread_options,
        default=[default_threads()],
        key="bench_threads",
        help=_(
            "Every core but one by default: the last core is left to this server, your browser and the system, so "
            "that they do not take turns with the measurement."
        ),
    )
    batches = mid.multiselect(
        _("Batch sizes") if batch_dynamic else _("Batch size (fixed by the model)"),
        [1, 2, 4, 8, 16, 32, 64] if batch_dynamic else [1],
        default=[1],
        disabled=not batch_dynamic,
        key="bench_batches",
    )
    iterations = right.number_input(_("Measured calls per configuration"), 10, 100_000, 200, step=50, key="bench_iters")
    left, mid, right = st.columns(3)
    warmup = left.number_input(_("Warm-up calls"), 0, 10_000, 20, key="bench_warmup")
    budget = mid.number_input(_("Time budget (s)"), 5, 3600, 60, key="bench_budget")
    seed = right.number_input(_("Seed of the inputs"), 0, 2**31 - 1, 0, key="bench_seed")
    submitted = st.form_submit_button(_("Run the benchmark"), type="primary", disabled=not plan_ready(inputs))

st.caption(
    _(
        "The time budget holds the whole run: loading the model, the warm-up and measuring, which stops when it "
        "runs out, whatever calls are left (the results say so). Benchmarks run one at a time on this machine; if "
        "another is running, yours waits in the queue and the status box shows its place."
    )
)
if submitted or st.session_state.pop("bench_again", False):  # the button, or "Run it again" after a busy run
    if not eager and not levels:
        st.error(_("Choose at least one engine: PyTorch eager or an ONNX Runtime level."))
        st.stop()
    plan_fits(inputs, max(batches or [1]) if batch_dynamic else 1)
    request = BenchRequest(
        model=measured_model(record, inputs, torch_record if eager else None),
        engines=(["eager"] if eager else []) + (["ort"] if levels else []),
        levels=levels or None,
        threads=threads or [default_threads()],
        batches=batches or [1],
        iterations=int(iterations),
        warmup=int(warmup),
        time_budget_s=float(budget),
        seed=int(seed),
        runtime=runtime,
    )
    measured = jobs.run(BENCH, request, _("Benchmarking “{name}”").format(name=record.name), model=record.id)
    if session.save_run(measured):
        st.session_state["bench_saved"] = measured.id


def saved_run_id(run_id: str) -> bool:
    """Whether this run is in the team's history: saved in this session, or found there (a reload, a link)."""
    if st.session_state.get("bench_saved") == run_id:
        return True
    try:
        found = session.store().summary(run_id)
    except WorkbenchError:
        return False
    return found is not None and found.team == session.who().team


report = jobs.kept(BENCH, record.id)
if report is None:
    st.info(_("Choose the configurations and press **Run the benchmark**."))
    browser_section(record, inputs, plan_ready(inputs))
    st.stop()
results_section(report, key=f"bench_{report.id}")
tutorial_view.benchmark_figures(report)  # the tutorial's 5.11× and 17.9× beside this run's
if saved_run_id(report.id):
    saved = _("Saved to the history as run {run}").format(run=report.id)
    pages.link("history", saved, run=report.id)  # its permalink
browser_section(record, inputs, plan_ready(inputs))

st.header(_("Why ONNX Runtime is often faster"), anchor="why")
st.markdown(
    _(
        "- **No interpreter per op.** PyTorch eager runs Python for every layer on every call and dispatches each "
        "op through its operator library; ONNX Runtime walks a prepared graph in C++.\n"
        "- **Graph fusions.** At EXTENDED and above, patterns such as Conv + Relu or MatMul + Add + LayerNorm "
        "become one kernel, one pass over memory (see the Partition page for this model's fusions).\n"
        "- **Planned memory.** ORT knows every tensor's lifetime before the first run and reuses buffers from an "
        "arena instead of allocating per call.\n\n"
        "The gap shrinks for models dominated by a few large matrix multiplications (both call the same BLAS "
        "kernels) and grows for models of many small ops. Threads help large ops and hurt tiny ones."
    )
)
st.header(_("The machine"), anchor="machine")
environment_section(report)

next_steps("profile", "quantize", "history")
