"""The mission's chart for a language model: each generated token's latency against its step, ONNX Runtime and
PyTorch eager on one chart (Benchmark's generate panel). A pure builder as those of ui/charts.py: a DataFrame in, a
figure out, its words translated as it is drawn and every string it shows made text (``escaped``)."""

from __future__ import annotations

import math

import pandas as pd
import plotly.graph_objects as go

from core.graph.palette import engine_colour
from core.i18n import _, number
from core.notes import significant
from ui.charts import escaped, log_ticks, plain

__all__ = ["ENGINES_APART", "FIRST_TOKEN_BEYOND", "token_latency_figure"]


FIRST_TOKEN_BEYOND = 3.0  # a first token slower than this many times the slowest later one is drawn at the edge
ENGINES_APART = 10.0  # engines whose decode steps differ by more than this factor share a log axis


def _y_axis(frame: pd.DataFrame, later: pd.DataFrame, edge: float) -> dict[str, object]:
    """Linear from 0 to ``edge``; a log axis when one engine's steps are ENGINES_APART times another's (eager's
    20 ms beside ONNX Runtime's 0.5 ms would draw the faster one as a line on the floor)."""
    medians = later.groupby("label")["ms"].median() if len(later) else pd.Series(dtype=float)
    positive = frame["ms"][frame["ms"] > 0]
    if len(medians) < 2 or medians.min() <= 0 or medians.max() / medians.min() <= ENGINES_APART or positive.empty:
        return {"title": _("ms per token, the median of the runs"), "range": [0, edge]}
    low = float(positive.min()) * 0.7
    ticks = log_ticks(low, edge)  # every tick written out: "0.05 0.1 0.2", never a bare "5 2" between decades
    return {
        "title": _("ms per token, the median of the runs (log scale)"),
        "type": "log",
        "range": [math.log10(low), math.log10(edge)],
        "tickvals": ticks or None,
        "ticktext": [f"{t:g}" for t in ticks] or None,
    }


@escaped
def token_latency_figure(frame: pd.DataFrame, divergent: int | None = None) -> go.Figure:
    """Each generated token's latency against its step, one line per engine (ONNX Runtime, PyTorch eager) in its
    colour: the mission's chart for a language model. Step 0 is the first token, whose time is the prefill's: it
    is a marker of its own, and one far slower than the steps after it is drawn at the axis's edge with its value
    written out, so that the decode steps keep the height. ``divergent``: the step where the engines' tokens part,
    marked. ``frame``: engine (ort, eager), label, step, ms (the median over the runs)."""
    fig = go.Figure()
    later = frame[frame["step"] > 0]
    top = float(later["ms"].max()) if len(later) else float(frame["ms"].max()) if len(frame) else 1.0
    first = frame[frame["step"] == 0]
    highest = float(first["ms"].max()) if len(first) else 0.0
    clipped = len(later) > 0 and highest > FIRST_TOKEN_BEYOND * top
    edge = 1.15 * (top if clipped else max(top, highest))
    for label, group in frame.groupby("label", sort=False):
        group = group.sort_values("step")
        colour = engine_colour(str(group["engine"].iloc[0]))
        steps = group[group["step"] > 0]
        hover = _("token {step}: {ms} ms")
        fig.add_trace(
            go.Scatter(
                x=steps["step"],
                y=steps["ms"],
                mode="lines+markers",
                name=str(label),
                legendgroup=str(label),
                line={"color": colour},
                marker={"size": 5},
                hovertext=[
                    hover.format(step=number(s), ms=significant(v))
                    for s, v in zip(steps["step"], steps["ms"], strict=True)
                ],
                hoverinfo="text",
            )
        )
        fig.add_trace(_first_token(group[group["step"] == 0], str(label), colour, edge if clipped else None))
    fig.add_trace(  # the legend's key to the markers at step 0 (in each engine's colour on the chart)
        go.Scatter(
            x=[None],
            y=[None],
            mode="markers",
            name=_("first token (prefill)"),
            marker={"size": 10, "color": "#888", "symbol": "diamond"},
            hoverinfo="skip",
        )
    )
    if divergent is not None:
        fig.add_vline(
            x=divergent,
            line_dash="dash",
            line_color="#C4451C",
            annotation_text=plain(_("the tokens part at step {step}").format(step=number(divergent))),
            annotation_position="top right",
        )
    fig.update_layout(
        height=380,
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
        xaxis={
            "title": _("generated token (0: the first, from the prefill)"),
            "range": [-0.6, float(frame["step"].max()) + 0.6 if len(frame) else 1],  # step 0's marker whole
            "tickformat": "d",
        },
        yaxis=_y_axis(frame, later, edge),
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.02},
        hovermode="closest",
    )
    return fig


def _first_token(head: pd.DataFrame, label: str, colour: str, edge: float | None) -> go.Scatter:
    """An engine's first token (step 0, the prefill's time) as a marker; past ``edge`` (when the axis stops short of
    it) drawn at the edge as a triangle, with its value written beside it."""
    beyond = [edge is not None and v > edge for v in head["ms"]]
    said = [_("first token {ms} ms").format(ms=significant(v)) for v in head["ms"]]
    return go.Scatter(
        x=head["step"],
        y=[(edge or 0) * 0.97 if b else v for v, b in zip(head["ms"], beyond, strict=True)],
        mode="markers+text",
        name=_("{engine}: first token (prefill)").format(engine=label),
        legendgroup=label,
        showlegend=False,
        marker={"size": 11, "color": colour, "symbol": ["triangle-up" if b else "diamond" for b in beyond]},
        text=[s if b else "" for s, b in zip(said, beyond, strict=True)],
        textposition="middle right",
        hovertext=said,
        hoverinfo="text",
    )
