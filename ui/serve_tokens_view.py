"""The Deploy page's load test of a language model's server, in tokens: a row per concurrency (time to first token
and between tokens, p50 and p95; tokens per second per stream and in all; errors; streams checked against the same
greedy loop in-process) and tokens per second against concurrency."""

from __future__ import annotations

import math

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from core.deploy import LoadtestReport
from core.i18n import _, number
from core.notes import say, significant
from ui.charts import against_concurrency, escaped
from ui.text import md_escape

__all__ = ["token_frame", "token_results", "tokens_figure"]

_TOTAL, _STREAM = "#7B3FBF", "#2E86AB"


def token_frame(report: LoadtestReport) -> pd.DataFrame:
    """One row per concurrency, numbers as measured (NaN where no stream finished)."""
    return pd.DataFrame(
        [
            {
                "concurrency": r.concurrency, "streams": r.streams, "tokens": r.tokens, "errors": r.errors,
                "ttft_p50_ms": r.ttft_p50_ms, "ttft_p95_ms": r.ttft_p95_ms, "itl_p50_ms": r.itl_p50_ms,
                "itl_p95_ms": r.itl_p95_ms, "stream_tok_s": r.stream_tok_s, "total_tok_s": r.total_tok_s,
                "checked": r.checked, "mismatched": r.mismatched,
            }
            for r in report.tokens
        ]
    )  # fmt: skip


def _pair(p50: float, p95: float) -> str:
    if not (math.isfinite(p50) and math.isfinite(p95)):
        return _("no stream finished")
    return f"{significant(p50)} / {significant(p95)}"


def _table(frame: pd.DataFrame) -> pd.DataFrame:
    """The table as the page shows it: in words where no stream finished, never "nan"."""
    return pd.DataFrame(
        {
            _("concurrency"): frame["concurrency"],
            _("first token ms (p50 / p95)"): [_pair(a, b) for a, b in frame[["ttft_p50_ms", "ttft_p95_ms"]].values],
            _("between tokens ms (p50 / p95)"): [_pair(a, b) for a, b in frame[["itl_p50_ms", "itl_p95_ms"]].values],
            _("tokens/s a stream"): [number(v, 1) if math.isfinite(v) else "—" for v in frame["stream_tok_s"]],
            _("tokens/s in all"): [number(v, 1) for v in frame["total_tok_s"]],
            _("streams (checked, differing)"): [
                f"{number(n)} ({number(c)}, {number(m)})"
                for n, c, m in frame[["streams", "checked", "mismatched"]].values
            ],
            _("errors"): frame["errors"],
        }
    )


@escaped
def tokens_figure(frame: pd.DataFrame) -> go.Figure:
    """Tokens per second in all and per stream against concurrency: where adding streams stops adding tokens."""
    fig = go.Figure()
    for column, name, colour in (
        ("total_tok_s", _("tokens/s in all"), _TOTAL),
        ("stream_tok_s", _("tokens/s a stream"), _STREAM),
    ):
        fig.add_trace(
            go.Scatter(
                x=frame["concurrency"], y=frame[column], name=name, mode="lines+markers", line={"color": colour},
                hovertemplate=_("{rate} tokens/s at concurrency {count}").format(rate="%{y:.3g}", count="%{x}")
                + "<extra></extra>",
            )
        )  # fmt: skip
    return against_concurrency(
        fig, frame, _("concurrent streams"), {"title": _("tokens per second"), "rangemode": "tozero"}
    )


def token_results(report: LoadtestReport) -> None:
    """The load in tokens: the table, the chart, what each stream asked for, the notes."""
    frame = token_frame(report)
    st.table(_table(frame))
    st.plotly_chart(tokens_figure(frame), key="loadtest_tokens")
    st.caption(
        _(
            "Each stream asked for {new} tokens after a prompt of {prompt} ids; each stream's tokens were compared "
            "with the same greedy loop in-process."
        ).format(new=number(report.new_tokens), prompt=number(report.prompt_tokens))
    )
    for note in report.notes:
        (st.warning if note.severity == "warning" else st.caption)(md_escape(say(note), 800))
