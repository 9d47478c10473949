"""The worker job behind ``python -m core graph``: read a model file (never its external weights) into a view."""

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
    return view_graph(model, name=Path(path).stem)
