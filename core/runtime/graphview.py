"""Lay out an ONNX graph for drawing: layers from inputs to outputs, order within a layer by neighbours.

Positions are computed once in the worker; the page draws any part of them (a window of layers, or the
neighbourhood of one node) so that graphs with thousands of nodes stay usable.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from core.model.proto import type_text

__all__ = [
    "MAX_LAYOUT_NODES",
    "GraphEdge",
    "GraphLayout",
    "GraphNode",
    "connected_groups",
    "layout_graph",
    "neighbourhood",
]

MAX_LAYOUT_NODES = 20_000  # larger graphs are listed, not drawn (Decode and Partition alike)


@dataclass(slots=True)  # one per node: tens of thousands in a large model
class GraphNode:
    id: str  # "n12" for node 12, "in:x" / "out:y" for graph inputs and outputs
    label: str
    op_type: str  # "input" / "output" for the pseudo nodes
    x: float
    y: float
    layer: int
    weights: int = 0  # parameters held by this node's initializer inputs
    detail: str = ""  # dtype and shape, for graph inputs and outputs


@dataclass(slots=True)  # one per node: tens of thousands in a large model
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


@dataclass
class _Parts:
    """A graph's drawable nodes (id -> label, op type, weights, detail) and the edges between them."""

    labels: dict[str, tuple[str, str, int, str]] = field(default_factory=dict)
    edges: list[GraphEdge] = field(default_factory=list)


def _parts(graph: Any, weights: dict[str, int]) -> _Parts:
    """Nodes "n<index>", graph inputs "in:<name>" (initializers listed as inputs left out) and outputs
    "out:<name>", joined by the tensors that flow between them."""
    parts = _Parts()
    initializers = {t.name for t in graph.initializer}
    producers: dict[str, str] = {}
    for value in graph.input:
        if value.name not in initializers:
            producers[value.name] = f"in:{value.name}"
            parts.labels[f"in:{value.name}"] = (value.name, "input", 0, type_text(value.type))
    for index, node in enumerate(graph.node):
        held = sum(weights.get(name, 0) for name in node.input if name in initializers)
        parts.labels[f"n{index}"] = (node.name or f"{node.op_type}_{index}", node.op_type, held, "")
        producers.update({output: f"n{index}" for output in node.output if output})
    for index, node in enumerate(graph.node):
        for tensor in node.input:
            source = producers.get(tensor)
            if source is not None and source != f"n{index}":
                parts.edges.append(GraphEdge(source, f"n{index}", tensor))
    for value in graph.output:
        parts.labels[f"out:{value.name}"] = (value.name, "output", 0, type_text(value.type))
        source = producers.get(value.name)
        if source is not None:
            parts.edges.append(GraphEdge(source, f"out:{value.name}", value.name))
    return parts


def _layers(parts: _Parts, preds: dict[str, list[str]]) -> tuple[dict[str, int], list[str], bool]:
    """Each node's layer (its longest path from an input), the topological order, and whether there is a
    cycle (its nodes go below everything else, in file order). Outputs sit on the last layer."""
    succs: dict[str, list[str]] = defaultdict(list)
    for edge in parts.edges:
        succs[edge.source].append(edge.target)
    indegree = {node_id: len(preds[node_id]) for node_id in parts.labels}
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
    has_cycle = len(order) < len(parts.labels)
    if has_cycle:
        bottom = max(layer.values(), default=-1) + 1
        for node_id in parts.labels:
            if node_id not in layer:
                layer[node_id] = bottom
                order.append(node_id)
    last = max(layer.values(), default=0)
    below = 1 if any(layer[n] == last and parts.labels[n][1] != "output" for n in layer) else 0
    for node_id, (_, kind, _, _) in parts.labels.items():
        if kind == "output":
            layer[node_id] = last + below
    return layer, order, has_cycle


def layout_graph(graph: Any, path: str, weights: dict[str, int] | None = None) -> GraphLayout:
    """Layered layout of one GraphProto (iterative, so deep or cyclic graphs cannot blow the stack)."""
    parts = _parts(graph, weights or {})
    preds: dict[str, list[str]] = defaultdict(list)
    for edge in parts.edges:
        preds[edge.target].append(edge.source)
    layer, order, has_cycle = _layers(parts, preds)
    by_layer: dict[int, list[str]] = defaultdict(list)
    for node_id in order:
        by_layer[layer[node_id]].append(node_id)
    x: dict[str, float] = {}
    for level in sorted(by_layer):
        members = by_layer[level]
        # order by the mean position of the predecessors (barycentre), keeping file order on ties
        members.sort(key=lambda n: sum(x.get(p, 0.0) for p in preds[n]) / len(preds[n]) if preds[n] else 0.0)
        for position, node_id in enumerate(members):
            x[node_id] = position - (len(members) - 1) / 2
    nodes = []
    for node_id in order:
        label, op_type, held, detail = parts.labels[node_id]
        nodes.append(
            GraphNode(node_id, label, op_type, x[node_id], float(-layer[node_id]), layer[node_id], held, detail)
        )
    return GraphLayout(path, nodes, parts.edges, (max(layer.values()) + 1) if layer else 0, has_cycle)


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


def connected_groups(members: Iterable[int], links: Iterable[tuple[int, int]]) -> list[list[int]]:
    """The connected components of ``members`` joined by ``links`` (union-find), each sorted, in order of
    their smallest member. Links that touch a non-member are ignored."""
    parent = {m: m for m in members}

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for a, b in links:
        if a in parent and b in parent:
            parent[find(a)] = find(b)
    groups: dict[int, list[int]] = defaultdict(list)
    for m in parent:
        groups[find(m)].append(m)
    return sorted((sorted(g) for g in groups.values()), key=lambda g: g[0])
