"""Dashboard: the team's runs at a glance. The latest result per model and machine, a model's latency and
speedup across its versions, and the versions that made it slower."""

from __future__ import annotations

import streamlit as st

from core.errors import WorkbenchError
from core.store.dashboard import Owned, busy_runs, latest_per_model_machine, regressions, trend
from ui import pages, session
from ui.dashboard_view import date_span, latest_frame, trend_figure, trend_frame
from ui.jobs import stop_with_error
from ui.needs import next_steps
from ui.text import md_escape

MAX_RUNS = 300  # the newest runs the page reads; narrow the filters to see older ones

st.title("Dashboard")
who = session.who()
team = f"team {md_escape(who.team, 80)}" if who.signed_in else "everyone using this instance without signing in"
team = "you alone (this instance puts you in no team)" if who.alone else team
st.markdown(
    f"The benchmark runs of {team}: the latest result of every model on every machine, each model's latency "
    "across its versions (every export or quantized variant is a new version, told apart by its sha256; PyTorch "
    "eager's rows follow the PyTorch original's versions), and the versions that made it surely slower than the "
    "one before, on the same machine and configuration."
)

try:
    store = session.store()
    people, models = store.distinct("owner", team=who.team), store.distinct("model", team=who.team)
    machines = store.distinct("machine", team=who.team)
except WorkbenchError as exc:
    stop_with_error(exc)
if not models:
    st.info("No benchmark runs yet: a run saved from the Benchmark page or `python -m core bench` shows here.")
    pages.link("benchmark", "Run a benchmark")
    st.stop()

by_person, by_model, by_machine, by_date = st.columns(4)
chosen_people = by_person.multiselect(
    "People", people, format_func=lambda p: p or "anonymous", key="dash_people", placeholder="everyone"
)
chosen_models = by_model.multiselect("Models", models, key="dash_models", placeholder="all models")
chosen_machines = by_machine.multiselect("Machines", machines, key="dash_machines", placeholder="all machines")
since, until = date_span(by_date, 90, "dash_dates")

try:
    found = store.runs(
        chosen_models or None, chosen_machines or None, since, until, limit=MAX_RUNS, team=who.team,
        owners=chosen_people or None,
    )  # fmt: skip
    runs = [Owned(session.saved_run(r.id), r.owner) for r in found]
except WorkbenchError as exc:
    stop_with_error(exc)
if not runs:
    st.info("No run matches these filters.")
    st.stop()
if len(found) == MAX_RUNS:
    st.caption(f"The newest {MAX_RUNS} runs that match; narrow the dates to see older ones.")

st.header("Latest per model and machine")
latest = latest_per_model_machine(runs)
st.dataframe(latest_frame(latest), hide_index=True, width="stretch")  # a data grid shows text as text
flagged = regressions(runs)
if flagged:
    st.warning(
        f"**{len(flagged)} regression{'s' * (len(flagged) != 1)}**: a new version surely slower than the one "
        "before it (the medians' 95 % intervals apart, and at least 5 % slower). ONNX Runtime's rows compare "
        "versions of the ONNX model, PyTorch eager's versions of the PyTorch original.\n\n"
        + "\n".join(f"- {md_escape(g.model, 120)}: {md_escape(g.text, 300)}" for g in flagged[-20:])
    )
else:
    st.success("No regressions: no version is surely slower than the version before it.")
busy = busy_runs(runs)
if busy:
    st.caption(
        f"{len(busy)} of these runs {'was' if len(busy) == 1 else 'were'} measured while other processes kept the "
        "machine busy: they are compared with nothing, since their numbers are the other work's as much as the "
        "model's. Run them again on a quiet machine to compare them."
    )

st.header("A model across its versions")
names = sorted({run.report.model for run in runs})
current = session.current_model()
model = st.selectbox(
    "Model",
    names,
    index=names.index(current.name) if current is not None and current.name in names else 0,
    key="dash_trend_model",
)
points = trend([run for run in runs if run.report.model == model])
frame = trend_frame(points)
versions = frame["version"].nunique()
st.caption(
    f"{frame['run'].nunique()} runs of {md_escape(model, 120)}, {versions} version{'s' * (versions != 1)}; "
    "bars are each median's 95 % interval. Hover a point for its version, who ran it and the run."
)
latency_tab, speedup_tab = st.tabs(["Latency", "Speedup"])
with latency_tab:
    st.plotly_chart(trend_figure(frame), key="dash_trend", config={"displaylogo": False})
with speedup_tab:
    speedups = frame.dropna(subset=["speedup"])
    if speedups.empty:
        st.info("These runs measured no speedup (a speedup needs a baseline: PyTorch eager or ORT DISABLE_ALL).")
    else:
        st.plotly_chart(trend_figure(speedups, "speedup"), key="dash_speedup", config={"displaylogo": False})

next_steps("history", "benchmark")
