"""Which execution provider runs which node: ORT's own assignment, and simulated what-ifs for NNAPI and CoreML.

Runs in the worker. The real partition comes from ONNX Runtime itself (``get_provider_graph_assignment_info``,
by original node name) and from the "Node placements" lines of its log, captured through its logger callback.
Providers this machine lacks are simulated with ORT's mobile usability checker, and marked as simulated.
"""

from __future__ import annotations

import contextlib
import re
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from core.errors import PartitionError
from core.graphview import GraphLayout, layout_graph

MAX_LAYOUT_NODES = 20_000  # as the Decode page: larger graphs are listed, not drawn

__all__ = [
    "LEVELS",
    "PROVIDERS",
    "SIMULATED",
    "NodePlacement",
    "PartitionReport",
    "PartitionResult",
    "ProviderInfo",
    "Subgraph",
    "capture_ort_log",
    "partition_model",
    "provider_table",
    "session_options",
    "short_name",
]

# name -> (short name, the hardware it drives, what it takes to get it)
PROVIDERS: dict[str, tuple[str, str, str]] = {
    "CPUExecutionProvider": ("CPU", "Any CPU; ORT's own kernels, the fallback for every op", "built in"),
    "CUDAExecutionProvider": (
        "CUDA",
        "NVIDIA GPUs through CUDA and cuDNN",
        "the onnxruntime-gpu package (instead of onnxruntime) and an NVIDIA GPU with CUDA 12 and cuDNN 9",
    ),
    "TensorrtExecutionProvider": (
        "TensorRT",
        "NVIDIA GPUs through TensorRT: whole subgraphs compiled into optimized engines",
        "onnxruntime-gpu, an NVIDIA GPU and the TensorRT libraries",
    ),
    "MIGraphXExecutionProvider": ("MIGraphX", "AMD GPUs through MIGraphX", "a ROCm build of ONNX Runtime, AMD GPU"),
    "OpenVINOExecutionProvider": (
        "OpenVINO",
        "Intel CPUs, integrated GPUs and NPUs through OpenVINO",
        "the onnxruntime-openvino package",
    ),
    "DnnlExecutionProvider": ("oneDNN", "Intel CPUs through oneDNN kernels", "an ONNX Runtime built with --use_dnnl"),
    "VitisAIExecutionProvider": ("Vitis AI", "AMD/Xilinx FPGAs and Ryzen AI NPUs", "the Ryzen AI / Vitis AI build"),
    "QNNExecutionProvider": (
        "QNN",
        "Qualcomm Snapdragon NPUs (Hexagon) through the QNN SDK",
        "the onnxruntime-qnn package on a Snapdragon device",
    ),
    "NnapiExecutionProvider": (
        "NNAPI",
        "Android phones' accelerators (GPU, DSP, NPU) through Android's Neural Networks API",
        "the onnxruntime-android package on an Android device",
    ),
    "VSINPUExecutionProvider": ("VSI NPU", "VeriSilicon NPUs in embedded SoCs", "a VSINPU build of ONNX Runtime"),
    "JsExecutionProvider": ("JS", "Browsers, through ONNX Runtime Web's JavaScript kernels", "onnxruntime-web"),
    "CoreMLExecutionProvider": (
        "CoreML",
        "Apple devices (Neural Engine, GPU, CPU) through Core ML",
        "the onnxruntime package on macOS or iOS",
    ),
    "DmlExecutionProvider": (
        "DirectML",
        "Any DirectX 12 GPU on Windows through DirectML",
        "the onnxruntime-directml package on Windows",
    ),
    "RknpuExecutionProvider": ("RKNPU", "Rockchip NPUs", "an RKNPU build of ONNX Runtime"),
    "WebNNExecutionProvider": ("WebNN", "Browsers' Web Neural Network API (CPU, GPU, NPU)", "onnxruntime-web"),
    "WebGpuExecutionProvider": ("WebGPU", "GPUs through WebGPU (browsers, Dawn natively)", "onnxruntime-web"),
    "XnnpackExecutionProvider": (
        "XNNPACK",
        "Arm and x86 CPUs through XNNPACK, tuned for mobile and the web",
        "an ONNX Runtime built with XNNPACK (the mobile packages)",
    ),
    "CANNExecutionProvider": ("CANN", "Huawei Ascend NPUs through CANN", "the CANN build of ONNX Runtime"),
    "AzureExecutionProvider": (
        "Azure",
        "Not hardware: sends the model's requests to an Azure endpoint",
        "built in (needs an endpoint)",
    ),
    "ROCMExecutionProvider": ("ROCm", "AMD GPUs through ROCm", "a ROCm build of ONNX Runtime"),
}

# simulated provider -> (short, how ORT's checker is called)
SIMULATED: dict[str, str] = {"nnapi": "NnapiExecutionProvider", "coreml": "CoreMLExecutionProvider"}

LEVELS: dict[str, tuple[str, int]] = {
    "disable": ("DISABLE_ALL", 0),
    "basic": ("BASIC", 1),
    "extended": ("EXTENDED", 2),
    "layout": ("LAYOUT", 3),
    "all": ("ALL", 99),
}


def short_name(provider: str) -> str:
    return PROVIDERS.get(provider, (provider.removesuffix("ExecutionProvider"), "", ""))[0]


@dataclass
class ProviderInfo:
    name: str
    short: str
    hardware: str
    available: bool
    install: str


def provider_table() -> list[ProviderInfo]:
    """Every provider ORT knows of, the ones in this build first."""
    import onnxruntime as ort

    available = ort.get_available_providers()
    names = list(dict.fromkeys([*available, *ort.get_all_providers()]))
    table = []
    for name in names:
        short, hardware, install = PROVIDERS.get(name, (short_name(name), "", "a build of ONNX Runtime that has it"))
        table.append(ProviderInfo(name, short, hardware, name in available, install))
    return table


@dataclass
class NodePlacement:
    index: int  # position in the main graph; -1 for nodes of subgraphs, or nodes ORT added
    name: str
    op_type: str
    domain: str
    graph: str  # "main", a subgraph path such as "n3/then_branch", or "added by ORT"
    provider: str  # "" when the node does not run: see ``note``
    subgraph: int = -1  # which entry of PartitionReport.subgraphs holds it
    note: str = ""  # why a node has no provider, or that it calls an inlined function


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
    nodes: list[NodePlacement]
    providers: dict[str, int]  # provider -> nodes of the main graph
    subgraphs: list[Subgraph]
    fallback: list[str]  # node names that went to CPU although another provider came first
    copies: list[CopyNode]
    log: list[str] = field(default_factory=list)
    unsupported_ops: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    summary: str = ""


@dataclass
class PartitionResult:
    model: str
    node_count: int  # nodes of the main graph
    available: list[str]
    unavailable: dict[str, str]  # requested but not in this build -> what it would take
    reports: list[PartitionReport]
    layout: GraphLayout | None = None


def session_options(level: str = "all", threads: int = 0) -> Any:
    import onnxruntime as ort

    if level not in LEVELS:
        raise PartitionError(f"Unknown optimization level {level!r}; choose one of {', '.join(LEVELS)}.")
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel(LEVELS[level][1])
    options.intra_op_num_threads = threads
    return options


@contextlib.contextmanager
def capture_ort_log(lines: list[tuple[int, str, str]], severity: int = 0) -> Iterator[None]:
    """Collect ORT's log messages as (severity, code location, message) while the block runs."""
    import onnxruntime as ort

    def callback(sev: int, category: str, logid: str, location: str, message: str) -> None:
        lines.append((sev, location, message))

    ort.set_default_logger_callback(callback, severity)
    try:
        yield
    finally:
        ort.set_default_logger_callback(None)
        ort.set_default_logger_severity(2)  # the callback's severity stays otherwise: back to warnings


_ORT_PREFIX = re.compile(r"^\[ONNXRuntimeError\] : \d+ : \w+ : ")
_ORT_LOAD = re.compile(r"Load model from \S+ failed:\s*")
_ORT_SOURCE = re.compile(r"/onnxruntime_src/\S+:\d+ .*?\) ")
_ORT_ALLOC = re.compile(r"Failed to allocate memory for requested buffer of size (\d+)")


def ort_message(exc: BaseException) -> str:
    """ORT's error text without its prefix, the server's file paths and its C++ source locations."""
    text = _ORT_SOURCE.sub("", _ORT_LOAD.sub("", _ORT_PREFIX.sub("", str(exc).strip())))
    alloc = _ORT_ALLOC.search(text)
    if alloc:
        size = int(alloc.group(1))
        text += f" (one tensor of {size / 1e9:,.1f} GB: more memory than this machine gives a job)"
    return text.strip()[:1500]


def explain_session_error(exc: Exception, what: str) -> PartitionError:
    """ORT's refusal in one readable sentence."""
    return PartitionError(f"ONNX Runtime could not {what}: {ort_message(exc)}")


def _graph_nodes(model: Any) -> Iterator[tuple[int, str, Any]]:
    """(main-graph index or -1, graph path, node) for the main graph and every subgraph, iteratively."""
    from core.intake import attribute_subgraphs

    stack: list[tuple[str, Any, bool]] = [("main", model.graph, True)]
    while stack:
        path, graph, is_main = stack.pop()
        for index, node in enumerate(graph.node):
            yield (index if is_main else -1), path, node
            for label, sub in attribute_subgraphs(node):
                stack.append((f"{path}/{node.name or node.op_type}.{label}", sub, False))


def _connected(model: Any, provider_of: dict[int, str]) -> list[list[int]]:
    """Connected pieces of the main graph whose nodes share a provider (union-find over tensor edges)."""
    nodes = model.graph.node
    parent = list(range(len(nodes)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    producer = {out: i for i, node in enumerate(nodes) for out in node.output if out}
    for i, node in enumerate(nodes):
        for name in node.input:
            j = producer.get(name)
            if j is not None and provider_of.get(i) and provider_of.get(i) == provider_of.get(j):
                parent[find(i)] = find(j)
    members: dict[int, list[int]] = defaultdict(list)
    for i in range(len(nodes)):
        if provider_of.get(i):
            members[find(i)].append(i)
    return list(members.values())


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


def _summary(report: PartitionReport, node_count: int) -> str:
    first = report.providers_requested[0] if report.providers_requested else "CPUExecutionProvider"
    on_first = report.providers.get(first, 0)
    pieces = sum(1 for s in report.subgraphs if s.provider == first)
    text = (
        f"{node_count:,} node{'s' * (node_count != 1)}: {on_first:,} on {short_name(first)} in {pieces} "
        f"partition{'s' * (pieces != 1)}"
    )
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


def _real_partition(
    path: str, model: Any, providers: list[str], level: str, log: list[tuple[int, str, str]]
) -> PartitionReport:
    import onnxruntime as ort

    options = session_options(level)
    options.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
    options.log_severity_level = 0
    try:
        with capture_ort_log(log):
            session = ort.InferenceSession(path, options, providers=providers)
        groups = session.get_provider_graph_assignment_info()
    except Exception as exc:  # ORT raises its own Fail/InvalidGraph/NotImplemented types
        raise explain_session_error(exc, "create a session for this model") from exc

    # ORT lists nodes by their original names; match them to the graph's nodes (in order, per name and op,
    # so unnamed nodes match too). Whatever is left over was added by ORT (copies, inlined function bodies).
    waiting: dict[tuple[str, str], deque[tuple[int, str, Any]]] = defaultdict(deque)
    for index, graph_path, node in _graph_nodes(model):
        waiting[(node.name, node.op_type)].append((index, graph_path, node))
    placements: list[NodePlacement] = []
    added: list[NodePlacement] = []
    copies: list[CopyNode] = []
    fused: list[list[int]] = []  # main-graph nodes a compiling provider took as one subgraph
    for group in groups:
        members: list[int] = []
        for node in group.get_nodes():
            queue = waiting.get((node.name, node.op_type))
            if queue:
                index, graph_path, proto = queue.popleft()
                placement = NodePlacement(index, node.name, node.op_type, proto.domain, graph_path, group.ep_name)
                placements.append(placement)
                if index >= 0:
                    members.append(index)
            else:
                added.append(NodePlacement(-1, node.name, node.op_type, node.domain, "added by ORT", group.ep_name))
                if node.op_type.startswith("Memcpy"):
                    copies.append(CopyNode(node.name, node.op_type, group.ep_name))
        if len(members) > 1:
            fused.append(members)
    functions = {(f.domain, f.name) for f in model.functions}
    body_provider = Counter(n.provider for n in added if not n.op_type.startswith("Memcpy")).most_common(1)
    for queue in waiting.values():
        for index, graph_path, proto in queue:
            # ORT inlines calls of local functions; the call runs where its body's nodes were placed
            inlined = (proto.domain, proto.op_type) in functions and body_provider
            provider = body_provider[0][0] if inlined else ""
            note = (
                INLINED
                if inlined
                else CONSTANT
                if proto.op_type == "Constant" and proto.domain in ("", "ai.onnx")
                else REMOVED
            )
            placements.append(
                NodePlacement(index, proto.name, proto.op_type, proto.domain, graph_path, provider, note=note)
            )
    placements.sort(key=lambda n: (n.graph != "main", n.graph, n.index))
    report = PartitionReport(
        "This machine",
        False,
        providers,
        session.get_providers(),
        LEVELS[level][0],
        placements + added,
        {},
        [],
        [],
        copies,
        log=_placement_lines(log),
    )
    calls = [n for n in placements if (n.domain, n.op_type) in functions]
    if calls:
        report.notes.append(
            f"{len(calls)} node(s) call local functions, which ONNX Runtime inlines: the {len(added) - len(copies)} "
            "nodes of their bodies are listed as added by ORT, and each call is shown where its body ran."
        )
    constants = sum(1 for n in placements if n.note == CONSTANT)
    removed = sum(1 for n in placements if n.note == REMOVED)
    if constants:
        report.notes.append(
            f"{constants} Constant node(s) run nowhere: ONNX Runtime turns their values into weights when it loads "
            "the model."
        )
    if removed:
        report.notes.append(
            f"{removed} node(s) run nowhere: the optimizer at {LEVELS[level][0]} removed them before partitioning "
            "(constant folding, Identity and other no-op eliminations). Choose DISABLE_ALL to see them placed."
        )
    if copies:
        report.notes.append(
            f"{len(copies)} copy node(s) move tensors between device and host memory where the graph crosses "
            "from one provider to another; each costs a transfer on every run."
        )
    return _finish(report, model, fused)


def _simulated_partition(model: Any, key: str) -> PartitionReport:
    from onnxruntime.tools.mobile_helpers import usability_checker as checker

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
    return report


def partition_model(
    path: str,
    providers: list[str] | None = None,
    level: str = "all",
    simulate: list[str] | None = None,
    with_layout: bool = True,
    progress: Callable[[float, str], None] | None = None,
) -> PartitionResult:
    """The real partition for ``providers`` (in order of preference) and simulated ones for ``simulate``."""
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
    layout = None
    if with_layout and len(model.graph.node) <= MAX_LAYOUT_NODES:
        report_progress(0.95, "Laying out the graph")
        layout = layout_graph(model.graph, "main")
    return PartitionResult(path.rsplit("/", 1)[-1], len(model.graph.node), available, unavailable, reports, layout)
