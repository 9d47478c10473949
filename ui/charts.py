"""Chart builders: each takes a DataFrame and returns a plotly figure, so they are tested without a browser."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

__all__ = ["op_count_frame", "op_count_figure"]

SIDES = ("PyTorch layers", "ONNX nodes")
_COLOURS = {"PyTorch layers": "#EE4C2C", "ONNX nodes": "#005CED"}


def op_count_frame(torch_ops: dict[str, int], onnx_ops: dict[str, int]) -> pd.DataFrame:
    """Long form: one row per (side, op) with its count."""
    rows = [(SIDES[0], op, n) for op, n in torch_ops.items()] + [(SIDES[1], op, n) for op, n in onnx_ops.items()]
    return pd.DataFrame(rows, columns=["side", "op", "count"])


def op_count_figure(frame: pd.DataFrame) -> go.Figure:
    """Two bar charts side by side, PyTorch layer types and ONNX op types, most frequent on top."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=SIDES, horizontal_spacing=0.18)
    for col, side in enumerate(SIDES, start=1):
        group = frame[frame["side"] == side].sort_values(["count", "op"], ascending=[True, False])
        fig.add_trace(
            go.Bar(
                x=group["count"],
                y=group["op"],
                name=side,
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
        fig.update_yaxes(type="category", row=1, col=col)
        fig.update_xaxes(title_text="count", row=1, col=col)
    rows = int(frame.groupby("side")["op"].nunique().max()) if not frame.empty else 1
    fig.update_layout(height=min(160 + 24 * rows, 1400), margin={"l": 10, "r": 40, "t": 40, "b": 10})
    return fig
