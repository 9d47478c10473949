"""upgrade: a model in an old opset brought to a newer one with onnx's version converter, checked against the
original, with what changed."""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from core import jobs
from core.cli.common import describe, english_data, padded
from core.cli.plan import add_plan_arguments, plan_from_args, plan_json
from core.errors import WorkbenchError
from core.i18n import _, number
from core.jobs import UPGRADE
from core.jobs.wire import to_data
from core.notes import say
from core.upgrade import DEFAULT_UPGRADE_OPSET, UpgradeReport, UpgradeRequest

__all__ = ["register", "run"]


def register(parser: Any) -> None:
    parser.add_argument("model", help="an .onnx path (several joined by ',' for a model with its data files)")
    parser.add_argument(
        "--opset",
        type=int,
        default=DEFAULT_UPGRADE_OPSET,
        help=f"the ai.onnx opset to go to (default {DEFAULT_UPGRADE_OPSET})",
    )
    parser.add_argument("-o", "--output", required=True, help="where to write the new version (.onnx)")
    parser.add_argument(
        "--reference-budget",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="how long onnx's reference evaluator may run an original ONNX Runtime cannot (default 30)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON")
    add_plan_arguments(parser)
    parser.set_defaults(func=run)


def _print(out: Path, report: UpgradeReport) -> None:
    print(f"{out}  ({say(report.summary)})")
    print("  " + _("opset     ai.onnx {before} → {after}, IR version {ir_before} → {ir_after}").format(
        before=report.opset_before, after=report.opset_after, ir_before=report.ir_before, ir_after=report.ir_after
    ))  # fmt: skip
    for change in report.changes:
        print(f"  {change.kind:<9} {change.op} ×{change.nodes}: {say(change.text)}")
    print("  " + _("unchanged {count} node(s)").format(count=number(report.unchanged_nodes)))
    for check in report.checks:
        detail = say(check.detail) if check.detail is not None else ""
        print(f"  {padded(_('pass') if check.ok else _('FAIL'), 9)} {say(check.name)}: {detail}")
    for note in report.notes:
        print("  " + _("note      {note}").format(note=say(note)))


def run(args: argparse.Namespace) -> int:
    out = Path(args.output).expanduser().resolve()
    record = describe(args.model)
    if record.format != "onnx":
        raise WorkbenchError(
            _(
                "“{model}” is a {format}: upgrade takes an ONNX model. Export a PyTorch model with "
                "`python -m core export MODEL -o OUT.onnx --opset {opset}` instead."
            ).format(model=args.model, format=_(record.format_label), opset=DEFAULT_UPGRADE_OPSET)
        )
    if out.suffix != ".onnx" or out.is_dir():
        raise WorkbenchError(
            _("-o {output}: give the new version's file name, ending in .onnx").format(output=repr(args.output))
        )
    with tempfile.TemporaryDirectory(prefix="workbench-") as tmp:
        plan = plan_from_args(record, None, args, Path(tmp))
        request = UpgradeRequest(
            path=record.path,
            opset=args.opset,
            inputs=plan,
            out_dir=str(Path(tmp) / "upgraded"),
            file_name=out.name,
            reference_budget_s=args.reference_budget,
        )
        report = jobs.run(UPGRADE, request)
        written = [out.parent / Path(f).relative_to(Path(report.path).parent) for f in report.files]
        for produced, target in zip(report.files, written, strict=True):  # the model, and its external data
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(produced, target)
    if args.json:
        data = {
            **english_data(to_data(report)),  # its sentences in English, as docs/cli.md has them
            "path": str(out),
            "files": [str(f) for f in written],
            "summary": report.summary.english(),
        }
        print(json.dumps({**data, "inputs": plan_json(plan)}, indent=2))
    else:
        _print(out, report)
    return 0 if report.ok else 1
