"""Deploy: the session settings that make the model fastest on this machine, kept only when surely faster than
ONNX Runtime's defaults; then a server for it to download, and its latency under load."""

from __future__ import annotations

import dataclasses

import streamlit as st

from core.i18n import _
from core.jobs import TUNE
from core.quantize import VARIANTS
from core.quantize.records import variant_label
from core.tune import SessionConfig, TuneReport, TuneRequest
from core.tune.budget import longest_budget
from core.tune.saved import as_run
from ui import jobs, pages, runtime_view, session
from ui.needs import next_steps, require_onnx
from ui.plan_view import measured_model, plan_fits, plan_ready, plan_section
from ui.serve_view import deploy_section, loadtest_section, original_tokenizer
from ui.tune_view import chosen_section, results_section, run_tune

st.title(_("Deploy"))
st.markdown(
    _(
        "Before a model serves requests, ONNX Runtime's session settings decide how fast each one is answered: how "
        "many threads share an operator (intra-op) and run independent operators at once (inter-op, in parallel "
        "execution), how far the graph is optimized, which execution provider runs it, whether inputs and outputs "
        "are bound to the device once (IO binding), whether a quantized or FP16 variant is used, and how many "
        "requests go in one call (the batch). Their best values depend on the model and the machine, so they are "
        "measured, not guessed."
    )
)
st.markdown(
    _(
        "**Tune** tries them one at a time, the most promising first, each timed beside the best so far with the "
        "Benchmark page's harness; a change is kept only when the 95 % CI of its median lies wholly below. A "
        "variant must first pass the Quantize page's accuracy tolerance. At the end, the winner is timed again beside "
        "ONNX Runtime's defaults: it is chosen only when surely faster, so the answer is never slower than the "
        "defaults."
    )
)

record = require_onnx("deploy")
inputs = plan_section(record, session.torch_model(), key="deploy_plan")
batch_open = any(i.batch_axis is not None for i in inputs)
choices = [k for k, v in VARIANTS.items() if v.mode != "static"]  # static INT8 needs calibration: Quantize's page

with st.form("deploy_form"):
    left, mid, right = st.columns([1, 2, 1])  # the variants' labels are long: two chips must show side by side
    longest = max(10, longest_budget(session.settings().worker_timeout_s))  # a job is stopped at the worker's limit
    budget = left.number_input(_("Time budget (s)"), 5, longest, min(60, longest), step=15, key="deploy_budget")
    variants = mid.multiselect(
        _("Variants to try"),
        choices,
        default=["dynamic-qint8", "fp16"],
        format_func=variant_label,
        key="deploy_variants",
    )
    batches = right.multiselect(
        _("Batch sizes to try") if batch_open else _("Batch size (fixed by the model)"),
        [2, 4, 8, 16, 32, 64] if batch_open else [],
        default=[8] if batch_open else [],
        disabled=not batch_open,
        key="deploy_batches",
    )
    runtimes = runtime_view.runtimes_picker("deploy_runtimes")  # shown when this server has more than one
    strict = len(runtime_view.runtime_choices()) > 1 and st.checkbox(
        _("Never choose a provider that falls back to the CPU provider (strict)"),
        key="deploy_strict",
        help=_("A provider that takes no node, or leaves some to the CPU provider, is measured and shown, not chosen."),
    )
    submitted = st.form_submit_button(_("Tune"), type="primary", disabled=not plan_ready(inputs))

st.caption(
    _(
        "Everything counts against the budget: opening sessions, making the variants, measuring. A quarter is kept "
        "for the final round; what the budget does not reach is listed. Like benchmarks, tuning runs one at a time "
        "on this machine. Static INT8 needs calibration data: make it on the Quantize page."
    )
)
if submitted or st.session_state.pop("tune_again", False):  # the button, or "Tune again" after a busy run
    plan_fits(inputs, max(batches or [1]))
    request = TuneRequest(
        model=measured_model(record, inputs),
        out_dir="",  # a fresh folder of this session's (ui.jobs)
        budget_s=float(budget),
        variants=list(variants),
        batches=list(batches) or None,
        strict=bool(strict),
    )
    tuned = run_tune(request, runtimes, record.name, record.id)  # one job per runtime, each in its own worker
    if session.save_run(as_run(tuned)):
        st.session_state["tune_saved"] = tuned.id

report: TuneReport | None = jobs.kept(TUNE, record.id)
served = measured_model(record, inputs)
options: SessionConfig | None = None
if report is None:
    st.info(_("Set the time budget and press **Tune**. The model is not changed."))
else:
    st.header(_("Tuned session settings"), anchor="tuned")
    results_section(report, key=f"tune_{report.id}")
    chosen_section(report, key=f"tune_{report.id}")
    if st.session_state.get("tune_saved") == report.id:
        pages.link("history", _("Saved to the history as run {run}").format(run=report.id), run=report.id)
    options = report.best.config
    variant = report.best.config.variant
    if variant != "fp32" and variant in report.variant_paths:  # the server serves the variant Tune chose
        label = _("{name} ({variant})").format(name=served.name or record.name, variant=variant_label(variant))
        served = dataclasses.replace(served, path=report.variant_paths[variant], name=label)

st.header(_("Serve it"), anchor="serve")
if options is None:
    st.caption(
        _(
            "Not tuned yet: the server uses ONNX Runtime's defaults. Press **Tune** above first to serve the tuned "
            "settings."
        )
    )
else:
    st.caption(_("The server uses the settings Tune chose above, and the variant it chose."))
tokenizer = original_tokenizer(record)  # packaged with a tuned variant's server, written in a folder of its own
deploy_section(served, key="deploy_server", tuned=options, tokenizer=tokenizer)
st.subheader(_("Under load"), anchor="load")
loadtest_section(
    served, key="deploy_load", tuned=options, generative=record.generative is not None, tokenizer=tokenizer
)

next_steps("history", "dashboard")
