"""What ONNX Runtime's graph optimizer does at each level: node and op counts, fusions, removals, additions.

Runs in the worker. For every level a session is created with ``optimized_model_filepath`` set, so ORT writes
the graph it will run; that graph is compared with the original one. The sessions are built in threads, one per
core, and each one's log (which names the transformers that changed the graph) is told apart by its logid.
Nodes are matched by what they compute (op, domain and output tensors), so unnamed nodes match too. Rewritten
regions are found by walking back from the outputs of each connected group of new nodes through the original
nodes that disappeared.
"""

from __future__ import annotations

import contextvars
import hashlib
import os
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, as_completed, wait
from pathlib import Path
from typing import TYPE_CHECKING

from core.errors import PartitionError
from core.i18n import N_, _
from core.model.proto import iter_tensors, tensor_nbytes, walk_graphs
from core.model.topology import connected_groups
from core.notes import warning
from core.partition.records import LevelResult, LevelsRequest, OptimizationReport, Rewrite
from core.runtime.ort import LEVELS, capture_session_logs, explain_session_error, session_options

if TYPE_CHECKING:
    import onnx

__all__ = [
    "BUILD_ORDER",
    "Built",
    "LevelSessions",
    "compare_graphs",
    "level_file",
    "level_keys",
    "levels_report",
    "node_keys",
    "optimize_levels",
    "session_workers",
    "weight_bytes",
]

LAYOUT_WARNING = N_(
    "At LAYOUT and ALL, ONNX Runtime rewrites the graph for this CPU's vector width (NCHWc blocked layouts). "
    "A saved file of these levels is specific to this kind of machine: use it only where it was made, or save "
    "at EXTENDED and let each machine apply the layout optimizations itself when it loads the model."
)
EXTERNAL_THRESHOLD = 1 << 30  # models with more weight bytes than this keep their weights in a side file


def _subgraph_nodes(model: onnx.ModelProto) -> int:
    """Nodes in the bodies of If, Loop and Scan at any depth (not in local functions)."""
    import onnx

    bodies = (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
    if not any(attr.type in bodies for node in model.graph.node for attr in node.attribute):
        return 0  # no body at all: a graph of 30,000 nodes is not walked (0.05 s, once per level)
    return sum(len(visit.graph.node) for visit in walk_graphs(model) if visit.path != "main")


def _op(node: onnx.NodeProto) -> str:
    return node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}:{node.op_type}"


_Key = tuple[str, str, tuple[str, ...]]


def _key(node: onnx.NodeProto) -> _Key:
    return (node.domain or "", node.op_type, tuple(node.output))


def node_keys(graph: onnx.GraphProto) -> list[_Key]:
    """Each node's domain, op and outputs: what tells a node the optimizer kept from one it made."""
    return [_key(node) for node in graph.node]


def _unmatched(keys: list[_Key], kept: Counter[_Key]) -> list[int]:
    """Indexes of the nodes left over once ``kept`` (node keys in both graphs, with counts) is used up."""
    remaining = Counter(kept)
    left: list[int] = []
    for i, key in enumerate(keys):
        if remaining[key] > 0:
            remaining[key] -= 1
        else:
            left.append(i)
    return left


def compare_graphs(
    original: onnx.GraphProto, optimized: onnx.GraphProto, original_keys: list[_Key] | None = None
) -> list[Rewrite]:
    """The rewrites that turn ``original`` (a GraphProto) into ``optimized``; ``original_keys``, when given, are
    ``node_keys(original)`` (reading them from the protobuf costs seconds on a large graph, once per level)."""
    old_keys = original_keys if original_keys is not None else node_keys(original)
    new_keys = node_keys(optimized)
    kept = Counter(new_keys) & Counter(old_keys)
    removed = _unmatched(old_keys, kept)
    new = _unmatched(new_keys, kept)

    # connected groups of new nodes (through tensors they pass to each other)
    producer_new = {out: j for j in new for out in optimized.node[j].output if out}
    links = [(j, producer_new[name]) for j in new for name in optimized.node[j].input if name in producer_new]
    groups = connected_groups(new, links)

    # Walk back from new nodes' outputs through original nodes that are gone. A fusion keeps the name of the
    # tensor it finally produces, so each such node is walked on its own (a chain of FusedConvs is several
    # fusions); a group holding a node whose outputs are all new tensors (a layout rewrite, Gather → Split) is
    # one region and walked as a whole.
    removed_set = set(removed)
    producer_old = {out: i for i, node in enumerate(original.node) for out in node.output if out}
    absorbed_by: dict[int, int] = {}
    units: list[list[int]] = []
    for members in groups:
        if all(any(out in producer_old for out in optimized.node[j].output) for j in members):
            units.extend([j] for j in sorted(members))
        else:
            units.append(sorted(members))
    rewrites: list[Rewrite] = []
    for unit, members in enumerate(units):
        stack = [out for j in members for out in optimized.node[j].output if out in producer_old]
        taken: list[int] = []
        seen: set[str] = set()
        while stack:
            tensor = stack.pop()
            if tensor in seen:
                continue
            seen.add(tensor)
            gone = producer_old.get(tensor)
            if gone is None or gone not in removed_set or gone in absorbed_by:
                continue
            absorbed_by[gone] = unit
            taken.append(gone)
            stack.extend(original.node[gone].input)
        taken.sort()
        new_nodes = [optimized.node[j] for j in members]
        layout = any(n.domain.endswith("nchwc") or n.op_type.startswith("Reorder") for n in new_nodes)
        kind = (
            "layout"
            if layout and taken
            else "fused"
            if len(taken) > len(new_nodes)
            else "replaced"
            if taken
            else "added"
        )
        rewrites.append(
            Rewrite(
                kind=kind,
                before=[_op(original.node[i]) for i in taken],
                after=[_op(n) for n in new_nodes],
                nodes_before=[original.node[i].name or original.node[i].op_type for i in taken],
                nodes_after=[n.name or n.op_type for n in new_nodes],
            )
        )
    for i in removed:
        if i not in absorbed_by:
            node = original.node[i]
            name = node.name or node.op_type
            rewrites.append(Rewrite(kind="removed", before=[_op(node)], after=[], nodes_before=[name], nodes_after=[]))
    return rewrites


_MODIFIED = "GraphTransformer "


def _transformers(log: list[tuple[int, str, str]]) -> list[str]:
    """Names of the graph transformers whose log line says they modified the graph."""
    names: list[str] = []
    for _sev, _where, message in log:
        if message.startswith(_MODIFIED) and " modified: 1" in message:
            name = message[len(_MODIFIED) :].split(" modified")[0]
            if name not in names:
                names.append(name)
    return names


def session_workers(count: int) -> int:
    """How many levels' sessions to build at once: one per core this process may use, as each holds the whole
    graph (ORT releases the GIL while it builds a session, so threads run them side by side)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(count, cores))


def _logid(key: str) -> str:
    return f"workbench-level-{key}"


def _optimize_at(path: str, key: str, target: Path, weight_bytes: int) -> list[str]:
    """Build a session of ``path`` at level ``key`` that writes the graph it would run to ``target``; the files
    it may have written (the model, and its weights beside it when they are large)."""
    import onnxruntime as ort

    options = session_options(key)
    options.optimized_model_filepath = str(target)
    options.logid = _logid(key)  # its log lines are told apart from the other levels' by this
    # never run, it needs no memory arena: the arena logs each weight it holds on ORT's default logger (18,000 lines
    # on a transformer of 30,000 nodes), each a call into Python for the capture, waiting on the GIL while Partition's
    # own work holds it; the graph written is the same, byte for byte
    options.enable_cpu_mem_arena = False
    files = [str(target)]
    if weight_bytes > EXTERNAL_THRESHOLD:
        data = f"{target.name}.data"
        options.add_session_config_entry("session.optimized_model_external_initializers_file_name", data)
        options.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes", "1024")
        files.append(str(target.parent / data))
    # INFO: the lines that name the transformers that modified the graph (graph_transformer_mgr.cc) and the
    # warnings; not VERBOSE's, a thousand lines of the fusions' every attempt on a transformer of 6,000 nodes
    options.log_severity_level = 1
    try:
        ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    except Exception as exc:
        raise explain_session_error(exc, f"optimize this model at {LEVELS[key].name}", path) from exc
    return files


def _level_result(
    original: onnx.ModelProto,
    original_keys: list[_Key],
    key: str,
    files: list[str],
    log: list[tuple[int, str, str]],
    described: dict[bytes, LevelResult] | None = None,
) -> LevelResult:
    """What the optimized model of one level, written in ``files``, changed from ``original``. ``described``: the
    levels described so far, by their graph's digest; a level whose graph is one of theirs, byte for byte (EXTENDED,
    LAYOUT and ALL of a transformer without convolutions), is described from it, not read and compared again."""
    import onnx

    warned = [m for sev, _, m in log if sev >= 2 and "hardware specific" in m]
    kept = [f for f in files if Path(f).exists()]
    # one file (its weights in it): the graph is the file's bytes, read once for its digest and, when no level
    # described has it, its parse; a side file of weights is not read for this
    data = Path(files[0]).read_bytes() if described is not None and len(kept) == 1 else None
    digest = hashlib.sha256(data).digest() if data is not None else b""
    same = described.get(digest) if described is not None and digest else None
    if same is None:
        optimized = (
            onnx.load_model_from_string(data)
            if data is not None
            else onnx.load_model(files[0], load_external_data=False)
        )
        ops = dict(Counter(_op(node) for node in optimized.graph.node))
        rewrites = compare_graphs(original.graph, optimized.graph, original_keys)
        nodes, inner = len(optimized.graph.node), _subgraph_nodes(optimized)
    else:
        ops, rewrites, nodes, inner = dict(same.op_counts), list(same.rewrites), same.node_count, same.subgraph_nodes
    result = LevelResult(
        key=key,
        name=LEVELS[key].name,
        node_count=nodes,
        op_counts=ops,
        rewrites=rewrites,
        transformers=_transformers(log),
        path=files[0],
        files=kept,
        size_bytes=sum(Path(f).stat().st_size for f in kept),
        warning=warning(LAYOUT_WARNING) if warned else None,
        subgraph_nodes=inner,
    )
    if described is not None and digest and same is None:
        described[digest] = result
    return result


def optimize_levels(request: LevelsRequest, progress: Callable[[float, str], None] | None = None) -> OptimizationReport:
    """Optimize the model at each level, save each result in the request's ``out_dir`` and describe what
    changed. The levels' sessions are built side by side, one per core (on a large model each takes seconds)."""
    return levels_report(request, progress)


def level_file(path: str, out_dir: str, key: str) -> Path:
    """Where the graph optimized at level ``key`` is saved."""
    return Path(out_dir) / f"{Path(path).stem}.{key}.onnx"


def weight_bytes(model: onnx.ModelProto) -> int:
    """The bytes of the model's tensors: a level's graph of a model with more than EXTERNAL_THRESHOLD is saved with
    its weights in a side file, else in one file, as a session built elsewhere (Partition's own) writes it."""
    return sum(tensor_nbytes(t) for _, t in iter_tensors(model))


Built = dict[str, tuple[list[str], list[tuple[int, str, str]]]]  # level → (its files, its session's log)
# the order the levels' sessions start in: the costliest first (on a transformer of 30,000 nodes LAYOUT, ALL and
# EXTENDED take 6-6.5 CPU-seconds, BASIC 3, DISABLE_ALL 2), so that two at a time they end about together
BUILD_ORDER = ("all", "layout", "extended", "basic", "disable")


def level_keys(request: LevelsRequest) -> list[str]:
    """The levels the request asks for, in their order (every level when it names none)."""
    keys = request.levels or list(LEVELS)
    unknown = [k for k in keys if k not in LEVELS]
    if unknown:
        raise PartitionError(f"Unknown optimization level {', '.join(unknown)}; choose from {', '.join(LEVELS)}.")
    return keys


class LevelSessions:
    """The levels' sessions of one model building in ``pool``, beside whatever else the caller builds there
    (Partition's own session: it writes the ALL level's graph, so ``elsewhere`` names it and it is not built
    here); their logs are captured until the block ends, which waits for every session started."""

    def __init__(
        self,
        request: LevelsRequest,
        model: onnx.ModelProto,
        pool: ThreadPoolExecutor,
        elsewhere: tuple[str, ...] = (),
        weights: int | None = None,
    ) -> None:
        self.request, self.model, self.pool = request, model, pool
        self.weights = weight_bytes(model) if weights is None else weights
        self.keys = level_keys(request)
        self.building = sorted((k for k in self.keys if k not in elsewhere), key=BUILD_ORDER.index)
        self.logs: dict[str, list[tuple[int, str, str]]] = {_logid(key): [] for key in self.keys}
        self.made: dict[str, Future[list[str]]] = {}
        self._capture = capture_session_logs(self.logs)

    def __enter__(self) -> LevelSessions:
        path, out_dir = self.request.path, self.request.out_dir
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        self._capture.__enter__()
        for key in self.building:
            file = level_file(path, out_dir, key)
            in_language = contextvars.copy_context().run  # the job's language, not a new thread's default
            self.made[key] = self.pool.submit(in_language, _optimize_at, path, key, file, self.weights)
        return self

    def __exit__(self, *raised: object) -> None:
        for made in self.made.values():
            made.cancel()  # the levels not started yet are not wanted any more (none are left once reported)
        wait(self.made.values())  # a session still building logs until it ends
        self._capture.__exit__(None, None, None)

    def report(
        self, progress: Callable[[float, str], None] | None = None, built: Built | None = None
    ) -> OptimizationReport:
        """What each level changed, a level described as soon as its session has written its graph; ``built``:
        the levels named ``elsewhere``, with their files and their sessions' logs."""
        original = self.model
        report_progress = progress or (lambda fraction, message: None)
        report = OptimizationReport(
            original_nodes=len(original.graph.node),
            original_ops=dict(Counter(_op(n) for n in original.graph.node)),
            original_subgraph_nodes=_subgraph_nodes(original),
        )
        original_keys = node_keys(original.graph)
        logs = dict(self.logs)
        for key, (_files, log) in (built or {}).items():
            logs[_logid(key)] = log
        done: dict[str, LevelResult] = {}
        described: dict[bytes, LevelResult] = {}
        for key, (files, _log) in (built or {}).items():
            done[key] = _level_result(original, original_keys, key, files, logs[_logid(key)], described)
        waiting = {made: key for key, made in self.made.items()}
        for made in as_completed(waiting):
            key = waiting[made]
            done[key] = _level_result(original, original_keys, key, made.result(), logs[_logid(key)], described)
            said = _("Optimized at {level} ({done} of {count} levels)")
            report_progress(
                len(done) / len(self.keys), said.format(level=LEVELS[key].name, done=len(done), count=len(self.keys))
            )
        report.levels = [done[key] for key in self.keys]
        return report


def levels_report(request: LevelsRequest, progress: Callable[[float, str], None] | None = None) -> OptimizationReport:
    """As ``optimize_levels``."""
    import onnx

    keys = level_keys(request)
    original = onnx.load_model(request.path, load_external_data=False)
    report_progress = progress or (lambda fraction, message: None)
    report_progress(0.0, _("Optimizing at every level"))
    with (
        ThreadPoolExecutor(session_workers(len(keys)), "level") as pool,
        LevelSessions(request, original, pool) as sessions,
    ):
        report = sessions.report(report_progress)
    report_progress(1.0, _("Done"))
    return report
