"""partition's text for runtimes: which build placed the model, the nodes each provider declined and why, the
placement at each level, and two runtimes side by side (core.cli.partition prints the rest)."""

from __future__ import annotations

from collections import Counter

from core.cli.common import padded
from core.i18n import _, ngettext, number, pgettext
from core.notes import say
from core.partition import PartitionReport, PartitionResult
from core.runtime.ort import short_name

__all__ = ["MAX_DECLINED_SHOWN", "print_declined", "print_level_placements", "print_runtime", "print_side_by_side"]

MAX_DECLINED_SHOWN = 20  # lines; --json lists every node


def _counts(providers: dict[str, int], pieces: dict[str, int] | None = None) -> str:
    parts = []
    for provider, nodes in providers.items():
        text = _("{provider} {count}").format(provider=short_name(provider), count=number(nodes))
        if pieces is not None:
            count = pieces.get(provider, 0)
            text += " " + ngettext("({count} piece)", "({count} pieces)", count).format(count=number(count))
        parts.append(text)
    return pgettext("list", ", ").join(parts) or "-"


def print_runtime(result: PartitionResult, always: bool = False) -> None:
    """Which runtime placed the model (said for another runtime than the default, or ``always``)."""
    if result.runtime == "default" and not always:
        return
    providers = pgettext("list", ", ").join(short_name(p) for p in result.available)
    print(_("runtime {name}: onnxruntime {version} ({providers})").format(
        name=result.runtime, version=result.onnxruntime, providers=providers
    ))  # fmt: skip


def print_declined(report: PartitionReport) -> None:
    """Each node a provider declined, where it went and why, at most MAX_DECLINED_SHOWN of them."""
    for declined in report.declined[:MAX_DECLINED_SHOWN]:
        print("  " + _("declined by {provider}: {node} ({op}) runs on {placed}: {reason}").format(
            provider=short_name(declined.provider), node=declined.name, op=declined.op_type,
            placed=short_name(declined.placed), reason=say(declined.reason),
        ))  # fmt: skip
    rest = len(report.declined) - MAX_DECLINED_SHOWN
    if rest > 0:
        print("  " + _("… and {count} more declined nodes (--json lists them all)").format(count=number(rest)))


def print_level_placements(result: PartitionResult) -> None:
    """The real partition at each other optimization level, in numbers."""
    if not result.levels:
        return
    print(_("placement at each optimization level:"))
    for level in result.levels:
        copies = pgettext("list", ", ").join(level.copies) or "-"
        print("  " + padded(level.level, 12) + " " + _("{providers}; {declined} declined; copies: {copies}").format(
            providers=_counts(level.providers, level.pieces), declined=number(level.declined), copies=copies
        ))  # fmt: skip


def print_side_by_side(results: list[PartitionResult]) -> None:
    """The runtimes' real partitions of one model, one column each: nodes (pieces) per provider, declined nodes and
    copies."""
    reports = [result.reports[0] for result in results]
    providers = list(dict.fromkeys(p for report in reports for p in report.providers))
    width = max(16, *(len(r.runtime) + 2 for r in results))
    print(_("side by side ({model}):").format(model=results[0].model))
    print("  " + padded("", 16) + "".join(padded(r.runtime, width, True) for r in results))
    for provider in providers:
        cells = []
        for report in reports:
            nodes = report.providers.get(provider, 0)
            pieces = Counter(s.provider for s in report.subgraphs).get(provider, 0)
            cells.append(f"{number(nodes)} ({number(pieces)})" if nodes else "-")
        print("  " + padded(short_name(provider), 16) + "".join(padded(c, width, True) for c in cells))
    rows = [
        (_("declined"), [number(len(report.declined)) for report in reports]),
        (_("copies"), [number(len(report.copies)) for report in reports]),
        (_("warnings"), [number(sum(n.severity == "warning" for n in report.notes)) for report in reports]),
    ]
    for label, cells in rows:
        print("  " + padded(label, 16) + "".join(padded(c, width, True) for c in cells))
