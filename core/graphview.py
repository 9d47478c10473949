"""Lay out an ONNX graph for drawing: layers from inputs to outputs, order within a layer by neighbours.

Positions are computed once in the worker; the page draws any part of them (a window of layers, or the
neighbourhood of one node) so that graphs with thousands of nodes stay usable.
"""

from __future__ import annotations

from collections import defaultdict, deque
from dataclasses import dataclass, field
from typing import Any

__all__ = ["GraphNode", "GraphEdge", "GraphLayout", "layout_graph", "neighbourhood"]


@dataclass
class GraphNode:
    id: str  # "n12" for node 12, "in:x" / "out:y" for graph inputs and outputs
    label: str
    op_type: str  # "input" / "output" for the pseudo nodes
    x: float
    y: float
    layer: int
    weights: int = 0  # parameters held by this node's initializer inputs
    detail: str = ""  # dtype and shape, for graph inputs and outputs


@dataclass
class GraphEdge:
    source: str
    target: str
    tensor: str


@dataclass
class GraphLayout:
    graph: str
    nodes: list[GraphNode] = field(default_factory=list)
    edges: list[GraphEdge] = field(default_factory=list)
    layers: int = 0
    has_cycle: bool = False


def layout_graph(graph: Any, path: str, weights: dict[str, int] | None = None) -> GraphLayout:
    """Layered layout of one GraphProto (iterative, so deep or cyclic graphs cannot blow the stack)."""
    from core.intake import type_text

    weights = weights or {}
    initializers = {t.name for t in graph.initializer}
    producers: dict[str, str] = {}
    labels: dict[str, tuple[str, str, int]] = {}
    details: dict[str, str] = {}
    for value in graph.input:
        if value.name not in initializers:
            producers[value.name] = f"in:{value.name}"
            labels[f"in:{value.name}"] = (value.name, "input", 0)
            details[f"in:{value.name}"] = type_text(value.type)
    for index, node in enumerate(graph.node):
        node_id = f"n{index}"
        held = sum(weights.get(name, 0) for name in node.input if name in initializers)
        labels[node_id] = (node.name or f"{node.op_type}_{index}", node.op_type, held)
        for output in node.output:
            if output:
                producers[output] = node_id
    edges: list[GraphEdge] = []
    for index, node in enumerate(graph.node):
        for tensor in node.input:
            source = producers.get(tensor)
            if source is not None and source != f"n{index}":
                edges.append(GraphEdge(source, f"n{index}", tensor))
    for value in graph.output:
        labels[f"out:{value.name}"] = (value.name, "output", 0)
        details[f"out:{value.name}"] = type_text(value.type)
        source = producers.get(value.name)
        if source is not None:
            edges.append(GraphEdge(source, f"out:{value.name}", value.name))

    preds: dict[str, list[str]] = defaultdict(list)
    succs: dict[str, list[str]] = defaultdict(list)
    for edge in edges:
        preds[edge.target].append(edge.source)
        succs[edge.source].append(edge.target)
    indegree = {node_id: len(preds[node_id]) for node_id in labels}
    queue = deque(node_id for node_id, d in indegree.items() if d == 0)
    layer: dict[str, int] = {}
    order: list[str] = []
    while queue:
        node_id = queue.popleft()
        layer[node_id] = max((layer[p] + 1 for p in preds[node_id] if p in layer), default=0)
        order.append(node_id)
        for nxt in succs[node_id]:
            indegree[nxt] -= 1
            if indegree[nxt] == 0:
                queue.append(nxt)
    has_cycle = len(order) < len(labels)
    if has_cycle:  # nodes on a cycle go below everything else, in file order
        bottom = max(layer.values(), default=-1) + 1
        for node_id in labels:
            if node_id not in layer:
                layer[node_id] = bottom
                order.append(node_id)
    # outputs sit on the last layer, so the drawing ends on them
    last = max(layer.values(), default=0)
    for node_id, (_, kind, _) in labels.items():
        if kind == "output":
            layer[node_id] = last + (1 if any(layer[n] == last and labels[n][1] != "output" for n in layer) else 0)

    by_layer: dict[int, list[str]] = defaultdict(list)
    for node_id in order:
        by_layer[layer[node_id]].append(node_id)
    x: dict[str, float] = {}
    for level in sorted(by_layer):
        members = by_layer[level]
        # order by the mean position of the predecessors (barycentre), keeping file order on ties
        members.sort(key=lambda n: sum(x.get(p, 0.0) for p in preds[n]) / len(preds[n]) if preds[n] else 0.0)
        width = len(members)
        for position, node_id in enumerate(members):
            x[node_id] = position - (width - 1) / 2
    nodes = [
        GraphNode(
            node_id,
            labels[node_id][0],
            labels[node_id][1],
            x[node_id],
            float(-layer[node_id]),
            layer[node_id],
            labels[node_id][2],
        )
        for node_id in order
    ]
    return GraphLayout(path, nodes, edges, (max(layer.values()) + 1) if layer else 0, has_cycle)


def neighbourhood(layout: GraphLayout, centre: str, radius: int) -> set[str]:
    """Node ids within ``radius`` edges of ``centre`` (both directions)."""
    adjacent: dict[str, set[str]] = defaultdict(set)
    for edge in layout.edges:
        adjacent[edge.source].add(edge.target)
        adjacent[edge.target].add(edge.source)
    seen = {centre}
    frontier = {centre}
    for _ in range(radius):
        frontier = {n for f in frontier for n in adjacent[f]} - seen
        seen |= frontier
    return seen
