"""Partition: which execution provider runs which node, from ONNX Runtime itself, and simulated what-ifs for
NNAPI and CoreML.

Runs in the worker. The real partition is ORT's own assignment (core.runtime.placement), with the "Node
placements" lines of its log; it is summed up per provider and cut into the connected pieces each provider
runs. Providers this machine lacks are simulated with ORT's mobile usability checker, and marked as simulated.
"""

from __future__ import annotations

import contextlib
import contextvars
import sys
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from core.errors import PartitionError
from core.i18n import _, using
from core.model.topology import connected_groups
from core.notes import Note, note
from core.partition.declined import declined_nodes
from core.partition.optimize import (
    EXTERNAL_THRESHOLD,
    LevelSessions,
    level_file,
    level_keys,
    session_workers,
    weight_bytes,
)
from core.partition.records import (
    ContribOp,
    LevelPlacement,
    LevelsRequest,
    PartitionReport,
    PartitionRequest,
    PartitionResult,
    Subgraph,
)
from core.partition.simulations import SIMULATED
from core.partition.words import (
    CALLS_INLINED,
    CHECKER,
    CONSTANTS,
    COPIES,
    DYNAMIC,
    KERNEL_PROVIDERS,
    REMOVED_NODES,
    SIMULATED_TITLE,
    THIS_MACHINE,
    UNSUPPORTED_RANK,
    summary,
)
from core.runtime.fallback import Placed, placement_notes, refuse
from core.runtime.ort import LEVELS, PROVIDERS, install_of, short_name
from core.runtime.placement import CONSTANT, INLINED, REMOVED, Assignment, NodePlacement, assign_providers
from core.runtime.placement import placement_lines as _placement_lines
from core.tables import write_rows

if TYPE_CHECKING:
    import onnx

__all__ = ["KERNEL_PROVIDERS", "SIMULATED", "contrib_ops", "partition_model"]


_T = TypeVar("_T")


class _OfLastGraph(Generic[_T]):
    """``make(graph)`` of the last graph asked for, made once for every partition of it: this machine's and each
    simulated one read the same links, and the checker's simulations the same producer and consumer maps (keyed by
    the graph's node objects, which stay the same while the graph is held here; the graph is held, so a new one is
    never taken for it)."""

    def __init__(self, make: Callable[[onnx.GraphProto], _T]) -> None:
        self.make = make
        self.graph: onnx.GraphProto | None = None
        self.value: _T | None = None

    def __call__(self, graph: onnx.GraphProto) -> _T:
        if graph is not self.graph or self.value is None:
            self.graph, self.value = graph, self.make(graph)
        return self.value


def _graph_links(graph: onnx.GraphProto) -> list[tuple[int, int]]:
    """The main graph's links (consumer, producer), by node index (0.15 s to read at 30,000 nodes)."""
    nodes = graph.node
    producer = {out: i for i, node in enumerate(nodes) for out in node.output if out}
    return [(i, j) for i, node in enumerate(nodes) for j in map(producer.get, node.input) if j is not None]


_links = _OfLastGraph(_graph_links)


def _connected(model: onnx.ModelProto, provider_of: dict[int, str]) -> list[list[int]]:
    """Connected pieces of the main graph whose nodes share a provider."""
    get = provider_of.get
    links = [(i, j) for i, j in _links(model.graph) if get(i) and get(i) == get(j)]
    return connected_groups([i for i in range(len(model.graph.node)) if get(i)], links)


def _subgraphs(
    model: onnx.ModelProto, provider_of: dict[int, str], groups: list[list[int]] | None = None
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
                index=k,
                provider=provider_of[piece[0]],
                nodes=len(piece),
                ops=dict(ops.most_common()),
                first=nodes[piece[0]].name or nodes[piece[0]].op_type,
                last=nodes[piece[-1]].name or nodes[piece[-1]].op_type,
            )
        )
    return result, piece_of


def _finish(report: PartitionReport, model: onnx.ModelProto, groups: list[list[int]] | None = None) -> PartitionReport:
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
    report.node_total = len(report.nodes)
    report.main_providers = [sys.intern(provider_of.get(i, "")) for i in range(len(model.graph.node))]
    with using("en"):  # kept in English (the command line's); the page writes it in its reader's language
        report.summary = summary(report)
    report.node_providers = sorted({n.provider for n in report.nodes})
    report.contrib = contrib_ops(report.nodes)
    return report


CONTRIB_DOMAIN = "com.microsoft"  # ONNX Runtime's own ops (and com.microsoft.nchwc, .experimental)
ADDED = "added by ORT"  # the graph core.runtime.placement names for a node the optimizer put in


def contrib_ops(nodes: list[NodePlacement]) -> list[ContribOp]:
    """ONNX Runtime's own ops among ``nodes`` (the model's and those its optimizer put in), each with the providers
    its nodes run on; the most frequent first."""
    found: dict[str, ContribOp] = {}
    where: dict[str, Counter[str]] = {}
    for node in nodes:
        if not node.domain.startswith(CONTRIB_DOMAIN):
            continue
        op = f"{node.domain}:{node.op_type}"
        entry = found.setdefault(op, ContribOp(op=op, nodes=0))
        entry.nodes += 1
        entry.added += node.graph == ADDED
        where.setdefault(op, Counter())[node.provider] += 1
    for op, entry in found.items():
        entry.providers = dict(where[op].most_common())
    return sorted(found.values(), key=lambda e: (-e.nodes, e.op))


def _real_notes(matched: Assignment, level: str) -> list[Note]:
    notes = []
    calls = sum(1 for n in matched.placements if n.note == INLINED)
    if calls:
        notes.append(note(CALLS_INLINED, calls=calls, added=len(matched.added) - len(matched.copies)))
    constants = sum(1 for n in matched.placements if n.note == CONSTANT)
    removed = sum(1 for n in matched.placements if n.note == REMOVED)
    if constants:
        notes.append(note(CONSTANTS, count=constants))
    if removed:
        notes.append(note(REMOVED_NODES, count=removed, level=LEVELS[level].name))
    if matched.copies:
        notes.append(note(COPIES, count=len(matched.copies)))
    return notes


def _real_partition(
    model: onnx.ModelProto,
    matched: Assignment,
    providers: list[str],
    level: str,
    log: list[tuple[int, str, str]],
) -> PartitionReport:
    report = _report(model, matched, providers, level, log)
    report.declined = declined_nodes(model, matched.placements, providers, log)
    return report


def _level_placement(path: str, model: onnx.ModelProto, providers: list[str], level: str) -> LevelPlacement:
    """The real partition at ``level``, in numbers."""
    log: list[tuple[int, str, str]] = []
    matched = assign_providers(path, model, providers, level, log)
    report = _report(model, matched, providers, level, log)
    first = {p: k for k, p in enumerate(providers)}
    declined = sum(1 for n in matched.placements if n.index >= 0 and first.get(n.provider, 0) > 0)
    return LevelPlacement(
        level=LEVELS[level].name,
        providers=report.providers,
        pieces=dict(Counter(s.provider for s in report.subgraphs)),
        declined=declined,
        copies=[c.name for c in matched.copies],
    )


def _report(
    model: onnx.ModelProto, matched: Assignment, providers: list[str], level: str, log: list[tuple[int, str, str]]
) -> PartitionReport:
    report = PartitionReport(
        title=note(THIS_MACHINE),
        simulated=False,
        providers_requested=providers,
        providers_used=matched.providers,
        level=LEVELS[level].name,
        nodes=matched.placements + matched.added,
        copies=matched.copies,
        log=_placement_lines(log),
        notes=_real_notes(matched, level),
    )
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

    maps = usability_checker.get_producer_consumer_maps
    if not hasattr(maps, "graph"):  # each simulation walked the whole graph for the same maps (0.3 s at 30,000 nodes)
        usability_checker.get_producer_consumer_maps = _OfLastGraph(maps)
    return usability_checker


@dataclass(frozen=True)
class _Matched:
    """How a simulation's groups are matched to the main graph's nodes, made once for every simulation."""

    # the checker may have copied the model (shape inference): its nodes are matched by op type and outputs
    index_of: dict[tuple[str, tuple[str, ...]], int]
    # Constant nodes run nowhere, as in the real partition (ORT makes their values weights when it loads the
    # model): counted on a provider here, they made a simulated bar twice as long as this machine's
    constant: frozenset[int]


def _matched(model: onnx.ModelProto) -> _Matched:
    nodes = model.graph.node
    return _Matched(
        index_of={(n.op_type, tuple(n.output)): i for i, n in enumerate(nodes)},
        constant=frozenset(i for i, n in enumerate(nodes) if n.op_type == "Constant" and n.domain in ("", "ai.onnx")),
    )


def _simulated_partition(model: onnx.ModelProto, key: str, matched: _Matched) -> PartitionReport:
    checker = _usability_checker()

    simulation = SIMULATED[key]  # core.partition.simulations: its rule for which ops and types it takes
    provider = simulation.provider
    try:
        info = simulation.takes(checker, model)
    except Exception as exc:  # the checker asserts on graphs it does not understand
        raise PartitionError(f"ONNX Runtime's {short_name(provider)} checker could not read this model: {exc}") from exc
    index_of, constant = matched.index_of, matched.constant
    provider_of: dict[int, str] = {}
    groups: list[list[int]] = []
    for group in info.supported_groups:
        members = [index_of.get((node.op_type, tuple(node.output))) for node in group]
        groups.append([i for i in members if i is not None and i not in constant])
        for i in groups[-1]:
            provider_of[i] = provider
    nodes = [
        NodePlacement(
            index=i,
            name=n.name,
            op_type=n.op_type,
            domain=n.domain,
            graph="main",
            provider="" if i in constant else provider_of.get(i, "CPUExecutionProvider"),
            note=CONSTANT if i in constant else "",
        )
        for i, n in enumerate(model.graph.node)
    ]
    report = PartitionReport(
        title=note(SIMULATED_TITLE, name=short_name(provider)),
        simulated=True,
        providers_requested=[provider, "CPUExecutionProvider"],
        providers_used=[provider, "CPUExecutionProvider"],
        level="as exported",
        nodes=nodes,
        unsupported_ops=sorted(op.removeprefix("ai.onnx:") for op in info.unsupported_ops),
    )
    report.notes.append(note(CHECKER, name=short_name(provider)))
    if constant:
        report.notes.append(note(CONSTANTS, count=len(constant)))
    if info.nodes_unsupported_due_to_dynamic_input:
        dynamic = int(info.nodes_unsupported_due_to_dynamic_input)
        report.notes.append(note(DYNAMIC, count=dynamic, name=short_name(provider)))
    if info.ops_with_unsupported_rank:
        report.notes.append(note(UNSUPPORTED_RANK, ops=", ".join(sorted(info.ops_with_unsupported_rank))))
    return _finish(report, model, groups)


def _runtime_providers(available: list[str]) -> list[str]:
    """What a partition asks for when the request names no provider: every provider of the runtime (the CPU
    provider last; Azure, which only forwards requests to an endpoint, never). The default wheel's: CPU alone."""
    devices = [p for p in available if p not in ("CPUExecutionProvider", "AzureExecutionProvider")]
    return [*devices, "CPUExecutionProvider"]


def _providers_asked(request: PartitionRequest, available: list[str]) -> tuple[list[str], list[str], dict[str, str]]:
    """The providers the request asks for, those of them this runtime has (the CPU provider among them, last if
    not asked for: ORT adds it to take whatever is left), and what each other one would need."""
    import onnxruntime as ort

    known = set(ort.get_all_providers()) | set(PROVIDERS)
    requested = list(dict.fromkeys(request.providers or _runtime_providers(available)))
    unknown = [p for p in requested if p not in known]
    if unknown:
        raise PartitionError(
            f"Unknown execution provider {', '.join(unknown)}. Known ones: {', '.join(sorted(known))}."
        )
    unavailable = {
        p: f"{short_name(p)} is not in this build of ONNX Runtime ({', '.join(available)}); it needs "
        + install_of(p)
        + "."
        for p in requested
        if p not in available
    }
    usable = [p for p in requested if p in available]
    if "CPUExecutionProvider" not in usable:
        usable.append("CPUExecutionProvider")  # what ORT itself does: CPU takes whatever is left
    return requested, usable, unavailable


def _beside_levels(
    stack: contextlib.ExitStack,
    request: PartitionRequest,
    model: onnx.ModelProto,
    usable: list[str],
    log: list[tuple[int, str, str]],
    report_progress: Callable[[float, str], None],
) -> tuple[Future[Assignment], LevelSessions | None, str]:
    """The partition's session started beside the levels' in one pool, two at a time (one per core), as ONNX
    Runtime's own five sessions build; its log is its own (core.runtime.ort routes each session's messages). The
    levels' ALL session is this one when it runs the CPU provider alone at ALL: it writes that level's graph (to the
    path returned last), and the levels build the other four. The pool and the levels end with ``stack``."""
    path, level = request.path, request.level
    weights = weight_bytes(model)
    shared = usable == ["CPUExecutionProvider"] and level == "all" and weights <= EXTERNAL_THRESHOLD
    all_file = str(level_file(path, request.levels_dir, "all")) if shared else ""
    levels_request = LevelsRequest(path=path, out_dir=request.levels_dir)
    count = len(level_keys(levels_request))
    pool = stack.enter_context(ThreadPoolExecutor(session_workers(count + (not shared)), "level"))
    said = _(
        "Creating a session with {names} beside the {count} levels' sessions: the partition is shown once "
        "they are all built"
    )
    report_progress(0.2, said.format(names=", ".join(short_name(p) for p in usable), count=count))
    Path(request.levels_dir).mkdir(parents=True, exist_ok=True)  # before the partition's session writes there
    # in the job's language (a thread starts in the default one): a refusal is explained to the page's reader
    placing = pool.submit(contextvars.copy_context().run, assign_providers, path, model, usable, level, log, all_file)
    try:
        levels = stack.enter_context(LevelSessions(levels_request, model, pool, ("all",) if shared else (), weights))
    except Exception:  # the partition stands; the page asks for the levels alone, which says why
        levels = None
    return placing, levels, all_file


def partition_model(request: PartitionRequest, progress: Callable[[float, str], None] | None = None) -> PartitionResult:
    """The real partition for the request's providers (on the runtime the worker runs in) and simulated ones for
    its ``simulate``; the fallbacks said first among the real partition's notes (core.runtime.fallback)."""
    import onnx
    import onnxruntime as ort

    report_progress = progress or (lambda fraction, message: None)
    available = ort.get_available_providers()
    path, level, out_dir = request.path, request.level, request.out_dir
    requested, usable, unavailable = _providers_asked(request, available)
    simulate = [s.lower() for s in request.simulate or []]
    bad = [s for s in simulate if s not in SIMULATED]
    if bad:
        raise PartitionError(f"Cannot simulate {', '.join(bad)}; simulations exist for: {', '.join(SIMULATED)}.")

    report_progress(0.1, _("Reading the model"))
    model = onnx.load_model(path, load_external_data=False)
    log: list[tuple[int, str, str]] = []
    levels: LevelSessions | None = None
    optimization, all_file = None, ""
    simulated_from = 0.3 if request.levels_dir else 0.5  # the levels' sessions take most of the time: 0.5-1 theirs
    with contextlib.ExitStack() as stack:
        if request.levels_dir:
            placing, levels, all_file = _beside_levels(stack, request, model, usable, log, report_progress)
            matched = placing.result()
        else:
            names = ", ".join(short_name(p) for p in usable)
            report_progress(0.3, _("Creating a session with {names}").format(names=names))
            matched = assign_providers(path, model, usable, level, log)
        real = _real_partition(model, matched, usable, level, log)
        used, nodes = real.providers_used, real.providers
        placed = Placed(runtime=request.runtime, asked=requested, available=available, used=used, nodes=nodes)
        real.notes[:0] = placement_notes(placed)  # before anything else the partition says
        refuse(real.notes, request.strict, real.fallback)
        reports = [real]
        levels_placed = []
        for n, other in enumerate(k for k in LEVELS if request.each_level and k != level):
            report_progress(0.4 + 0.1 * n, _("Placing the graph at {level}").format(level=LEVELS[other].name))
            levels_placed.append(_level_placement(path, model, usable, other))
        matched_nodes = _matched(model) if simulate else _Matched(index_of={}, constant=frozenset())
        for n, key in enumerate(simulate):
            simulating = _("Simulating {name}").format(name=SIMULATED[key].name)
            report_progress(simulated_from + 0.2 * n / max(len(simulate), 1), simulating)
            reports.append(_simulated_partition(model, key, matched_nodes))
        if levels is not None:
            built = {"all": ([all_file], log)} if all_file else {}
            try:
                optimization = levels.report(lambda done, said: report_progress(0.5 + 0.5 * done, said), built)
            except Exception:  # the partition stands; the page asks for the levels alone, which says why
                optimization = None
    if out_dir:
        for n, report in enumerate(reports):
            report.node_rows = write_rows(Path(out_dir) / f"placements-{n}.rows", report.nodes)
            report.nodes = []
    return PartitionResult(
        model=path.rsplit("/", 1)[-1],
        node_count=len(model.graph.node),
        available=available,
        unavailable=unavailable,
        reports=reports,
        runtime=request.runtime,
        onnxruntime=ort.__version__,
        levels=levels_placed,
        optimization=optimization,
        levels_failed=bool(request.levels_dir) and optimization is None,
    )
