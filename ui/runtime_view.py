"""Runtimes on the pages (core.runtime.runtimes): which build of ONNX Runtime runs a page's job, picked where there is
more than one, and the Partition page's side by side of two runtimes and the nodes each provider declined."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.i18n import _, number
from core.jobs import PARTITION
from core.jobs.cluster.client import LOCAL
from core.jobs.wire import encode
from core.notes import say
from core.partition import PartitionReport, PartitionRequest, PartitionResult
from core.runtime.ort import short_name
from core.runtime.runtimes import DEFAULT, describe, runtime_names
from ui import jobs, targets
from ui.text import escaped_frame

__all__ = [
    "compare_section",
    "declined_section",
    "runtime_choices",
    "runtime_picker",
    "runtime_providers",
    "runtimes_picker",
    "side_by_side_frame",
]


def runtime_choices() -> list[str]:
    """The runtimes a page may offer: this server's (on a cluster target, its own are not known here: default)."""
    return runtime_names() if targets.chosen() == LOCAL else [DEFAULT]


def _label(name: str) -> str:
    info = describe(name)  # its own Python, asked once per server process
    if info.error:
        return _("{name} (does not work: {error})").format(name=name, error=info.error[:80])
    return f"{name} ({info.package} {info.onnxruntime})"


def _help() -> str:
    return _("`make runtime-NAME` builds another; `python -m core runtimes` lists them.")


def runtime_picker(key: str) -> str:
    """The runtime the page's job runs on: a picker when this server has more than one, else the default."""
    choices = runtime_choices()
    if len(choices) < 2:
        return DEFAULT
    picked = st.selectbox(
        _("Runtime (the build of ONNX Runtime that runs it)"), choices, format_func=_label, key=key, help=_help()
    )
    return str(picked or DEFAULT)


def runtimes_picker(key: str) -> list[str]:
    """The runtimes the page's jobs run on, one job each (Tune's candidates across builds): the same choices as
    ``runtime_picker``, several at once, the default first; the default alone where this server has one."""
    choices = runtime_choices()
    if len(choices) < 2:
        return [DEFAULT]
    picked = st.multiselect(
        _("Runtimes (the builds of ONNX Runtime to try, each in its own worker)"),
        choices,
        default=[DEFAULT],
        format_func=_label,
        key=key,
        help=_help(),
    )
    return [str(name) for name in picked] or [DEFAULT]


def runtime_providers(runtime: str) -> list[str] | None:
    """The providers of ``runtime``'s build (None for the default: the server's own, as the page reads them)."""
    return None if runtime == DEFAULT else describe(runtime).providers


def declined_section(report: PartitionReport) -> None:
    """The nodes a provider asked for declined, where each went and why (from ORT's log, or tried alone)."""
    if not report.declined:
        return
    frame = pd.DataFrame(
        {
            _("node"): [d.name for d in report.declined],
            _("op"): [d.op_type for d in report.declined],
            _("declined by"): [short_name(d.provider) for d in report.declined],
            _("runs on"): [short_name(d.placed) for d in report.declined],
            _("why"): [say(d.reason) for d in report.declined],
        }
    )
    st.markdown(_("**Nodes the providers you asked for declined**"))
    st.dataframe(frame, hide_index=True, width="stretch")


def side_by_side_frame(results: list[PartitionResult]) -> pd.DataFrame:
    """One column per runtime: nodes (pieces) per provider, then the declined nodes, copies and warnings."""
    reports = [result.reports[0] for result in results]
    providers = list(dict.fromkeys(p for report in reports for p in report.providers))
    rows: dict[str, list[str]] = {}
    for provider in providers:
        rows[short_name(provider)] = [
            f"{number(r.providers[provider])} ({number(sum(s.provider == provider for s in r.subgraphs))})"
            if r.providers.get(provider)
            else "—"
            for r in reports
        ]
    rows[_("declined")] = [number(len(r.declined)) for r in reports]
    rows[_("copies")] = [number(len(r.copies)) for r in reports]
    rows[_("warnings")] = [number(sum(n.severity == "warning" for n in r.notes)) for r in reports]
    columns = [f"{result.runtime} ({result.onnxruntime})" for result in results]
    return pd.DataFrame(list(rows.values()), index=list(rows), columns=columns)


def compare_section(result: PartitionResult, request: PartitionRequest, key: str) -> None:
    """The same model placed by another runtime, with every provider of its own, beside ``result``."""
    others = [name for name in runtime_choices() if name != result.runtime]
    if not others:
        return
    st.header(_("Side by side with another runtime"), anchor="runtimes")
    other = st.selectbox(
        _("Compare with"), ["", *others], format_func=lambda n: _label(n) if n else "—", key=f"{key}_compare"
    )
    if not other:
        return
    asked = PartitionRequest(path=request.path, level=request.level, runtime=str(other))
    kept = st.session_state.get(f"{key}_compared")
    if kept is None or kept[0] != encode([asked, result.model]):
        label = _("Partitioning “{name}” on {runtime}").format(name=result.model, runtime=other)
        kept = (encode([asked, result.model]), jobs.run(PARTITION, asked, label))
        st.session_state[f"{key}_compared"] = kept
    compared: PartitionResult = kept[1]
    st.caption(_("Each runtime with every provider of its build, at {level}; a cell: nodes (pieces).").format(
        level=compared.reports[0].level
    ))  # fmt: skip
    st.table(escaped_frame(side_by_side_frame([result, compared]).reset_index(names=_("provider"))), hide_index=True)
    for warned in (n for n in compared.reports[0].notes if n.severity == "warning"):
        st.warning(say(warned))  # the app's own words: provider and runtime names
    declined_section(compared.reports[0])
