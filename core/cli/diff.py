"""diff: what differs between two ONNX models: nodes added, removed and changed (matched by name, through a
quantizer's renames, and by position), the weights' changes as statistics, inputs, outputs, opsets, metadata."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from core import jobs
from core.cli.common import english_data
from core.diff import KIND_WORDS, DiffReport, DiffRequest, NodeDiff
from core.diff.words import change_text
from core.errors import WorkbenchError
from core.i18n import _, number
from core.jobs import DIFF
from core.jobs.wire import to_data

__all__ = ["register", "report_json", "run"]

SHOWN = 30  # nodes of each kind printed (--json has them all)


def register(parser: Any) -> None:
    parser.add_argument("a", help="the model before (.onnx)")
    parser.add_argument("b", help="the model after (.onnx): a new version, its quantized variant, a re-export")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(func=run)


def _file(path: str) -> str:
    file = Path(path).expanduser().resolve()
    if not file.is_file():
        raise WorkbenchError(_("No such file: {path} (give the paths of two ONNX files).").format(path=path))
    return str(file)


def _node_json(n: NodeDiff) -> dict[str, Any]:
    data = {"node": n.node, "graph": n.graph, "op_type": n.op_type, "index": n.index}
    if n.node_a:
        data["node_a"] = n.node_a
    if n.matched_by:
        data["matched_by"] = n.matched_by
    if n.changes or n.weights:
        data["changes"] = to_data(n.changes)
        data["weights"] = english_data(to_data(n.weights))  # a weight's note, as an English sentence
    return data


def report_json(report: DiffReport) -> dict[str, Any]:
    """The diff as ``--json`` prints it: ``added``, ``removed`` and ``changed`` list nodes by name."""
    return {
        "a": report.model_a,
        "b": report.model_b,
        "same": report.same,
        "nodes_a": report.nodes_a,
        "nodes_b": report.nodes_b,
        "added": [_node_json(n) for n in report.added],
        "removed": [_node_json(n) for n in report.removed],
        "changed": [_node_json(n) for n in report.changed],
        "renamed": [_node_json(n) for n in report.renamed],
        "unchanged": report.unchanged,
        "model": to_data(report.model),
        "weights_compared": report.weights_compared,
        "constant_weights": report.constant_weights,
        "seconds": round(report.seconds, 3),
    }


def _print(report: DiffReport) -> None:
    print(
        _("{b} against {a}: {added} added, {removed} removed, {changed} changed, {unchanged} unchanged").format(
            a=report.model_a,
            b=report.model_b,
            added=number(len(report.added)),
            removed=number(len(report.removed)),
            changed=number(len(report.changed)),
            unchanged=number(report.unchanged),
        )
    )
    for sign, nodes in (("+", report.added), ("-", report.removed), ("~", report.changed)):
        for n in nodes[:SHOWN]:
            where = "" if n.graph == "main" else f"  [{n.graph}]"
            text = change_text(n) if sign == "~" else ""
            print(f"  {sign} {n.node} ({n.op_type}){where}" + (f"  {text}" if text else ""))
        if len(nodes) > SHOWN:
            print("    " + _("… and {count} more (--json lists them all)").format(count=number(len(nodes) - SHOWN)))
    if report.renamed:
        print("  " + _("{count} node(s) matched under another name, otherwise the same").format(
            count=number(len(report.renamed))
        ))  # fmt: skip
    for m in report.model:
        where = "" if m.graph == "main" else f"  [{m.graph}]"
        kind = _(KIND_WORDS[m.kind]) if m.kind in KIND_WORDS else m.kind
        print(f"  {kind}  {m.name}: {m.before or '∅'} → {m.after or '∅'}{where}")


def run(args: argparse.Namespace) -> int:
    request = DiffRequest(path_a=_file(args.a), path_b=_file(args.b))
    report = jobs.run(DIFF, request)
    if args.json:
        print(json.dumps(report_json(report), indent=2, ensure_ascii=False))
    else:
        _print(report)
    return 0
