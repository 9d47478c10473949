"""The worker job behind ``python -m core graph``: read a model file into a view (its external weights only
for their statistics, sampled, from files inside its folder)."""

from __future__ import annotations

from pathlib import Path

from core.graph.build import view_graph
from core.graph.records import GraphRequest, GraphView
from core.model.counts import check_counts
from core.settings import IntakeLimits

__all__ = ["graph_view_job"]


def graph_view_job(request: GraphRequest, limits: IntakeLimits | None = None) -> GraphView:
    """The graph view of the ONNX file the request names; a model past ``limits`` (the server's, as a job) in any
    count is refused before anything is done per node or tensor."""
    import onnx

    path = request.path
    model = onnx.load(path, load_external_data=False)
    check_counts(model, Path(path).name, limits or IntakeLimits())
    return view_graph(model, name=Path(path).stem, folder=Path(path).parent)
