"""The Dashboard's tables and charts: latest results per model and machine, a model's trend across versions."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime, time, timedelta
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from core.errors import WorkbenchError
from core.i18n import _
from core.notes import significant
from core.store.dashboard import Latest, Newest, Point, Tuned
from ui.charts import colour_map, escaped, interval, plain
from ui.text import md_escape

__all__ = ["date_span", "latest_frame", "same_file_notes", "trend_figure", "trend_frame", "tuned_frame"]


def date_span(container: Any, days: int, key: str) -> tuple[datetime | None, datetime | None]:
    """A "Dates" filter in ``container`` (the last ``days`` days by default): from the first day's start to the
    last day's end, or (None, None) while only one end is picked."""
    today = date.today()
    span = container.date_input(_("Dates"), (today - timedelta(days=days), today), key=key)
    if isinstance(span, tuple) and len(span) == 2:
        return datetime.combine(span[0], time.min), datetime.combine(span[1], time.max)
    return None, None


def same_file_notes(rows: list[Latest]) -> list[str]:
    """One line (Markdown, escaped) per version the table lists under several model names: the same bytes
    uploaded under another name (方向分类.onnx, a copy of ch_ppocr_mobile_v2.0_cls_infer.onnx) are rows of
    their own, a model being its name here; the line says they measure one file."""
    names: dict[str, list[str]] = {}
    for row in rows:
        if row.version and row.model not in names.setdefault(row.version, []):
            names[row.version].append(row.model)
    return [
        _("{names} are one file under {count} names (version {version}): their rows measure the same model.").format(
            names=", ".join(f"**{md_escape(n, 80)}**" for n in shared), count=len(shared), version=version
        )
        for version, shared in names.items()
        if len(shared) > 1
    ]


def _newest_columns(rows: Sequence[Newest]) -> dict[str, list[Any]]:
    """The columns that end both tables: which version the newest run measured, who ran it and when, how many runs
    there are and the newest's id."""
    return {
        _("version"): [r.version for r in rows],
        _("by"): [r.owner or _("anonymous") for r in rows],
        _("when (UTC)"): [r.created_at[:16].replace("T", " ") for r in rows],
        _("runs"): [r.runs for r in rows],
        _("latest run"): [r.run_id for r in rows],
    }


def latest_frame(rows: list[Latest]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            _("model"): [r.model for r in rows],
            _("machine"): [r.machine for r in rows],
            _("regressed"): [_("⚠ slower than the version before") if r.regressed else "" for r in rows],
            _("fastest"): [r.fastest for r in rows],
            _("median ms"): [round(r.fastest_ms, 4) for r in rows],
            _("speedup"): [round(r.speedup, 2) if r.speedup is not None else None for r in rows],
            **_newest_columns(rows),
        }
    )


def _chosen(row: Tuned) -> str:
    """The configuration a tuning run chose, in the reader's language (from its saved settings)."""
    from core.runtime.session_config import SessionConfig
    from core.tune.search import config_label

    try:
        return config_label(SessionConfig.from_data(row.settings))
    except (WorkbenchError, TypeError):  # saved by another version of the app: its words as saved
        return row.chosen


def tuned_frame(rows: list[Tuned]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            _("model"): [r.model for r in rows],
            _("machine"): [r.machine for r in rows],
            _("chosen"): [_chosen(r) for r in rows],
            _("median ms (95 % CI)"): [
                f"{significant(r.median_ms)} ({significant(r.low_ms)}–{significant(r.high_ms)})" for r in rows
            ],
            _("defaults ms"): [significant(r.default_ms) for r in rows],
            _("speedup"): [round(r.speedup, 2) if r.speedup is not None else None for r in rows],
            **_newest_columns(rows),
        }
    )


def trend_frame(points: list[Point]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "when": pd.to_datetime([p.created_at for p in points], utc=True),
            "series": [f"{p.configuration} · {p.machine}" for p in points],
            "median_ms": [p.median_ms for p in points],
            "low_ms": [p.low_ms for p in points],
            "high_ms": [p.high_ms for p in points],
            "speedup": [p.speedup for p in points],
            "version": [p.version for p in points],
            "owner": [p.owner or _("anonymous") for p in points],
            "run": [p.run_id for p in points],
        }
    )


_MIN_SPAN = pd.Timedelta(days=1)  # the narrowest time axis the trend draws


@escaped
def trend_figure(frame: pd.DataFrame, value: str = "median_ms") -> go.Figure:
    """One line per configuration and machine across time, a marker per run (its version and who ran it on
    hover), the median's 95 % interval as error bars. ``value``: median_ms or speedup."""
    fig = go.Figure()
    colours = colour_map(list(frame["series"]))
    for series, group in frame.groupby("series", sort=False):
        latency = value == "median_ms"
        hover = [
            [plain(v), plain(o), plain(r)]
            for v, o, r in zip(group["version"], group["owner"], group["run"], strict=True)
        ]
        fig.add_trace(
            go.Scatter(
                x=group["when"],
                y=group[value],
                name=str(series),
                mode="lines+markers",
                marker={"color": colours[str(series)], "size": 8},
                line={"color": colours[str(series)]},
                error_y=interval(group, "median_ms", "low_ms", "high_ms", thickness=1) if latency else None,
                customdata=hover,
                hovertemplate=(
                    "%{x|%Y-%m-%d %H:%M}<br>"
                    + (_("median {value} ms") if latency else _("{value}× faster")).format(value="%{y:.3g}")
                    + "<br>"
                    + _("version {version}<br>by {owner}<br>run {run}").format(
                        version="%{customdata[0]}", owner="%{customdata[1]}", run="%{customdata[2]}"
                    )
                    + "<extra>%{fullData.name}</extra>"
                ),
            )
        )
    fig.update_layout(
        height=380,
        margin={"l": 10, "r": 10, "t": 10, "b": 10},
        yaxis={
            "title": _("milliseconds per call (median)") if value == "median_ms" else _("speedup against the baseline"),
            "rangemode": "tozero",
        },
        legend={"orientation": "h", "y": -0.25},
    )
    when = pd.to_datetime(frame["when"], utc=True)
    span = when.max() - when.min() if len(when) else pd.Timedelta(0)
    if len(when) and span < _MIN_SPAN:  # one run, or a few minutes apart: a day around them, not microseconds
        pad = (_MIN_SPAN - span) / 2
        fig.update_xaxes(range=[when.min() - pad, when.max() + pad], tickformat="%d %b %H:%M")
    return fig
