"""Partition: which execution provider runs which node, from ONNX Runtime itself, and simulated what-ifs for
NNAPI and CoreML.

Runs in the worker. The real partition is ORT's own assignment (core.runtime.placement), with the "Node
placements" lines of its log; it is summed up per provider and cut into the connected pieces each provider
runs. Providers this machine lacks are simulated with ORT's mobile usability checker, and marked as simulated.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.errors import PartitionError
from core.model.topology import connected_groups
from core.partition.records import PartitionReport, PartitionRequest, PartitionResult, Subgraph
from core.runtime.ort import LEVELS, PROVIDERS, short_name
from core.runtime.placement import CONSTANT, INLINED, REMOVED, Assignment, NodePlacement, assign_providers
from core.runtime.placement import placement_lines as _placement_lines
from core.tables import write_rows

if TYPE_CHECKING:
    import onnx

__all__ = ["KERNEL_PROVIDERS", "SIMULATED", "partition_model"]

# simulated provider -> (short, how ORT's checker is called)
SIMULATED: dict[str, str] = {"nnapi": "NnapiExecutionProvider", "coreml": "CoreMLExecutionProvider"}


def _connected(model: onnx.ModelProto, provider_of: dict[int, str]) -> list[list[int]]:
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
    report.summary = _summary(report, len(model.graph.node))
    report.node_total = len(report.nodes)
    report.main_providers = [sys.intern(provider_of.get(i, "")) for i in range(len(model.graph.node))]
    report.node_providers = sorted({n.provider for n in report.nodes})
    return report


def _real_notes(matched: Assignment, level: str) -> list[str]:
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
            f"{removed} node(s) run nowhere: the optimizer at {LEVELS[level].name} removed them before partitioning "
            "(constant folding, Identity and other no-op eliminations). Choose DISABLE_ALL to see them placed."
        )
    if matched.copies:
        notes.append(
            f"{len(matched.copies)} copy node(s) move tensors between device and host memory where the graph "
            "crosses from one provider to another; each costs a transfer on every run."
        )
    return notes


def _real_partition(
    path: str, model: onnx.ModelProto, providers: list[str], level: str, log: list[tuple[int, str, str]]
) -> PartitionReport:
    matched = assign_providers(path, model, providers, level, log)
    report = PartitionReport(
        title="This machine",
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

    return usability_checker


def _simulated_partition(model: onnx.ModelProto, key: str) -> PartitionReport:
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
        NodePlacement(
            index=i,
            name=n.name,
            op_type=n.op_type,
            domain=n.domain,
            graph="main",
            provider=provider_of.get(i, "CPUExecutionProvider"),
        )
        for i, n in enumerate(model.graph.node)
    ]
    report = PartitionReport(
        title=f"{short_name(provider)} (simulated)",
        simulated=True,
        providers_requested=[provider, "CPUExecutionProvider"],
        providers_used=[provider, "CPUExecutionProvider"],
        level="as exported",
        nodes=nodes,
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


def partition_model(request: PartitionRequest, progress: Callable[[float, str], None] | None = None) -> PartitionResult:
    """The real partition for the request's providers and simulated ones for its ``simulate``."""
    import onnx
    import onnxruntime as ort

    report_progress = progress or (lambda fraction, message: None)
    available = ort.get_available_providers()
    known = set(ort.get_all_providers()) | set(PROVIDERS)
    path, level, out_dir = request.path, request.level, request.out_dir
    requested = list(dict.fromkeys(request.providers or ["CPUExecutionProvider"]))
    unknown = [p for p in requested if p not in known]
    if unknown:
        raise PartitionError(
            f"Unknown execution provider {', '.join(unknown)}. Known ones: {', '.join(sorted(known))}."
        )
    unavailable = {
        p: f"{short_name(p)} is not in this build of ONNX Runtime ({', '.join(available)}); it needs "
        + (PROVIDERS[p].install if p in PROVIDERS else "a build of ONNX Runtime that has it")
        + "."
        for p in requested
        if p not in available
    }
    usable = [p for p in requested if p in available]
    if "CPUExecutionProvider" not in usable:
        usable.append("CPUExecutionProvider")  # what ORT itself does: CPU takes whatever is left
    simulate = [s.lower() for s in request.simulate or []]
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
    return PartitionResult(
        model=path.rsplit("/", 1)[-1],
        node_count=len(model.graph.node),
        available=available,
        unavailable=unavailable,
        reports=reports,
    )
