"""History: every saved benchmark run, filtered by model, machine and date, and compared in one chart."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pandas as pd
import streamlit as st

from core.browser import browser_report
from core.errors import WorkbenchError
from core.i18n import _, ngettext, number
from core.notes import say
from core.runtime.runs import KINDS
from core.store.history import RunSummary, inputs_text
from ui import pages, session, uploads
from ui.bench_view import environment_section, results_frame, results_section
from ui.charts import compare_figure
from ui.dashboard_view import date_span
from ui.jobs import stop_with_error
from ui.library_view import other_versions
from ui.needs import next_steps
from ui.text import md_escape


def _default_comparison(found: list[RunSummary], linked: RunSummary | None) -> list[str]:
    """The linked run and the run of its model before it; else the newest two runs of one model."""
    model = linked.model if linked is not None else found[0].model
    ids = [r.id for r in found if r.model == model]
    if linked is None:
        return ids[:2]
    at = ids.index(linked.id) if linked.id in ids else 0
    return [linked.id, *ids[at + 1 : at + 2]]


st.title(_("History"))
st.markdown(
    _(
        "Every benchmark run is saved with its settings, results and the machine it ran on, from the Benchmark page "
        "and from `python -m core bench`. Compare runs to see what a new export, another optimization level or "
        "another machine changed. Timings from different machines compare machines, not just models."
    )
)

who = session.who()
with st.expander(_("Import a browser's result")):
    st.markdown(
        _(
            "A page made by `python -m core browser-bench` benchmarks a model in whatever browser opens it and offers "
            "its result as a JSON file: import it here to see it beside this server's runs."
        )
    )
    uploaded = st.file_uploader(_("Result file (JSON)"), type=["json"], key="history_import")
    if uploaded is not None and st.session_state.get("history_imported") != uploaded.file_id:
        try:
            imported = browser_report(json.loads(uploads.read_bytes(uploaded)), imported_at=datetime.now(UTC))
            session.store().save(imported, owner=who.user, team=who.team)
        except ValueError as exc:
            st.error(_("This file is not JSON ({error}); give the result file the browser page downloaded.").format(
                error=md_escape(str(exc), 300)
            ))  # fmt: skip
        except WorkbenchError as exc:
            st.error(md_escape(str(exc), 600))
        else:
            st.session_state["history_imported"] = uploaded.file_id
            session.set_page_param("run", imported.id)
            st.success(
                _("Saved as run {run}: {headline}").format(
                    run=imported.id, headline=md_escape(say(imported.headline), 300)
                )
            )
try:
    store = session.store()
    models, machines = store.distinct("model", team=who.team), store.distinct("machine", team=who.team)
    linked = store.summary(session.page_param("run")) if session.page_param("run") else None
except WorkbenchError as exc:
    stop_with_error(exc)
if linked is not None and linked.team != who.team:
    linked = None  # another team's run: as if there were none
if session.page_param("run") and linked is None:
    st.warning(_("The run this link names is not in this history, or it is not your team's."))
    session.set_page_param("run", "")
if not models:
    st.info(_("No benchmark runs yet."))
    pages.link("benchmark", _("Run a benchmark"))
    st.stop()

current = session.current_model()
left, mid, right = st.columns(3)
if linked is not None:
    default_models = [linked.model]  # a run's permalink: its model's runs, that run opened below
else:
    default_models = [current.name] if current is not None and current.name in models else []  # the current model's
chosen_models = left.multiselect(
    _("Models"),
    models,
    default=default_models,
    key="history_models",
    placeholder=_("all models"),
)
chosen_machines = mid.multiselect(_("Machines"), machines, key="history_machines", placeholder=_("all machines"))
since, until = date_span(right, 365, "history_dates")
found = store.runs(chosen_models or None, chosen_machines or None, since, until, team=who.team)
if linked is not None and all(r.id != linked.id for r in found):
    found = [linked, *found]  # the linked run, whatever the dates
if not found:
    st.info(_("No run matches these filters."))
    st.stop()

table = pd.DataFrame(
    {
        _("run"): [r.id for r in found],
        _("when (UTC)"): [r.created_at.strftime("%Y-%m-%d %H:%M") for r in found],
        _("kind"): [_(KINDS[r.kind].TITLE) if r.kind in KINDS else r.kind for r in found],
        # a run measured elsewhere (a browser's result file): when it came in; it sorts by when it was measured
        _("imported (UTC)"): [f"{r.imported_at:%Y-%m-%d %H:%M}" if r.imported_at else "" for r in found],
        _("model"): [r.model for r in found],
        _("machine"): [r.machine for r in found],
        _("by"): [r.owner or _("anonymous") for r in found],
        "CPU": [r.cpu for r in found],
        _("configurations"): [r.configurations for r in found],
        _("headline"): [say(r.headline) for r in found],  # kept as data: said in the reader's language
        _("inputs"): [r.inputs for r in found],
    }
)
st.markdown(
    ngettext("**{count} run**, newest first", "**{count} runs**, newest first", len(found)).format(
        count=number(len(found))
    )
)
st.dataframe(  # a data grid shows text as text: nothing to escape
    table,
    hide_index=True,
    width="stretch",
    column_config={  # sized to their header, two models' names read "ch_PP-OCR" and "ch_ppocr_"
        _("model"): st.column_config.TextColumn(width="medium"),
        _("headline"): st.column_config.TextColumn(width="large"),
    },
)

labels = {
    r.id: f"{r.id} · {r.model} · {r.machine} · {r.owner or _('anonymous')} · {r.created_at:%Y-%m-%d %H:%M}"
    for r in found
}
compare = st.multiselect(
    _("Runs to compare"),
    list(labels),
    default=_default_comparison(found, linked),
    format_func=lambda run_id: labels[run_id],
    key="history_compare",
)
if compare:
    reports = [session.saved_run(run_id) for run_id in compare]
    frames = [results_frame(r).assign(run=labels[r.id]) for r in reports]
    both = pd.concat(frames, ignore_index=True).rename(columns={"label": "configuration"})
    st.markdown(_("**Median latency per configuration**, one colour per run (hover for p90)."))
    st.plotly_chart(
        compare_figure(both[["run", "configuration", "median_ms", "p90_ms"]]),
        key="history_chart",
        config={"displaylogo": False},
    )
    st.markdown(_("**What each run measured on**"))
    st.dataframe(
        pd.DataFrame(
            {_("run"): [labels[r.id] for r in reports], _("inputs"): [inputs_text(r.settings) for r in reports]}
        ),
        hide_index=True,
        width="stretch",
    )
    pivot = both.pivot_table(index="configuration", columns="run", values="median_ms", aggfunc="first", sort=False)
    pivot.index.name = _("configuration")
    st.dataframe(pivot.round(4), width="stretch")

    opened = compare.index(linked.id) if linked is not None and linked.id in compare else 0
    shown = st.selectbox(
        _("Open a run"), compare, index=opened, format_func=lambda run_id: labels[run_id], key="history_open"
    )
    session.set_page_param("run", shown)  # the run's permalink is this page's address
    report = next(r for r in reports if r.id == shown)
    owner = next((r.owner for r in found if r.id == shown), "")
    st.caption(
        _("Run {run}, by {owner}. Its permalink is this page's address.").format(
            run=shown, owner=md_escape(owner or _("anonymous"), 120)
        )
    )
    measured = report.model_id
    if current is not None and current.format == "onnx" and measured and measured in other_versions(current):
        pages.link(  # another version of the model, kept in the library: tensor by tensor against the current one
            "compare", _("Compare the current model with the version this run measured"), b=measured
        )
    with st.container(border=True):
        results_section(report, key=f"history_{report.id}")
        environment_section(report)

next_steps("benchmark", "dashboard", "model")
