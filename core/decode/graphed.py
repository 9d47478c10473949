"""Decode's job for a small model: the decoding and the graph view from one worker, where two workers each took
one (and the warm pool then started two replacements, 0.4 CPU-seconds each, while the page was being drawn)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from core.decode.decoder import decode_model
from core.decode.records import DecodedModel, DecodeRequest
from core.graph.job import graph_view_job
from core.graph.records import GraphRequest, GraphView
from core.settings import IntakeLimits

__all__ = ["DecodedWithGraph", "decode_with_graph"]


@dataclass(kw_only=True)
class DecodedWithGraph:
    """The decoding and the graph view of one file; no view when it could not be made (the page then asks the
    graph's own job, which says why)."""

    decoded: DecodedModel
    view: GraphView | None


def decode_with_graph(
    request: DecodeRequest,
    progress: Callable[[float, str], None] | None = None,
    limits: IntakeLimits | None = None,
) -> DecodedWithGraph:
    """``decode_model`` of the request, then ``graph_view_job`` of the same file, in one worker. A model past
    ``limits`` is refused by the decoding, as by that job alone."""
    decoded = decode_model(request, progress, limits)
    try:
        view: GraphView | None = graph_view_job(GraphRequest(path=request.path), limits)
    except Exception:  # the graph's own job, run next by the page, says what went wrong
        view = None
    return DecodedWithGraph(decoded=decoded, view=view)
