"""A profile's parts beyond one call: a language model's prefill and decode step side by side per op type (a grouped
bar chart and each phase's slowest nodes), and each execution provider's share of the nodes and of the time."""

from __future__ import annotations

from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from core.i18n import _, number
from core.notes import significant
from core.profile import ProfileReport
from core.profile.records import EagerProfile, PhaseProfile
from core.runtime.ort import short_name
from ui.charts import escaped, ms_bars_layout

__all__ = [
    "eager_phases_frame", "phase_names", "phases_figure", "phases_frame", "phases_section", "providers_frame",
    "providers_section",
]  # fmt: skip

_PHASES = {"prefill": "#005CED", "decode": "#7FB2FF"}  # ONNX Runtime's blue (core.graph.palette), and a lighter one
MAX_OPS = 12  # op types on the chart: those that take the most in either phase


def phases_frame(prefill: PhaseProfile, decode: PhaseProfile) -> pd.DataFrame:
    """Per op type, ms per call in each phase and its share of that call, the op types that take the most in either
    phase first."""
    before = {t.op_type: t for t in prefill.op_types}
    after = {t.op_type: t for t in decode.op_types}
    ops = sorted(
        before.keys() | after.keys(),
        key=lambda op: -max(before[op].mean_ms if op in before else 0.0, after[op].mean_ms if op in after else 0.0),
    )
    return pd.DataFrame(
        [
            {
                "op_type": op,
                "prefill_ms": before[op].mean_ms if op in before else 0.0,
                "prefill_share": before[op].share if op in before else 0.0,
                "decode_ms": after[op].mean_ms if op in after else 0.0,
                "decode_share": after[op].share if op in after else 0.0,
            }
            for op in ops
        ],
        columns=["op_type", "prefill_ms", "prefill_share", "decode_ms", "decode_share"],
    )


def eager_phases_frame(prefill: EagerProfile, decode: EagerProfile) -> pd.DataFrame:
    """PyTorch eager's two steps per aten op, headed in the reader's language: ms per call in each and its share of
    that call, the ops that take the most in either step first (at most MAX_OPS)."""
    before = {op.name: op for op in prefill.ops}
    after = {op.name: op for op in decode.ops}
    ops = sorted(
        before.keys() | after.keys(),
        key=lambda op: -max(before[op].mean_ms if op in before else 0.0, after[op].mean_ms if op in after else 0.0),
    )[:MAX_OPS]

    def cell(profile: dict[str, Any], op: str) -> str:
        return f"{significant(profile[op].mean_ms, 3)} ({profile[op].share:.0%})" if op in profile else "—"

    return pd.DataFrame(
        {
            _("aten op"): ops,
            _("prefill, ms per call (share)"): [cell(before, op) for op in ops],
            _("decode, ms per call (share)"): [cell(after, op) for op in ops],
        }
    )


def phase_names(prefill: PhaseProfile, decode: PhaseProfile) -> dict[str, str]:
    """The two phases' names on a chart, in the reader's language."""
    return {
        "prefill": _("prefill ({tokens} tokens)").format(tokens=number(prefill.new_tokens)),
        "decode": _("decode (1 token after {past})").format(past=number(decode.past)),
    }


@escaped
def phases_figure(frame: pd.DataFrame, names: dict[str, str]) -> go.Figure:
    """Prefill and decode step, ms per call by op type, grouped: the op type that takes the most on top."""
    shown = frame.head(MAX_OPS).iloc[::-1]
    fig = go.Figure()
    for phase in ("prefill", "decode"):
        fig.add_trace(
            go.Bar(
                x=shown[f"{phase}_ms"],
                y=shown["op_type"],
                orientation="h",
                name=names[phase],
                marker_color=_PHASES[phase],
                text=[_("{ms} ms").format(ms=significant(v)) for v in shown[f"{phase}_ms"]],
                textposition="outside",
                cliponaxis=False,
            )
        )
    ms_bars_layout(fig, 140 + 40 * len(shown), right=60)  # room for the bars' labels
    return fig


def _nodes_table(phase: PhaseProfile) -> pd.DataFrame:
    return pd.DataFrame(
        {
            _("node"): [n.name for n in phase.nodes[:10]],
            _("op type"): [n.op_type for n in phase.nodes[:10]],
            _("ms per call"): [significant(n.mean_ms, 4) for n in phase.nodes[:10]],
            _("share of the call (%)"): [significant(n.share * 100, 3) for n in phase.nodes[:10]],
        }
    )


def phases_section(report: ProfileReport, key: str) -> None:
    """A language model's prefill and one decode step after it, per op type side by side, and their slowest nodes."""
    prefill, decode = report.phases.get("prefill"), report.phases.get("decode")
    if prefill is None or decode is None:
        return
    names = phase_names(prefill, decode)
    st.markdown(
        _(
            "**Prefill and one decode step**, each profiled on its own: the prompt's {tokens} tokens at once "
            "({prefill} ms), then one new token on the cache they left ({decode} ms). Prefill runs every weight "
            "over the whole prompt; a decode step runs them over one token and reads the whole cache."
        ).format(
            tokens=number(prefill.new_tokens), prefill=significant(prefill.call_ms), decode=significant(decode.call_ms)
        )
    )
    frame = phases_frame(prefill, decode)
    st.plotly_chart(phases_figure(frame, names), key=f"{key}_phases", config={"displaylogo": False})
    left, right = st.columns(2)
    for column, phase, profile in ((left, "prefill", prefill), (right, "decode", decode)):
        column.markdown(_("**Slowest nodes, {phase}**").format(phase=names[phase]))
        column.dataframe(_nodes_table(profile), hide_index=True, width="stretch")  # a grid shows text as text
    if report.eager is not None and report.eager_decode is not None:
        st.markdown(
            _(
                "**PyTorch eager, the same two steps**: the prompt at once ({prefill} ms), then one new token on the "
                "cache its own prefill left ({decode} ms), against ONNX Runtime's {ort_prefill} and {ort_decode} ms."
            ).format(
                prefill=significant(report.eager.call_ms),
                decode=significant(report.eager_decode.call_ms),
                ort_prefill=significant(prefill.call_ms),
                ort_decode=significant(decode.call_ms),
            )
        )
        st.dataframe(eager_phases_frame(report.eager, report.eager_decode), hide_index=True, width="stretch")


def providers_frame(report: ProfileReport) -> pd.DataFrame:
    """Each provider's nodes and time, with their shares, headed in the reader's language."""
    return pd.DataFrame(
        {
            _("provider"): [short_name(p.provider) for p in report.providers],
            _("nodes"): [number(p.nodes) for p in report.providers],
            _("share of the nodes"): [f"{p.node_share:.0%}" for p in report.providers],
            _("ms per call"): [significant(p.mean_ms, 4) for p in report.providers],
            _("share of the kernels' time"): [f"{p.time_share:.0%}" for p in report.providers],
        }
    )


def providers_section(report: ProfileReport) -> None:
    """Where the kernels ran, per provider: shown when more than one ran them or the runtime is not the default."""
    if len(report.providers) < 2 and report.runtime == "default":
        return
    st.markdown(
        _("**By execution provider** (the runtime {runtime}): the nodes each ran and their time.").format(
            runtime=report.runtime
        )
    )
    st.dataframe(providers_frame(report), hide_index=True, width="stretch")
