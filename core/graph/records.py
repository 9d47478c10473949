"""What the graph view draws, as plain dataclasses: nodes, edges and groups, compact enough for 30,000 nodes."""

from __future__ import annotations

from dataclasses import dataclass, field

from core.access import ReadPath
from core.notes import Note

__all__ = ["Folded", "GraphRequest", "GraphView", "ViewEdge", "ViewGroup", "ViewNode"]


@dataclass(frozen=True, kw_only=True)
class GraphRequest:
    """The graph view of the ONNX file at ``path`` (its external weights read only for their statistics)."""

    path: ReadPath


@dataclass(slots=True, kw_only=True)
class Folded:
    """A weight or Constant value shown inside the node that consumes it, instead of as a node of its own."""

    name: str
    shape: str  # "768×3072", "" for a scalar
    dtype: str
    stats: str = ""  # "min −0.3 · max 0.29 · mean 0.001 · std 0.05 · 0.0% zeros" (core.graph.weights)


@dataclass(slots=True, kw_only=True)  # one per node: tens of thousands in a large model
class ViewNode:
    id: int  # its index in GraphView.nodes
    op: str  # op type; "Input" / "Output" for the graph's inputs and outputs
    name: str
    attrs: str  # key attributes in short form: "k=3×3 s=2 p=1"
    inputs: list[str]
    outputs: list[str]
    folded: list[Folded] = field(default_factory=list)
    group: int = -1  # index in GraphView.groups of its innermost group, -1 for none
    dtype: str = ""  # its colour key by type: "float32", "float16", "int8", "qdq", …
    domain: str = ""
    index: int = -1  # its place in the main graph's node list (what other pages call node "n<index>"); -1 else


@dataclass(slots=True, kw_only=True)
class ViewEdge:
    source: int
    target: int
    tensor: str
    label: str  # "float32 1×128×768", "" when unknown


@dataclass(slots=True, kw_only=True)
class ViewGroup:
    id: int
    name: str  # its own part of the path: "layer.0"
    path: str  # the whole scope: "encoder/layer.0"
    parent: int  # -1 at the top
    kind: str  # "scope", "function", "subgraph", or "node": the bodies one node holds, drawn inside that node
    count: int = 0  # graph nodes inside, at any depth
    repeat: str = ""  # "layer.0 … layer.11, 12 alike" on each member of a run of identical siblings
    owner: int = -1  # for a "node" group: the node (an If, Loop, Scan or function call) whose bodies it holds


@dataclass(kw_only=True)
class GraphView:
    """A model's graph ready to draw: nodes in topological order (inputs first), edges, nested groups."""

    name: str
    nodes: list[ViewNode] = field(default_factory=list)
    edges: list[ViewEdge] = field(default_factory=list)
    groups: list[ViewGroup] = field(default_factory=list)
    node_count: int = 0  # graph nodes drawn (not inputs, outputs, or folded Constants)
    folded_constants: int = 0
    # Identity nodes of the main graph that pass on a weight, folded like one: "name: input → output" each
    folded_identities: list[str] = field(default_factory=list)
    shapes_inferred: bool = False  # whether ONNX shape inference ran (skipped on large models)
    notes: list[Note] = field(default_factory=list)  # said where the view is drawn (core.notes)
