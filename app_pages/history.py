"""History: every saved benchmark run, filtered by model, machine and date, and compared in one chart."""

from __future__ import annotations

from datetime import date, datetime, time, timedelta

import pandas as pd
import streamlit as st

from core.errors import WorkbenchError
from core.store import Store
from core.store.history import inputs_text
from ui import session
from ui.bench_view import environment_section, results_frame, results_section
from ui.charts import compare_figure
from ui.jobs import stop_with_error
from ui.needs import next_steps

st.title("History")
st.markdown(
    "Every benchmark run is saved with its settings, results and the machine it ran on, from the Benchmark page "
    "and from `python -m core bench`. Compare runs to see what a new export, another optimization level or "
    "another machine changed. Timings from different machines compare machines, not just models."
)

try:
    store = Store(session.settings().store_url)
    models, machines = store.distinct("model"), store.distinct("machine")
except WorkbenchError as exc:
    stop_with_error(exc)
if not models:
    st.info("No benchmark runs yet.")
    st.page_link("app_pages/benchmark.py", label="Run a benchmark", icon=":material/speed:")
    st.stop()

current = session.current_model()
left, mid, right = st.columns(3)
chosen_models = left.multiselect(
    "Models",
    models,
    default=[current.name] if current is not None and current.name in models else [],  # the current model's runs
    key="history_models",
    placeholder="all models",
)
chosen_machines = mid.multiselect("Machines", machines, key="history_machines", placeholder="all machines")
today = date.today()
span = right.date_input("Dates", (today - timedelta(days=365), today), key="history_dates")
since = until = None
if isinstance(span, tuple) and len(span) == 2:
    since, until = datetime.combine(span[0], time.min), datetime.combine(span[1], time.max)
found = store.runs(chosen_models or None, chosen_machines or None, since, until)
if not found:
    st.info("No run matches these filters.")
    st.stop()

table = pd.DataFrame(
    {
        "run": [r.id for r in found],
        "when (UTC)": [r.created_at.strftime("%Y-%m-%d %H:%M") for r in found],
        "model": [r.model for r in found],
        "machine": [r.machine for r in found],
        "CPU": [r.cpu for r in found],
        "configurations": [r.configurations for r in found],
        "headline": [r.headline for r in found],
        "inputs": [r.inputs for r in found],
    }
)
st.markdown(f"**{len(found)} run(s)**, newest first")
st.dataframe(table, hide_index=True, width="stretch")  # a data grid shows text as text: nothing to escape

labels = {r.id: f"{r.id} · {r.model} · {r.machine} · {r.created_at:%Y-%m-%d %H:%M}" for r in found}
compare = st.multiselect(
    "Runs to compare",
    list(labels),
    default=[r.id for r in found if r.model == found[0].model][:2],  # the newest runs of one model
    format_func=lambda run_id: labels[run_id],
    key="history_compare",
)
if compare:
    reports = [store.load(run_id) for run_id in compare]
    frames = [results_frame(r).assign(run=labels[r.id]) for r in reports]
    both = pd.concat(frames, ignore_index=True).rename(columns={"label": "configuration"})
    st.markdown("**Median latency per configuration**, one colour per run (hover for p90).")
    st.plotly_chart(
        compare_figure(both[["run", "configuration", "median_ms", "p90_ms"]]),
        key="history_chart",
        config={"displaylogo": False},
    )
    st.markdown("**What each run measured on**")
    st.dataframe(
        pd.DataFrame({"run": [labels[r.id] for r in reports], "inputs": [inputs_text(r.settings) for r in reports]}),
        hide_index=True,
        width="stretch",
    )
    pivot = both.pivot_table(index="configuration", columns="run", values="median_ms", aggfunc="first", sort=False)
    st.dataframe(pivot.round(4), width="stretch")

    shown = st.selectbox("Open a run", compare, format_func=lambda run_id: labels[run_id], key="history_open")
    report = next(r for r in reports if r.id == shown)
    with st.container(border=True):
        results_section(report, key=f"history_{report.id}")
        environment_section(report)

next_steps("benchmark", "model")
