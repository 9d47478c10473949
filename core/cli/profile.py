"""profile: where one call's time goes, per ONNX Runtime node and per PyTorch eager layer, as the Profile page."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from core import jobs
from core.cli.common import add_code_arguments, add_target_argument, environment_json, padded, target_backend
from core.cli.plan import add_model_arguments, add_plan_arguments, measured, plan_json
from core.i18n import _
from core.jobs import PROFILE
from core.jobs.wire import to_data
from core.model.records import format_shape
from core.notes import say
from core.profile import ProfileRequest
from core.profile.words import note_text

if TYPE_CHECKING:
    from core.profile import ProfileReport

__all__ = ["register", "run"]


def register(parser: Any) -> None:
    add_model_arguments(parser, eager="profile ONNX Runtime only")
    parser.add_argument("--level", default="all", help="ORT optimization level: disable, basic, extended, layout, all")
    parser.add_argument(
        "--threads", type=int, default=0, help="intra-op threads for both engines (default: every core but one)"
    )
    parser.add_argument("--batch", type=int, default=1, help="batch size (default 1)")
    parser.add_argument("--iters", type=int, default=100, help="profiled calls per engine (default 100)")
    parser.add_argument("--warmup", type=int, default=10, help="warm-up calls per engine (default 10)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the generated inputs")
    parser.add_argument("--top", type=int, default=15, help="nodes to print (default 15)")
    add_plan_arguments(parser)
    add_code_arguments(parser)
    add_target_argument(parser)
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(func=run)


def report_json(report: ProfileReport, plan: list[Any]) -> dict[str, Any]:
    data: dict[str, Any] = to_data(report)
    data["inputs"] = plan_json(plan)
    return data


def _print(report: ProfileReport, top: int) -> None:
    from core.profile.profiler import headline

    print(say(headline(report)))
    for name, used in report.settings.get("inputs", {}).items():
        print(_("input    {name}: {dtype} {shape}, {values}").format(
            name=name, dtype=used["dtype"], shape=format_shape(used["shape"]), values=used["values"]
        ))  # fmt: skip
    print(_("call     {call} ms (CPU {cpu} ms): kernels {kernels} ms, overhead {overhead} ms").format(
        call=f"{report.call_ms:.3f}", cpu=f"{report.cpu_ms:.3f}", kernels=f"{report.kernel_ms:.3f}",
        overhead=f"{report.overhead_ms:.3f}",
    ))  # fmt: skip
    print(
        padded(_("node"), 40), padded(_("op type"), 18), padded("ms", 8, True), padded(_("share"), 6, True),
        " " + _("module / note"),
    )  # fmt: skip
    for node in report.nodes[:top]:
        print(
            f"{node.name[:40]:<40} {node.op_type[:18]:<18} {node.mean_ms:>8.3f} {node.share:>6.1%}  "
            f"{node.module or '-'}{'; ' + note_text(node.note) if node.note else ''}"
        )
    if report.matched:
        print(padded(_("eager layer(s)"), 40), padded("eager ms", 9, True), padded("ORT ms", 9, True), " " + _("note"))
        for row in report.matched:
            label = " + ".join(row.modules) or "(" + note_text(row.note) + ")"
            eager = f"{row.eager_ms:.3f}" if row.eager_ms is not None else "-"
            ort = f"{row.ort_ms:.3f}" if row.ort_ms is not None else "-"
            print(f"{label[:40]:<40} {eager:>9} {ort:>9}  {note_text(row.note) if row.modules else ''}")
    for note in report.notes:
        print(_("note     {note}").format(note=say(note)))


def run(args: argparse.Namespace) -> int:
    backend = target_backend(args.target)  # a target that is not there, before any work
    with measured(args, backend) as model:
        request = ProfileRequest(
            model=model,
            level=args.level.lower().removesuffix("_all"),
            threads=args.threads,
            batch=args.batch,
            iterations=args.iters,
            warmup=args.warmup,
            seed=args.seed,
        )
        report = jobs.run(PROFILE, request, backend)
    if args.json:
        data = report_json(report, model.inputs)
        data["environment"] = environment_json(data["environment"], args.target)
        print(json.dumps(data, indent=2))
        return 0
    _print(report, args.top)
    return 0
