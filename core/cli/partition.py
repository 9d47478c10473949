"""partition: which execution provider runs which node, and the graph at each optimization level."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from core import jobs
from core.cli.common import (
    add_runtime_arguments,
    add_target_argument,
    as_onnx,
    environment_json,
    in_own_folder,
    runtime_choice,
    split,
    target_backend,
)
from core.cli.partition_text import print_declined, print_level_placements, print_runtime, print_side_by_side
from core.i18n import _, number
from core.jobs import OPTIMIZE, PARTITION
from core.jobs.process import TypedHandle
from core.jobs.wire import to_data
from core.notes import say
from core.partition import (
    LevelsRequest,
    OptimizationReport,
    PartitionRequest,
    PartitionResult,
    fusions_used,
    level_changes,
)
from core.partition.words import summary
from core.runtime.ort import short_name

__all__ = ["register", "run"]

_log = logging.getLogger(__name__)


def register(parser: Any) -> None:
    parser.add_argument("model", help="an .onnx path, or a PyTorch model (exported first with its defaults)")
    add_runtime_arguments(
        parser,
        providers="in order of preference, e.g. cuda,cpu (default: every provider of the runtime)",
        runtime="the ONNX Runtime build that places it (`python -m core runtimes`), or two side by side: "
        "default,openvino",
        strict="refuse (exit 2) when a provider asked for is absent, takes no node or leaves nodes to the CPU provider",
    )
    parser.add_argument("--each-level", action="store_true", help="the real partition at every optimization level too")
    parser.add_argument("--level", default="all", choices=["disable", "basic", "extended", "layout", "all"])
    parser.add_argument("--simulate", help="simulated partitions, e.g. nnapi,coreml")
    parser.add_argument("--levels", action="store_true", help="also compare the graph at every optimization level")
    parser.add_argument("--out-dir", help="with --levels: keep the optimized model of each level here")
    add_target_argument(parser)
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(func=run)


def _print(result: PartitionResult, levels: OptimizationReport | None, saved: bool, named: bool = False) -> None:
    for message in result.unavailable.values():
        print(_("note: {note}").format(note=message), file=sys.stderr)
    print_runtime(result, always=named)
    for report in result.reports:
        for warned in (n for n in report.notes if n.severity == "warning"):  # a fallback, before any figure
            print(_("warning: {message}").format(message=say(warned)))
        print(summary(report))  # in the reader's language (the JSON keeps the English one)
        for subgraph in report.subgraphs:
            ops = ", ".join(f"{op} {n}" for op, n in subgraph.ops.items())
            print("  " + _("subgraph {index} {provider} {nodes} nodes  {ops}").format(
                index=f"{subgraph.index:<3}", provider=f"{short_name(subgraph.provider):<8}",
                nodes=f"{subgraph.nodes:>5}", ops=ops,
            ))  # fmt: skip
        if report.unsupported_ops:
            print("  " + _("unsupported ops: {ops}").format(ops=", ".join(report.unsupported_ops)))
        for line in report.log:
            print("  " + _("ORT log  {line}").format(line=line.strip()))
        for note in (n for n in report.notes if n.severity != "warning"):
            print("  " + _("note  {note}").format(note=say(note)))
        print_declined(report)
    print_level_placements(result)
    if levels is None:
        return
    print(_("optimization levels ({count} nodes in the model):").format(count=number(levels.original_nodes)))
    for level, change in zip(levels.levels, level_changes(levels.levels), strict=True):
        print("  " + _("{level} {count} nodes  {transformers}").format(
            level=f"{level.name:<12}", count=f"{level.node_count:>6}", transformers=", ".join(level.transformers) or "-"
        ))  # fmt: skip
        if change.same_as_before:
            kept = (
                _("{count} of the {total} rewrite(s) of the level before").format(
                    count=change.same_as_before, total=change.before_total
                )
                if change.same_as_before < change.before_total
                else _("the {count} rewrite(s) of the level before").format(count=change.same_as_before)
            )
            said = _("{kept}, and:") if change.by_kind else _("{kept}, nothing more")
            print("      " + said.format(kept=kept))
        for kind, items in change.by_kind.items():
            print(f"      {kind:<8} {sum(n for _text, n in items)}")
            for text, count in items:
                print(f"        {text}" + (f" (×{count})" if count > 1 else ""))
        if saved:
            print("      " + _("saved   {path}").format(path=level.path))
    for op, line in fusions_used(levels.levels).items():
        print(f"  {op}: {line}")


def run(args: argparse.Namespace) -> int:
    backend = target_backend(args.target)  # a target that is not there, before any work
    runtimes, providers, strict = runtime_choice(args)
    with tempfile.TemporaryDirectory(prefix="workbench-") as tmp:
        record = in_own_folder(as_onnx(args.model, Path(tmp))[0], Path(tmp), backend)
        requests = [
            PartitionRequest(
                path=record.path,
                providers=providers,
                level=args.level,
                simulate=split(args.simulate) if k == 0 else None,  # the simulations once, beside the first runtime
                runtime=runtime,
                strict=strict,
                each_level=args.each_level,
            )
            for k, runtime in enumerate(runtimes)
        ]
        results = []
        for n, request in enumerate(requests):  # one runtime after the other: each builds sessions on every core
            leveled: TypedHandle[OptimizationReport] | None = None
            if args.levels and n == 0:
                out_dir = Path(args.out_dir).resolve() if args.out_dir else Path(tmp) / "optimized"
                levels_request = LevelsRequest(path=record.path, out_dir=str(out_dir))
                if request.runtime == "default":
                    results.append(_with_levels(replace(request, levels_dir=str(out_dir)), levels_request, backend))
                    continue
                # at the same time: on a large model both spend seconds in ORT building sessions
                leveled = jobs.submit(OPTIMIZE, levels_request, backend)
            results.append(_results(jobs.submit(PARTITION, request, backend), leveled))
    if args.json:
        blocks = [_partition_json(result, levels, bool(args.out_dir)) for result, levels in results]
        data = blocks[0] if len(blocks) == 1 else {"model": blocks[0]["model"], "runtimes": blocks}
        data["environment"] = environment_json(None, args.target)
        print(json.dumps(data, indent=2))
        return 0
    for result, levels in results:
        _print(result, levels, bool(args.out_dir), named=len(results) > 1)
    if len(results) > 1:
        print_side_by_side([result for result, _levels in results])
    return 0


def _results(
    partitioned: TypedHandle[PartitionResult], leveled: TypedHandle[OptimizationReport] | None
) -> tuple[PartitionResult, OptimizationReport | None]:
    """Both jobs' results, their warnings logged (printed to stderr); when one fails the other is stopped."""
    try:
        result = partitioned.result()
        levels = leveled.result() if leveled is not None else None
    except BaseException:
        for handle in (partitioned, leveled):
            if handle is not None and not handle.done():
                handle.cancel()
                with contextlib.suppress(Exception):
                    handle.result(timeout=30)  # ended, before its folder is removed
        raise
    for handle in (partitioned, leveled):
        for warning in handle.warnings if handle is not None else ():
            _log.warning(warning)
    return result, levels


def _with_levels(
    request: PartitionRequest, levels_request: LevelsRequest, backend: Any
) -> tuple[PartitionResult, OptimizationReport | None]:
    """The partition and its levels from one job: the partition's session built beside the levels' and, at ALL with
    the CPU provider alone, as that level's (core.partition.partitioner), as the floor builds five sessions two at a
    time. Where the levels failed, the levels job alone says why."""
    result, _none = _results(jobs.submit(PARTITION, request, backend), None)
    if result.levels_failed:
        return result, jobs.submit(OPTIMIZE, levels_request, backend).result()
    return result, result.optimization


def _partition_json(result: PartitionResult, levels: OptimizationReport | None, saved: bool) -> dict[str, Any]:
    data: dict[str, Any] = {
        "model": result.model,
        "node_count": result.node_count,
        "runtime": result.runtime,
        "onnxruntime": result.onnxruntime,
        "available": result.available,
        "unavailable": result.unavailable,
    }
    reports = []
    for report in result.reports:
        reports.append(
            {
                "title": report.title.english(),
                "simulated": report.simulated,
                "summary": report.summary,
                "providers_requested": report.providers_requested,
                "level": report.level,
                "nodes": [
                    {"name": n.name, "op_type": n.op_type, "domain": n.domain, "graph": n.graph, "provider": n.provider}
                    for n in report.nodes
                ],
                "providers": report.providers,
                "subgraphs": to_data(report.subgraphs),
                "fallback": report.fallback,
                "copies": to_data(report.copies),
                "unsupported_ops": report.unsupported_ops,
                "log": report.log,
                "notes": [note.english() for note in report.notes],
                "warnings": [note.english() for note in report.notes if note.severity == "warning"],
                "declined": [
                    {**to_data(d), "reason": d.reason.english(), "provider": d.provider} for d in report.declined
                ],
                "contrib": to_data(report.contrib),
            }
        )
    data.update(reports[0])  # the real partition at the top level; simulated ones under "simulations"
    data["simulations"] = reports[1:]
    if result.levels:
        data["placement_levels"] = to_data(result.levels)
    if levels is not None:
        data["levels"] = {
            level.name: {
                "node_count": level.node_count,
                "op_counts": level.op_counts,
                "transformers": level.transformers,
                "rewrites": [{"kind": r.kind, "text": r.text} for r in level.rewrites],
                **({"path": level.path} if saved else {}),
            }
            for level in levels.levels
        }
    return data
