"""Chart builders: each takes a DataFrame and returns a plotly figure, so they are tested without a browser. Their
words (titles, axes, legends, hovers) are translated as each figure is drawn, in the reader's language: never at
import, never inside a cached function."""

from __future__ import annotations

import functools
import html
import math
from collections.abc import Callable
from typing import Any, ParamSpec

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from core.graph.palette import ENGINES, FIXED, engine_colour
from core.i18n import N_, _, number
from core.notes import significant

P = ParamSpec("P")


def plain(value: Any) -> Any:
    """A string as plotly shows it, never as markup: plotly renders a subset of HTML (links, styles) in trace
    names, tick labels, text and hover. Line breaks the builders put in stay line breaks."""
    if not isinstance(value, str):
        return value
    return html.escape(value, quote=False).replace("&lt;br&gt;", "<br>")


def _plain_all(values: Any) -> Any:
    if isinstance(values, str):
        return plain(values)
    if isinstance(values, (list, tuple)) or hasattr(values, "tolist"):
        items = values.tolist() if hasattr(values, "tolist") else list(values)
        return [plain(v) for v in items] if any(isinstance(v, str) for v in items) else values
    return values


def escaped(builder: Callable[P, go.Figure]) -> Callable[P, go.Figure]:
    """Every string a figure shows, from the model or the history, turned into text (see ``plain``)."""

    @functools.wraps(builder)
    def build(*args: P.args, **kwargs: P.kwargs) -> go.Figure:
        fig = builder(*args, **kwargs)
        for trace in fig.data:
            for key in ("name", "text", "hovertext", "x", "y", "labels", "parents", "ids"):
                if key in trace and trace[key] is not None:
                    trace[key] = _plain_all(trace[key])
        for axis in ("xaxis", "yaxis"):
            ticks = fig.layout[axis].ticktext
            if ticks is not None:
                fig.layout[axis].ticktext = _plain_all(ticks)
        fig.update_layout(modebar={"orientation": "v"})  # down the right side, never over a title
        return fig

    return build


__all__ = [
    "batch_figure",
    "colour_map",
    "compare_figure",
    "distribution_figure",
    "latency_figure",
    "LATENCY_MARKERS",
    "against_concurrency",
    "log_ticks",
    "ms_bars_layout",
    "speedup_figure",
    "interval",
    "op_count_figure",
    "op_count_frame",
    "quantize_figure",
]

SIDES = (N_("PyTorch layers"), N_("ONNX nodes"))  # the frame's keys, in English; titled with _() when drawn
_COLOURS = {"PyTorch layers": ENGINES["eager"], "ONNX nodes": ENGINES["ort"]}


def op_count_frame(torch_ops: dict[str, int], onnx_ops: dict[str, int]) -> pd.DataFrame:
    """Long form: one row per (side, op) with its count."""
    rows = [(SIDES[0], op, n) for op, n in torch_ops.items()] + [(SIDES[1], op, n) for op, n in onnx_ops.items()]
    return pd.DataFrame(rows, columns=["side", "op", "count"])


@escaped
def op_count_figure(frame: pd.DataFrame) -> go.Figure:
    """Two bar charts side by side, PyTorch layer types and ONNX op types, most frequent on top."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=[_(side) for side in SIDES], horizontal_spacing=0.18)
    for col, side in enumerate(SIDES, start=1):
        group = frame[frame["side"] == side].sort_values(["count", "op"], ascending=[True, False])
        fig.add_trace(
            go.Bar(
                x=group["count"],
                y=group["op"],
                name=_(side),
                orientation="h",
                marker_color=_COLOURS[side],
                text=group["count"],
                textposition="outside",
                cliponaxis=False,
                showlegend=False,
            ),
            row=1,
            col=col,
        )
        fig.update_yaxes(type="category", row=1, col=col, automargin=True)
        fig.update_xaxes(
            title_text=_("count"), row=1, col=col, tickformat="d", dtick=1 if group["count"].max() <= 8 else None
        )
    rows = int(frame.groupby("side")["op"].nunique().max()) if not frame.empty else 1
    fig.update_layout(height=min(160 + 24 * rows, 1400), margin={"l": 10, "r": 40, "t": 40, "b": 10})
    return fig


# Op colours: a fixed palette, assigned in order of first appearance so a model keeps its colours.
_PALETTE = [  # 26 distinct colours (plotly's Alphabet), then Dark24
    "#AA0DFE", "#3283FE", "#85660D", "#782AB6", "#565656", "#1C8356", "#16FF32", "#F7E1A0", "#E2E2E2", "#1CBE4F",
    "#C4451C", "#DEA0FD", "#FE00FA", "#325A9B", "#FEAF16", "#F8A19F", "#90AD1C", "#F6222E", "#1CFFCE", "#2ED9FF",
    "#B10DA1", "#C075A6", "#FC1CBF", "#B00068", "#FBE426", "#FA0087", "#2E91E5", "#E15F99", "#1CA71C", "#FB0D0D",
    "#DA16FF", "#222A2A", "#B68100", "#750D86", "#EB663B", "#511CFB", "#00A08B", "#FB00D1", "#FC0080", "#B2828D",
    "#6C7C32", "#778AAE", "#862A16", "#A777F1", "#620042", "#1616A7", "#DA60CA", "#6C4516", "#0D2A63", "#AF0038",
]  # fmt: skip
_FIXED = FIXED  # providers, latency bins: core.graph.palette, shared with the graph view


def colour_map(keys: list[str]) -> dict[str, str]:
    colours: dict[str, str] = {}
    for key in keys:
        if key not in colours:
            colours[key] = _FIXED.get(key) or _PALETTE[(len(colours)) % len(_PALETTE)]
    return colours


def _bars_per(frame: pd.DataFrame, key: str, columns: dict[str, str], **bar: Any) -> go.Figure:
    """One bar trace per value of column ``key``, in the order they first come, each in its colour (colour_map):
    ``columns`` says what each trace takes from its rows (x, y, text, customdata), ``bar`` plotly's other settings."""
    fig = go.Figure()
    colours = colour_map(list(frame[key].astype(str)))
    for value, group in frame.groupby(key, sort=False):
        taken = {setting: group[column] for setting, column in columns.items()}
        fig.add_trace(go.Bar(name=str(value), marker_color=colours[str(value)], **taken, **bar))
    return fig


def ms_bars_layout(fig: go.Figure, height: int, right: int = 20) -> None:
    """The layout of grouped horizontal bars of ms per call, one category a row, the legend above them (Profile's
    layers against their nodes, its prefill against its decode step)."""
    fig.update_layout(
        barmode="group", height=height, xaxis_title=_("ms per call"),
        yaxis={"type": "category", "automargin": True}, margin={"l": 10, "r": right, "t": 10, "b": 10},
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom"},
    )  # fmt: skip


LATENCY_MARKERS = {"p90": ("diamond", "◆"), "p99": ("x-thin", "✕"), "beyond": ("triangle-right", "▶")}  # caption's too


@escaped
def latency_figure(frame: pd.DataFrame, axis: str = "") -> go.Figure:
    """Median per configuration (bar, with its 95 % interval) and p90/p99 markers. ``frame``: label, engine,
    median_ms, median_low_ms, median_high_ms, p90_ms, p99_ms; ``axis``: the x axis's title, if not per call."""
    fig = go.Figure()
    # the axis's end, a little past the p90s and the intervals (a rare slow call can be 20× the median; a p99 beyond
    # it is drawn at the edge with its value written out)
    edge = 1.15 * float(max(frame["p90_ms"].max(), frame["median_high_ms"].max()))
    fig.add_trace(
        go.Bar(
            y=frame["label"],
            x=frame["median_ms"],
            orientation="h",
            name=_("median"),
            marker_color=[engine_colour(str(e)) for e in frame["engine"]],
            error_x=interval(frame, "median_ms", "median_low_ms", "median_high_ms", color="#333"),
            # written in a bar wide enough to hold it, level: plotly turned it on its side in a thin bar, unreadable
            text=[_("{ms} ms").format(ms=significant(v)) if v >= 0.15 * edge else "" for v in frame["median_ms"]],
            textposition="inside",
            textangle=0,
            insidetextanchor="start",
            hovertemplate="%{y}<br>" + _("median {ms} ms").format(ms="%{x:.3g}") + "<extra></extra>",
        )
    )
    style = {"size": 11, "color": "#222", "line": {"width": 2, "color": "#222"}}  # a thin ✕ is its line alone
    for name in ("p90", "p99"):
        column, symbol = f"{name}_ms", LATENCY_MARKERS[name][0]
        beyond = frame[column] > edge
        fig.add_trace(
            go.Scatter(
                y=frame["label"],
                x=frame[column].where(~beyond, edge * 0.985),
                mode="markers+text",
                name=name,
                marker={**style, "symbol": [(LATENCY_MARKERS["beyond"][0] if b else symbol) for b in beyond]},
                text=[_marker(name, v) if b else "" for v, b in zip(frame[column], beyond, strict=True)],
                textposition="top left",
                hovertext=[_marker(name, v) for v in frame[column]],
                hoverinfo="text",
            )
        )
    fig.update_layout(
        height=120 + 48 * len(frame),
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
        xaxis={"title": axis or _("milliseconds per call"), "range": [0, edge]},
        yaxis={"type": "category", "autorange": "reversed"},
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.02},  # above the first bar, not on it
    )
    return fig


@escaped
def distribution_figure(frame: pd.DataFrame) -> go.Figure:
    """Every measured call, one box per configuration. ``frame``: label, engine, ms (long form)."""
    fig = go.Figure()
    for label, group in frame.groupby("label", sort=False):
        fig.add_trace(
            go.Box(
                x=group["ms"],
                name=str(label),
                orientation="h",
                boxpoints="outliers",
                marker_color=engine_colour(str(group["engine"].iloc[0])),
                showlegend=False,
            )
        )
    ticks = log_ticks(float(frame["ms"].min()), float(frame["ms"].max())) if len(frame) else []
    fig.update_layout(
        height=120 + 48 * frame["label"].nunique(),
        margin={"l": 10, "r": 10, "t": 10, "b": 10},
        xaxis={
            "title": _("milliseconds per call (log scale)"),
            "type": "log",
            "tickvals": ticks or None,
            "ticktext": [f"{t:g}" for t in ticks] or None,
        },
        yaxis={"autorange": "reversed"},
    )
    return fig


def _marker(name: str, ms: float) -> str:
    """A latency marker's words: "p99 12.3 ms"."""
    return _("{name} {ms} ms").format(name=name, ms=significant(ms))


def interval(frame: pd.DataFrame, value: str, low: str, high: str, **style: Any) -> dict[str, Any]:
    """Plotly's error bars for the interval from column ``low`` to column ``high`` around column ``value``."""
    return {
        "type": "data",
        "symmetric": False,
        "array": frame[high] - frame[value],
        "arrayminus": frame[value] - frame[low],
        **style,
    }


def log_ticks(low: float, high: float) -> list[float]:
    """Ticks for a log axis that spans more than a decade: 1–2–5 in each decade (every value written out:
    "2 5 10 20", never a bare "2 5" between decade labels), only the powers of ten past four decades. Within
    one decade the axis's own ticks are fine: an empty list leaves them."""
    if not (math.isfinite(low) and math.isfinite(high)) or low <= 0 or high <= low * 10:
        return []
    first, last = math.floor(math.log10(low)), math.ceil(math.log10(high))
    steps = (1,) if last - first > 4 else (1, 2, 5)
    ticks = [m * 10.0**e for e in range(first, last + 1) for m in steps]
    return [float(f"{t:.6g}") for t in ticks if low / 1.5 <= t <= high * 1.5]


def against_concurrency(
    fig: go.Figure, frame: pd.DataFrame, across: str, yaxis: dict[str, Any], height: int = 320, legend_y: float = -0.3
) -> go.Figure:
    """``fig`` laid out as a load test's chart: the concurrency levels of ``frame`` on a log axis titled ``across``
    (a tick at each level measured), ``yaxis`` up, the legend below."""
    fig.update_layout(
        height=height,
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
        legend={"orientation": "h", "y": legend_y},
        xaxis={"title": across, "type": "log", "tickvals": list(frame["concurrency"])},
        yaxis=yaxis,
    )
    return fig


@escaped
def batch_figure(frame: pd.DataFrame) -> go.Figure:
    """Latency and throughput against batch size, one line per series. ``frame``: series, batch, median_ms,
    throughput, and ``engine`` (eager, ort): a series has its engine's colour, as on the latency chart above it,
    and the series of one engine differ by their dash."""
    titles = (_("Latency per call"), _("Throughput"))
    fig = make_subplots(rows=1, cols=2, subplot_titles=titles, horizontal_spacing=0.12)
    colours = colour_map(list(frame["series"].astype(str)))
    dashes = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")
    seen: dict[str, int] = {}
    for series, group in frame.groupby("series", sort=False):
        group = group.sort_values("batch")
        line = {"color": colours[str(series)]}
        if "engine" in group:
            engine = str(group["engine"].iloc[0])
            line = {"color": engine_colour(engine), "dash": dashes[seen.get(engine, 0) % len(dashes)]}
            seen[engine] = seen.get(engine, 0) + 1
        for col, column in ((1, "median_ms"), (2, "throughput")):
            fig.add_trace(
                go.Scatter(
                    x=group["batch"],
                    y=group[column],
                    mode="lines+markers",
                    name=str(series),
                    legendgroup=str(series),
                    showlegend=col == 1,
                    line=line,
                ),
                row=1,
                col=col,
            )
    fig.update_xaxes(title_text=_("batch size"), type="log", dtick=0.30103)
    fig.update_yaxes(title_text=_("ms (median)"), row=1, col=1, rangemode="tozero")
    fig.update_yaxes(title_text=_("items per second"), row=1, col=2, rangemode="tozero")
    fig.update_layout(height=380, margin={"l": 10, "r": 10, "t": 40, "b": 10}, legend={"orientation": "h", "y": -0.25})
    return fig


@escaped
def speedup_figure(frame: pd.DataFrame, baseline: str) -> go.Figure:
    """Speedup against the baseline with its 95 % interval; 1× marked. ``frame``: label, speedup, low, high."""
    fig = go.Figure(
        go.Bar(
            y=frame["label"],
            x=frame["speedup"],
            orientation="h",
            marker_color=["#1C8356" if v >= 1 else "#C4451C" for v in frame["speedup"]],
            error_x=interval(frame, "speedup", "low", "high", color="#333"),
            text=[f"{number(v, 2)}×" for v in frame["speedup"]],
            textposition="inside",
            insidetextanchor="start",
        )
    )
    fig.add_vline(x=1, line_dash="dash", line_color="#555", annotation_text=plain(f"{baseline} = 1×"))
    fig.update_layout(
        height=110 + 44 * len(frame),
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
        xaxis={
            "title": plain(_("speedup against {baseline} (higher is faster)").format(baseline=baseline)),
            "rangemode": "tozero",
        },
        yaxis={"type": "category", "autorange": "reversed"},
    )
    return fig


@escaped
def compare_figure(frame: pd.DataFrame) -> go.Figure:
    """Runs side by side: median per configuration, one colour per run, p90 as a marker. ``frame``: run,
    configuration, median_ms, p90_ms."""
    hover = (
        "%{x}<br>"
        + _("median {ms} ms").format(ms="%{y:.3g}")
        + "<br>"
        + _("p90 {ms} ms").format(ms="%{customdata:.3g}")
        + "<extra>%{fullData.name}</extra>"
    )
    columns = {"x": "configuration", "y": "median_ms", "customdata": "p90_ms"}
    fig = _bars_per(frame, "run", columns, hovertemplate=hover)
    fig.update_layout(
        barmode="group",
        height=420,
        margin={"l": 10, "r": 10, "t": 10, "b": 10},
        yaxis={"title": _("milliseconds per call (median)"), "rangemode": "tozero"},
        xaxis={"type": "category"},
        legend={"orientation": "h", "y": -0.3},
    )
    return fig


@escaped
def quantize_figure(frame: pd.DataFrame) -> go.Figure:
    """Size against latency, one point per variant, coloured by cosine similarity with fp32. ``frame``:
    label, size_mb, median_ms, cosine (NaN for the original), p90_ms."""
    cosine = frame["cosine"].fillna(1.0)
    fig = go.Figure(
        go.Scatter(
            x=frame["size_mb"],
            y=frame["median_ms"],
            mode="markers+text",
            text=frame["label"],
            textposition="top center",
            error_y={
                "type": "data",
                "symmetric": False,
                "array": frame["p90_ms"] - frame["median_ms"],
                "arrayminus": [0] * len(frame),
            },
            marker={
                "size": 16,
                "color": cosine,
                "colorscale": "RdYlGn",
                "cmin": float(min(cosine.min(), 0.99)),
                "cmax": 1.0,
                "colorbar": {"title": _("cosine vs fp32")},
                "line": {"width": 1, "color": "#333"},
            },
            hovertemplate="%{text}<br>%{x:.3g} MB<br>" + _("median {ms} ms").format(ms="%{y:.3g}") + "<extra></extra>",
        )
    )
    fig.update_layout(
        height=460,
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
        xaxis={"title": _("file size (MB)"), "rangemode": "tozero"},
        yaxis={"title": _("median latency, ms (bar to p90)"), "rangemode": "tozero"},
    )
    return fig
