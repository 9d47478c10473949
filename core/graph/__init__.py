"""The graph view's data: a model's nodes, labelled edges and nested groups, for the JS renderer."""

from __future__ import annotations

from core.graph.build import view_graph
from core.graph.job import graph_view_job
from core.graph.records import Folded, GraphView, ViewEdge, ViewGroup, ViewNode

__all__ = ["Folded", "GraphView", "ViewEdge", "ViewGroup", "ViewNode", "graph_view_job", "view_graph"]
