"""Which execution provider ONNX Runtime gives each node of a model, from ORT itself.

Runs in the worker. The assignment comes from ``get_provider_graph_assignment_info`` (by original node name),
matched back to the model's own nodes, with the reason each node that runs nowhere has none. Partition
(core.partition) builds its reports on it; Quantize asks where a variant's integer kernels ran.
"""

from __future__ import annotations

import sys
from collections import Counter, defaultdict, deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from core.i18n import N_
from core.model.proto import walk_graphs
from core.runtime.ort import capture_ort_log, explain_session_error, session_options
from core.runtime.provider_options import session_providers

if TYPE_CHECKING:
    import onnx

__all__ = [
    "CONSTANT",
    "INLINED",
    "REMOVED",
    "Assignment",
    "CopyNode",
    "NodePlacement",
    "assign_providers",
    "nodes_per_provider",
    "placement_lines",
]

INLINED = N_("calls a local function, which ORT inlines")  # kept in English, translated where shown
CONSTANT = N_("a Constant: ORT holds its value as a weight")
REMOVED = N_("removed by the optimizer before partitioning")


@dataclass(slots=True, kw_only=True)  # one per node: tens of thousands in a large model
class NodePlacement:
    index: int  # position in the main graph; -1 for nodes of subgraphs, or nodes ORT added
    name: str
    op_type: str
    domain: str
    graph: str  # "main", a subgraph path such as "n3/then_branch", or "added by ORT"
    provider: str  # "" when the node does not run: see ``note``
    subgraph: int = -1  # which entry of PartitionReport.subgraphs holds it
    note: str = ""  # why a node has no provider, or that it calls an inlined function

    def __post_init__(self) -> None:
        # the same few texts on every node: one copy each, not one per node
        self.op_type, self.domain, self.graph = (
            sys.intern(self.op_type),
            sys.intern(self.domain),
            sys.intern(self.graph),
        )
        self.provider, self.note = sys.intern(self.provider), sys.intern(self.note)


@dataclass(frozen=True)
class CopyNode:
    name: str
    op_type: str
    provider: str


@dataclass(kw_only=True)
class Assignment:
    """ORT's assignment matched to the model's nodes."""

    providers: list[str]  # the session's providers, in ORT's order
    placements: list[NodePlacement]  # the model's nodes, placed or with the reason they run nowhere
    added: list[NodePlacement]  # nodes ORT made (copies, inlined function bodies)
    copies: list[CopyNode]
    fused: list[list[int]]  # main-graph nodes a compiling provider took as one subgraph


def _graph_nodes(model: onnx.ModelProto) -> Iterator[tuple[int, str, onnx.NodeProto]]:
    """(main-graph index or -1, graph path, node) for the main graph and every subgraph."""
    for visit in walk_graphs(model):
        for index, node in enumerate(visit.graph.node):
            yield (index if visit.owner is None else -1), visit.path, node


def placement_lines(log: list[tuple[int, str, str]]) -> list[str]:
    """The 'Node placements' section of ORT's verbose log (session_state.cc), line by line."""
    lines: list[str] = []
    for _, location, message in log:
        if "VerifyEachNodeIsAssignedToAnEp" in location or ("session_state.cc" in location and "placed" in message):
            lines.extend(line.rstrip() for line in message.splitlines() if line.strip())
    return lines


def _session(
    path: str, providers: list[str], level: str, log: list[tuple[int, str, str]], optimized_to: str = ""
) -> tuple[Any, Any]:
    """A session with ORT's record of which provider took which node, and that record; each provider opened with
    its options (core.runtime.provider_options); with ``optimized_to``, the graph it runs written there."""
    import onnxruntime as ort

    options = session_options(level)
    options.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
    if optimized_to:
        options.optimized_model_filepath = optimized_to
    options.log_severity_level = 0
    # never run, it needs no memory arena, whose log of each weight it would hold (18,000 lines on a transformer of
    # 30,000 nodes) only lengthened this one; the placement is the same
    options.enable_cpu_mem_arena = False
    try:
        with capture_ort_log(log):
            session = ort.InferenceSession(path, options, providers=session_providers(providers))
        return session, session.get_provider_graph_assignment_info()
    except Exception as exc:  # ORT raises its own Fail/InvalidGraph/NotImplemented types
        raise explain_session_error(exc, "create a session for this model", path) from exc


def _unplaced_note(proto: onnx.NodeProto, inlined: bool) -> str:
    if inlined:
        return INLINED
    return CONSTANT if proto.op_type == "Constant" and proto.domain in ("", "ai.onnx") else REMOVED


class _Node(Protocol):
    """A node of the model (onnx.NodeProto) or of ORT's assignment: both have a name, an op type and a domain."""

    @property
    def name(self) -> str: ...
    @property
    def op_type(self) -> str: ...
    @property
    def domain(self) -> str: ...


def _placement(node: _Node, index: int, graph: str, provider: str, note: str = "") -> NodePlacement:
    """Where ``node`` runs."""
    return NodePlacement(
        index=index, name=node.name, op_type=node.op_type, domain=node.domain, graph=graph, provider=provider, note=note
    )


def _match(model: onnx.ModelProto, groups: Any, providers: list[str]) -> Assignment:
    """ORT lists nodes by their original names; match them to the graph's nodes (in order, per name and op, so
    unnamed nodes match too). Whatever is left over was added by ORT (copies, inlined function bodies)."""
    waiting: dict[tuple[str, str], deque[tuple[int, str, onnx.NodeProto]]] = defaultdict(deque)
    for index, graph_path, node in _graph_nodes(model):
        waiting[(node.name, node.op_type)].append((index, graph_path, node))
    matched = Assignment(providers=providers, placements=[], added=[], copies=[], fused=[])
    for group in groups:
        members: list[int] = []
        for node in group.get_nodes():
            queue = waiting.get((node.name, node.op_type))
            if queue:
                index, graph_path, proto = queue.popleft()
                matched.placements.append(_placement(proto, index, graph_path, group.ep_name))
                members += [index] if index >= 0 else []
                continue
            matched.added.append(_placement(node, -1, "added by ORT", group.ep_name))
            if node.op_type.startswith("Memcpy"):
                matched.copies.append(CopyNode(node.name, node.op_type, group.ep_name))
        if len(members) > 1:
            matched.fused.append(members)
    functions = {(f.domain, f.name) for f in model.functions}
    body = Counter(n.provider for n in matched.added if not n.op_type.startswith("Memcpy")).most_common(1)
    for queue in waiting.values():
        for index, graph_path, proto in queue:
            # ORT inlines calls of local functions; the call runs where its body's nodes were placed
            inlined = bool((proto.domain, proto.op_type) in functions and body)
            provider = body[0][0] if inlined else ""
            matched.placements.append(_placement(proto, index, graph_path, provider, _unplaced_note(proto, inlined)))
    matched.placements.sort(key=lambda n: (n.graph != "main", n.graph, n.index))
    return matched


def assign_providers(
    path: str,
    model: onnx.ModelProto,
    providers: list[str],
    level: str,
    log: list[tuple[int, str, str]],
    optimized_to: str = "",
) -> Assignment:
    """Where ORT places each node of ``model`` (read from ``path``) with ``providers`` in order of preference,
    at optimization ``level``; ORT's log lines go into ``log``; with ``optimized_to``, the session writes the
    graph it runs there (Partition's levels take it as their own, rather than build the same session again)."""
    session, groups = _session(path, providers, level, log, optimized_to)
    return _match(model, groups, session.get_providers())


def nodes_per_provider(path: str, providers: list[str], level: str = "all") -> dict[str, int]:
    """How many nodes of the main graph each provider runs, most first."""
    import onnx

    model = onnx.load_model(path, load_external_data=False)
    assignment = assign_providers(path, model, providers, level, [])
    placed = Counter(n.provider for n in assignment.placements if n.index >= 0 and n.provider)
    return dict(placed.most_common())
