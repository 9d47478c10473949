"""Dashboard: the team's runs at a glance. The latest result per model and machine, a model's latency and
speedup across its versions, and the versions that made it slower."""

from __future__ import annotations

import streamlit as st

from core.errors import WorkbenchError
from core.i18n import _, ngettext, number
from core.store.dashboard import busy_runs, latest_per_model_machine, latest_tuned, regressions, trend
from ui import pages, session
from ui.dashboard_view import date_span, latest_frame, same_file_notes, trend_figure, trend_frame, tuned_frame
from ui.jobs import stop_with_error
from ui.needs import next_steps
from ui.text import md_escape

MAX_RUNS = 300  # the newest runs the page reads; narrow the filters to see older ones

st.title(_("Dashboard"))
who = session.who()
if who.alone:
    team = _("you alone (this instance puts you in no team)")
elif who.signed_in:
    team = _("team {team}").format(team=md_escape(who.team, 80))
else:
    team = _("everyone using this instance without signing in")
st.markdown(
    _(
        "The benchmark runs of {team}: the latest result of every model on every machine, each model's latency "
        "across its versions (every export or quantized variant is a new version, told apart by its sha256; PyTorch "
        "eager's rows follow the PyTorch original's versions), and the versions that made it surely slower than the "
        "one before, on the same machine and configuration."
    ).format(team=team)
)

try:
    store = session.store()
    people, models = store.distinct("owner", team=who.team), store.distinct("model", team=who.team)
    machines = store.distinct("machine", team=who.team)
except WorkbenchError as exc:
    stop_with_error(exc)
if not models:
    st.info(_("No benchmark runs yet: a run saved from the Benchmark page or `python -m core bench` shows here."))
    pages.link("benchmark", _("Run a benchmark"))
    st.stop()

by_person, by_model, by_machine, by_date = st.columns(4)
chosen_people = by_person.multiselect(
    _("People"), people, format_func=lambda p: p or _("anonymous"), key="dash_people", placeholder=_("everyone")
)
chosen_models = by_model.multiselect(_("Models"), models, key="dash_models", placeholder=_("all models"))
chosen_machines = by_machine.multiselect(_("Machines"), machines, key="dash_machines", placeholder=_("all machines"))
since, until = date_span(by_date, 90, "dash_dates")

try:
    found = store.runs(
        chosen_models or None, chosen_machines or None, since, until, limit=MAX_RUNS, team=who.team,
        owners=chosen_people or None,
    )  # fmt: skip
    runs = [session.saved_run(r.id) for r in found]  # each of its kind, with who saved it
except WorkbenchError as exc:
    stop_with_error(exc)
if not runs:
    st.info(_("No run matches these filters."))
    st.stop()
if len(found) == MAX_RUNS:
    st.caption(
        _("The newest {count} runs that match; narrow the dates to see older ones.").format(count=number(MAX_RUNS))
    )

st.header(_("Latest per model and machine"))
latest = latest_per_model_machine(runs)
if latest:
    st.dataframe(latest_frame(latest), hide_index=True, width="stretch")  # a data grid shows text as text
    for line in same_file_notes(latest):
        st.caption(line)
else:
    st.caption(_("No benchmark run matches these filters; their tuning runs are under Tuned configurations."))
flagged = regressions(runs)
if flagged:
    said = ngettext(
        "**{count} regression**: a new version surely slower than the one before it (the medians' {level} intervals "
        "apart, and at least {slower} slower). ONNX Runtime's rows compare versions of the ONNX model, PyTorch eager's "
        "versions of the PyTorch original.",
        "**{count} regressions**: a new version surely slower than the one before it (the medians' {level} intervals "
        "apart, and at least {slower} slower). ONNX Runtime's rows compare versions of the ONNX model, PyTorch eager's "
        "versions of the PyTorch original.",
        len(flagged),
    ).format(count=number(len(flagged)), level="95 %", slower="5 %")
    st.warning(
        said + "\n\n" + "\n".join(f"- {md_escape(g.model, 120)}: {md_escape(g.text, 300)}" for g in flagged[-20:])
    )
else:
    st.success(_("No regressions: no version is surely slower than the version before it."))
busy = busy_runs(runs)
if busy:
    st.caption(
        ngettext(
            "{count} of these runs was measured while other processes kept the machine busy: it is compared with "
            "nothing, since its numbers are the other work's as much as the model's. Run it again on a quiet "
            "machine to compare it.",
            "{count} of these runs were measured while other processes kept the machine busy: they are compared "
            "with nothing, since their numbers are the other work's as much as the model's. Run them again on a "
            "quiet machine to compare them.",
            len(busy),
        ).format(count=number(len(busy)))
    )

tuned = latest_tuned(runs)
if tuned:
    st.header(_("Tuned configurations"))
    st.caption(
        _(
            "The newest Tune run of each model on each machine (the Deploy page, or `python -m core tune`): the "
            "session configuration it chose and its median per sample in the final round, beside ONNX Runtime's "
            "defaults measured in the same rounds. Where the defaults stayed, nothing tried was surely faster."
        )
    )
    st.dataframe(tuned_frame(tuned), hide_index=True, width="stretch")

st.header(_("A model across its versions"))
names = sorted({run.model for run in runs})
current = session.current_model()
model = st.selectbox(
    _("Model"),
    names,
    index=names.index(current.name) if current is not None and current.name in names else 0,
    key="dash_trend_model",
)
points = trend([run for run in runs if run.model == model])
frame = trend_frame(points)
versions = frame["version"].nunique()
runs_of = ngettext("{count} run of {model}", "{count} runs of {model}", frame["run"].nunique()).format(
    count=number(frame["run"].nunique()), model=md_escape(model, 120)
)
st.caption(
    ngettext(
        "{runs}, {count} version; bars are each median's {level} interval. Hover a point for its version, who ran it "
        "and the run.",
        "{runs}, {count} versions; bars are each median's {level} interval. Hover a point for its version, who ran it "
        "and the run.",
        versions,
    ).format(runs=runs_of, count=number(versions), level="95 %")
)
latency_tab, speedup_tab = st.tabs([_("Latency"), _("Speedup")])
with latency_tab:
    st.plotly_chart(trend_figure(frame), key="dash_trend", config={"displaylogo": False})
with speedup_tab:
    speedups = frame.dropna(subset=["speedup"])
    if speedups.empty:
        st.info(_("These runs measured no speedup (a speedup needs a baseline: PyTorch eager or ORT DISABLE_ALL)."))
    else:
        st.plotly_chart(trend_figure(speedups, "speedup"), key="dash_speedup", config={"displaylogo": False})

next_steps("history", "benchmark")
