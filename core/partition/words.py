"""What a partition says in words: its one-line summary, its title and its notes. The title and the notes cross as
data (core.notes: a template below and its values), said in the reader's language where they are shown; the summary
is written anew from the report in the current language (``summary``; the result keeps it in English for the
command line's JSON)."""

from __future__ import annotations

from core.i18n import N_, _, ngettext, number, pgettext
from core.partition.records import PartitionReport
from core.runtime.ort import short_name

__all__ = [
    "CALLS_INLINED",
    "CHECKER",
    "CONSTANTS",
    "COPIES",
    "DYNAMIC",
    "KERNEL_PROVIDERS",
    "REMOVED_NODES",
    "SIMULATED_TITLE",
    "THIS_MACHINE",
    "UNSUPPORTED_RANK",
    "summary",
]

# providers that run each node with a kernel of their own: they take nodes one by one, and "partitions" are
# only the connected runs of nodes they happen to hold (compiling providers such as TensorRT, OpenVINO, NNAPI or
# CoreML fuse each partition into one compiled piece)
KERNEL_PROVIDERS = {
    "CPUExecutionProvider",
    "CUDAExecutionProvider",
    "ROCMExecutionProvider",
    "XnnpackExecutionProvider",
}

THIS_MACHINE = N_("This machine")
SIMULATED_TITLE = N_("{name} (simulated)")
# the notes (core.notes: a report keeps the template and its values)
CALLS_INLINED = N_(
    "{calls} node(s) call local functions, which ONNX Runtime inlines: the {added} nodes of their bodies are listed "
    "as added by ORT, and each call is shown where its body ran."
)
CONSTANTS = N_(
    "{count} Constant node(s) run nowhere: ONNX Runtime turns their values into weights when it loads the model."
)
REMOVED_NODES = N_(
    "{count} node(s) run nowhere: the optimizer at {level} removed them before partitioning (constant folding, "
    "Identity and other no-op eliminations). Choose DISABLE_ALL to see them placed."
)
COPIES = N_(
    "{count} copy node(s) move tensors between device and host memory where the graph crosses from one provider to "
    "another; each costs a transfer on every run."
)
CHECKER = N_(
    "Simulated with ONNX Runtime's own usability checker for {name}: it knows which ops the {name} provider takes, "
    "and groups them the way the partitioner would. Nothing ran on such hardware."
)
DYNAMIC = N_(
    "{count} node(s) have inputs of dynamic size, which {name} cannot take; fix the input shapes to move them off "
    "the CPU."
)
UNSUPPORTED_RANK = N_("Ops with inputs of unsupported rank: {ops}")


def _others(report: PartitionReport, first: str) -> list[str]:
    others = {p: n for p, n in report.providers.items() if p != first and n}
    if first != "CPUExecutionProvider":
        return [
            ngettext("{count} falls back to {name}", "{count} fall back to {name}", n).format(
                count=number(n), name=short_name(p)
            )
            if p == "CPUExecutionProvider"
            else _("{count} on {name}").format(count=number(n), name=p)
            for p, n in others.items()
        ]
    return [_("{count} on {name}").format(count=number(n), name=short_name(p)) for p, n in others.items()]


def summary(report: PartitionReport) -> str:
    """One line over the main graph's nodes (the metrics and the share chart count the same), with the nodes of
    subgraphs named apart, in the current language."""
    node_count = len(report.main_providers)
    first = report.providers_requested[0] if report.providers_requested else "CPUExecutionProvider"
    on_first = report.providers.get(first, 0)
    pieces = sum(1 for s in report.subgraphs if s.provider == first)
    values = {"count": number(node_count), "placed": number(on_first), "name": short_name(first)}
    head = ngettext(
        "{count} node in the main graph: {placed} on {name}",
        "{count} nodes in the main graph: {placed} on {name}",
        node_count,
    ).format(**values)
    if first not in KERNEL_PROVIDERS:
        parts = ngettext("{count} partition", "{count} partitions", pieces).format(count=number(pieces))
        head = _("{placed} in {partitions}").format(placed=head, partitions=parts)
    clauses = [head, *_others(report, first)]
    idle = sum(1 for n in report.nodes if n.index >= 0 and not n.provider)
    if idle:
        clauses.append(_("{count} run nowhere (constants and nodes the optimizer removed)").format(count=number(idle)))
    text = pgettext("clauses", ", ").join(clauses)
    inner = sum(1 for n in report.nodes if n.index < 0 and n.graph != "added by ORT")
    if inner:
        text = _("{summary}; {count} more in subgraphs, with the provider of the node that holds them").format(
            summary=text, count=number(inner)
        )
    return _("{summary} (simulated)").format(summary=text) if report.simulated else text
