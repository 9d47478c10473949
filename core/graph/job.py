"""The worker job behind ``python -m core graph``: read a model file into a view (its external weights only
for their statistics, sampled, from files inside its folder)."""

from __future__ import annotations

from pathlib import Path

from core.access import ReadPath
from core.graph.build import view_graph
from core.graph.records import GraphView

__all__ = ["graph_view_job"]


def graph_view_job(path: ReadPath) -> GraphView:
    """The graph view of the ONNX file at ``path``."""
    import onnx

    model = onnx.load(path, load_external_data=False)
    return view_graph(model, name=Path(path).stem, folder=Path(path).parent)
