"""Which execution provider runs which node: ORT's own assignment, and simulated what-ifs for NNAPI and CoreML.

Runs in the worker. The real partition comes from ONNX Runtime itself (``get_provider_graph_assignment_info``,
by original node name) and from the "Node placements" lines of its log, captured through its logger callback.
Providers this machine lacks are simulated with ORT's mobile usability checker, and marked as simulated.
"""

from __future__ import annotations

import sys
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.access import ReadPath, WritePath
from core.errors import PartitionError
from core.model.proto import walk_graphs
from core.model.topology import connected_groups
from core.runtime.ort import LEVELS, PROVIDERS, capture_ort_log, explain_session_error, session_options, short_name
from core.tables import RowFile, write_rows

__all__ = [
    "KERNEL_PROVIDERS",
    "SIMULATED",
    "NodePlacement",
    "PartitionReport",
    "PartitionResult",
    "Subgraph",
    "partition_model",
]

# simulated provider -> (short, how ORT's checker is called)
SIMULATED: dict[str, str] = {"nnapi": "NnapiExecutionProvider", "coreml": "CoreMLExecutionProvider"}


@dataclass(slots=True)  # one per node: tens of thousands in a large model
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


@dataclass
class Subgraph:
    """A connected piece of the main graph that runs on one provider."""

    index: int
    provider: str
    nodes: int
    ops: dict[str, int]
    first: str
    last: str


@dataclass
class CopyNode:
    name: str
    op_type: str
    provider: str


@dataclass
class PartitionReport:
    title: str  # "This machine" or "NNAPI (simulated)"
    simulated: bool
    providers_requested: list[str]
    providers_used: list[str]
    level: str
    nodes: list[NodePlacement]  # empty when they were written to ``node_rows``
    providers: dict[str, int]  # provider -> nodes of the main graph
    subgraphs: list[Subgraph]
    fallback: list[str]  # node names that went to CPU although another provider came first
    copies: list[CopyNode]
    log: list[str] = field(default_factory=list)
    unsupported_ops: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    summary: str = ""
    node_rows: RowFile | None = None  # every node's placement, in the job's folder (when it was given one)
    node_total: int = 0  # placements, of every graph and those ORT added
    main_providers: list[str] = field(default_factory=list)  # by main-graph node index; "" runs nowhere
    node_providers: list[str] = field(default_factory=list)  # the providers (and "") the placements name


@dataclass
class PartitionResult:
    model: str
    node_count: int  # nodes of the main graph
    available: list[str]
    unavailable: dict[str, str]  # requested but not in this build -> what it would take
    reports: list[PartitionReport]


def _graph_nodes(model: Any) -> Iterator[tuple[int, str, Any]]:
    """(main-graph index or -1, graph path, node) for the main graph and every subgraph."""
    for visit in walk_graphs(model):
        for index, node in enumerate(visit.graph.node):
            yield (index if visit.owner is None else -1), visit.path, node


def _connected(model: Any, provider_of: dict[int, str]) -> list[list[int]]:
    """Connected pieces of the main graph whose nodes share a provider."""
    nodes = model.graph.node
    producer = {out: i for i, node in enumerate(nodes) for out in node.output if out}
    links = [
        (i, j)
        for i, node in enumerate(nodes)
        for j in (producer.get(name) for name in node.input)
        if j is not None and provider_of.get(i) and provider_of.get(i) == provider_of.get(j)
    ]
    return connected_groups([i for i in range(len(nodes)) if provider_of.get(i)], links)


def _subgraphs(
    model: Any, provider_of: dict[int, str], groups: list[list[int]] | None = None
) -> tuple[list[Subgraph], dict[int, int]]:
    """The pieces of the main graph per provider: ``groups`` as the partitioner made them (fused subgraphs of
    a compiling provider, or the checker's groups), and connected pieces for whatever they leave out."""
    nodes = model.graph.node
    pieces = [sorted(g) for g in groups or [] if g]
    grouped = {i for g in pieces for i in g}
    pieces += _connected(model, {i: p for i, p in provider_of.items() if i not in grouped})
    pieces.sort(key=lambda m: m[0])
    result, piece_of = [], {}
    for k, piece in enumerate(pieces):
        for i in piece:
            piece_of[i] = k
        ops = Counter(nodes[i].op_type for i in piece)
        result.append(
            Subgraph(
                k,
                provider_of[piece[0]],
                len(piece),
                dict(ops.most_common()),
                nodes[piece[0]].name or nodes[piece[0]].op_type,
                nodes[piece[-1]].name or nodes[piece[-1]].op_type,
            )
        )
    return result, piece_of


# providers that run each node with a kernel of their own: they take nodes one by one, and "partitions" are
# only the connected runs of nodes they happen to hold (compiling providers such as TensorRT, OpenVINO, NNAPI or
# CoreML fuse each partition into one compiled piece)
KERNEL_PROVIDERS = {
    "CPUExecutionProvider",
    "CUDAExecutionProvider",
    "ROCMExecutionProvider",
    "XnnpackExecutionProvider",
}


def _summary(report: PartitionReport, node_count: int) -> str:
    """One line over the main graph's nodes (the metrics and the share chart count the same), with the nodes of
    subgraphs named apart."""
    first = report.providers_requested[0] if report.providers_requested else "CPUExecutionProvider"
    on_first = report.providers.get(first, 0)
    pieces = sum(1 for s in report.subgraphs if s.provider == first)
    text = f"{node_count:,} node{'s' * (node_count != 1)} in the main graph: {on_first:,} on {short_name(first)}"
    if first not in KERNEL_PROVIDERS:
        text += f" in {pieces} partition{'s' * (pieces != 1)}"
    others = {p: n for p, n in report.providers.items() if p != first and n}
    if first != "CPUExecutionProvider" and others:
        text += ", " + ", ".join(
            f"{n:,} fall{'s' * (n == 1)} back to {short_name(p)}" if p == "CPUExecutionProvider" else f"{n:,} on {p}"
            for p, n in others.items()
        )
    elif others:
        text += ", " + ", ".join(f"{n:,} on {short_name(p)}" for p, n in others.items())
    idle = sum(1 for n in report.nodes if n.index >= 0 and not n.provider)
    if idle:
        text += f", {idle:,} run nowhere (constants and nodes the optimizer removed)"
    inner = sum(1 for n in report.nodes if n.index < 0 and n.graph != "added by ORT")
    if inner:
        text += f"; {inner:,} more in subgraphs, with the provider of the node that holds them"
    return text + (" (simulated)" if report.simulated else "")


def _finish(report: PartitionReport, model: Any, groups: list[list[int]] | None = None) -> PartitionReport:
    provider_of = {n.index: n.provider for n in report.nodes if n.index >= 0 and n.provider}
    report.subgraphs, piece_of = _subgraphs(model, provider_of, groups)
    for node in report.nodes:
        node.subgraph = piece_of.get(node.index, -1)
    report.providers = dict(Counter(n.provider for n in report.nodes if n.index >= 0 and n.provider).most_common())
    first = report.providers_requested[0] if report.providers_requested else ""
    if first and first != "CPUExecutionProvider":
        report.fallback = [
            n.name or f"{n.op_type} #{n.index}" for n in report.nodes if n.provider == "CPUExecutionProvider"
        ]
    report.summary = _summary(report, len(model.graph.node))
    report.node_total = len(report.nodes)
    report.main_providers = [sys.intern(provider_of.get(i, "")) for i in range(len(model.graph.node))]
    report.node_providers = sorted({n.provider for n in report.nodes})
    return report


INLINED = "calls a local function, which ORT inlines"
CONSTANT = "a Constant: ORT holds its value as a weight"
REMOVED = "removed by the optimizer before partitioning"


def _placement_lines(log: list[tuple[int, str, str]]) -> list[str]:
    """The 'Node placements' section of ORT's verbose log (session_state.cc), line by line."""
    lines: list[str] = []
    for _, location, message in log:
        if "VerifyEachNodeIsAssignedToAnEp" in location or ("session_state.cc" in location and "placed" in message):
            lines.extend(line.rstrip() for line in message.splitlines() if line.strip())
    return lines


@dataclass
class _Matched:
    """ORT's assignment matched to the model's nodes."""

    placements: list[NodePlacement]  # the model's nodes, placed or with the reason they run nowhere
    added: list[NodePlacement]  # nodes ORT made (copies, inlined function bodies)
    copies: list[CopyNode]
    fused: list[list[int]]  # main-graph nodes a compiling provider took as one subgraph


def _assignment(path: str, providers: list[str], level: str, log: list[tuple[int, str, str]]) -> tuple[Any, Any]:
    """A session with ORT's record of which provider took which node, and that record."""
    import onnxruntime as ort

    options = session_options(level)
    options.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
    options.log_severity_level = 0
    try:
        with capture_ort_log(log):
            session = ort.InferenceSession(path, options, providers=providers)
        return session, session.get_provider_graph_assignment_info()
    except Exception as exc:  # ORT raises its own Fail/InvalidGraph/NotImplemented types
        raise explain_session_error(exc, "create a session for this model") from exc


def _unplaced_note(proto: Any, inlined: bool) -> str:
    if inlined:
        return INLINED
    return CONSTANT if proto.op_type == "Constant" and proto.domain in ("", "ai.onnx") else REMOVED


def _match(model: Any, groups: Any) -> _Matched:
    """ORT lists nodes by their original names; match them to the graph's nodes (in order, per name and op, so
    unnamed nodes match too). Whatever is left over was added by ORT (copies, inlined function bodies)."""
    waiting: dict[tuple[str, str], deque[tuple[int, str, Any]]] = defaultdict(deque)
    for index, graph_path, node in _graph_nodes(model):
        waiting[(node.name, node.op_type)].append((index, graph_path, node))
    matched = _Matched([], [], [], [])
    for group in groups:
        members: list[int] = []
        for node in group.get_nodes():
            queue = waiting.get((node.name, node.op_type))
            if queue:
                index, graph_path, proto = queue.popleft()
                matched.placements.append(
                    NodePlacement(index, node.name, node.op_type, proto.domain, graph_path, group.ep_name)
                )
                members += [index] if index >= 0 else []
                continue
            matched.added.append(NodePlacement(-1, node.name, node.op_type, node.domain, "added by ORT", group.ep_name))
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
            note = _unplaced_note(proto, inlined)
            matched.placements.append(
                NodePlacement(index, proto.name, proto.op_type, proto.domain, graph_path, provider, note=note)
            )
    matched.placements.sort(key=lambda n: (n.graph != "main", n.graph, n.index))
    return matched


def _real_notes(matched: _Matched, level: str) -> list[str]:
    notes = []
    calls = sum(1 for n in matched.placements if n.note == INLINED)
    if calls:
        notes.append(
            f"{calls} node(s) call local functions, which ONNX Runtime inlines: the "
            f"{len(matched.added) - len(matched.copies)} nodes of their bodies are listed as added by ORT, and each "
            "call is shown where its body ran."
        )
    constants = sum(1 for n in matched.placements if n.note == CONSTANT)
    removed = sum(1 for n in matched.placements if n.note == REMOVED)
    if constants:
        notes.append(
            f"{constants} Constant node(s) run nowhere: ONNX Runtime turns their values into weights when it loads "
            "the model."
        )
    if removed:
        notes.append(
            f"{removed} node(s) run nowhere: the optimizer at {LEVELS[level][0]} removed them before partitioning "
            "(constant folding, Identity and other no-op eliminations). Choose DISABLE_ALL to see them placed."
        )
    if matched.copies:
        notes.append(
            f"{len(matched.copies)} copy node(s) move tensors between device and host memory where the graph "
            "crosses from one provider to another; each costs a transfer on every run."
        )
    return notes


def _real_partition(
    path: str, model: Any, providers: list[str], level: str, log: list[tuple[int, str, str]]
) -> PartitionReport:
    session, groups = _assignment(path, providers, level, log)
    matched = _match(model, groups)
    report = PartitionReport(
        "This machine", False, providers, session.get_providers(), LEVELS[level][0],
        matched.placements + matched.added, {}, [], [], matched.copies,
        log=_placement_lines(log), notes=_real_notes(matched, level),
    )  # fmt: skip
    return _finish(report, model, matched.fused)


def _usability_checker() -> Any:
    """ORT's mobile usability checker, without torch: onnxruntime.tools imports torch at package import when it
    is installed (for a helper the checker never uses), which made every simulated partition a second slower.
    The worker is this job's alone, so standing in for that helper changes nothing else."""
    import types

    name = "onnxruntime.tools.pytorch_export_helpers"
    if name not in sys.modules and "onnxruntime.tools" not in sys.modules:
        stand_in = types.ModuleType(name)
        stand_in.infer_input_info = None  # type: ignore[attr-defined]
        sys.modules[name] = stand_in
    from onnxruntime.tools.mobile_helpers import usability_checker

    return usability_checker


def _simulated_partition(model: Any, key: str) -> PartitionReport:
    checker = _usability_checker()

    provider = SIMULATED[key]
    try:
        if key == "nnapi":
            info = checker.check_nnapi_partitions(model, require_fixed_input_sizes=False)
        else:
            info = checker.check_coreml_partitions(model, False, "coreml_supported_mlprogram_ops.md")
    except Exception as exc:  # the checker asserts on graphs it does not understand
        raise PartitionError(f"ONNX Runtime's {short_name(provider)} checker could not read this model: {exc}") from exc
    # The checker may have copied the model (shape inference): match its nodes by op type and outputs.
    index_of = {(n.op_type, tuple(n.output)): i for i, n in enumerate(model.graph.node)}
    provider_of: dict[int, str] = {}
    groups: list[list[int]] = []
    for group in info.supported_groups:
        members = [index_of.get((node.op_type, tuple(node.output))) for node in group]
        groups.append([i for i in members if i is not None])
        for i in groups[-1]:
            provider_of[i] = provider
    nodes = [
        NodePlacement(i, n.name, n.op_type, n.domain, "main", provider_of.get(i, "CPUExecutionProvider"))
        for i, n in enumerate(model.graph.node)
    ]
    report = PartitionReport(
        f"{short_name(provider)} (simulated)",
        True,
        [provider, "CPUExecutionProvider"],
        [provider, "CPUExecutionProvider"],
        "as exported",
        nodes,
        {},
        [],
        [],
        [],
        unsupported_ops=sorted(op.removeprefix("ai.onnx:") for op in info.unsupported_ops),
    )
    report.notes.append(
        f"Simulated with ONNX Runtime's own usability checker for {short_name(provider)}: it knows which ops "
        f"the {short_name(provider)} provider takes, and groups them the way the partitioner would. Nothing "
        "ran on such hardware."
    )
    if info.nodes_unsupported_due_to_dynamic_input:
        report.notes.append(
            f"{info.nodes_unsupported_due_to_dynamic_input} node(s) have inputs of dynamic size, which "
            f"{short_name(provider)} cannot take; fix the input shapes to move them off the CPU."
        )
    if info.ops_with_unsupported_rank:
        report.notes.append("Ops with inputs of unsupported rank: " + ", ".join(sorted(info.ops_with_unsupported_rank)))
    return _finish(report, model, groups)


def partition_model(
    path: ReadPath,
    providers: list[str] | None = None,
    level: str = "all",
    simulate: list[str] | None = None,
    progress: Callable[[float, str], None] | None = None,
    out_dir: WritePath = "",
) -> PartitionResult:
    """The real partition for ``providers`` (in order of preference) and simulated ones for ``simulate``. With
    ``out_dir`` each report's placements go to a file there (``node_rows``) instead of into the result."""
    import onnx
    import onnxruntime as ort

    report_progress = progress or (lambda fraction, message: None)
    available = ort.get_available_providers()
    known = set(ort.get_all_providers()) | set(PROVIDERS)
    requested = list(dict.fromkeys(providers or ["CPUExecutionProvider"]))
    unknown = [p for p in requested if p not in known]
    if unknown:
        raise PartitionError(
            f"Unknown execution provider {', '.join(unknown)}. Known ones: {', '.join(sorted(known))}."
        )
    unavailable = {
        p: f"{short_name(p)} is not in this build of ONNX Runtime ({', '.join(available)}); it needs "
        + PROVIDERS.get(p, ("", "", "a build of ONNX Runtime that has it"))[2]
        + "."
        for p in requested
        if p not in available
    }
    usable = [p for p in requested if p in available]
    if "CPUExecutionProvider" not in usable:
        usable.append("CPUExecutionProvider")  # what ORT itself does: CPU takes whatever is left
    simulate = [s.lower() for s in simulate or []]
    bad = [s for s in simulate if s not in SIMULATED]
    if bad:
        raise PartitionError(f"Cannot simulate {', '.join(bad)}; simulations exist for: {', '.join(SIMULATED)}.")

    report_progress(0.1, "Reading the model")
    model = onnx.load_model(path, load_external_data=False)
    report_progress(0.3, f"Creating a session with {', '.join(short_name(p) for p in usable)}")
    log: list[tuple[int, str, str]] = []
    reports = [_real_partition(path, model, usable, level, log)]
    for n, key in enumerate(simulate):
        report_progress(0.5 + 0.4 * n / max(len(simulate), 1), f"Simulating {short_name(SIMULATED[key])}")
        reports.append(_simulated_partition(model, key))
    if out_dir:
        for n, report in enumerate(reports):
            report.node_rows = write_rows(Path(out_dir) / f"placements-{n}.rows", report.nodes)
            report.nodes = []
    return PartitionResult(path.rsplit("/", 1)[-1], len(model.graph.node), available, unavailable, reports)
