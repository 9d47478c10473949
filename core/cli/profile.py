"""profile: where one call's time goes, per ONNX Runtime node and per PyTorch eager layer, as the Profile page."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from core import jobs
from core.cli.common import add_runtime_arguments, padded, provider_names, target_backend
from core.cli.measuring import add_measuring_arguments, print_measured_json
from core.cli.plan import add_model_arguments, measured
from core.i18n import _
from core.jobs import PROFILE
from core.jobs.wire import to_data
from core.model.records import format_shape
from core.notes import say
from core.profile import ProfileRequest
from core.profile.words import note_text
from core.runtime.fallback import FALLBACKS
from core.runtime.ort import short_name

if TYPE_CHECKING:
    from core.profile import ProfileReport
    from core.profile.records import PhaseProfile

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
    parser.add_argument("--top", type=int, default=15, help="nodes to print (default 15)")
    add_runtime_arguments(
        parser,
        providers="ORT execution providers in order of preference, e.g. openvino (the CPU provider last)",
        runtime="the ONNX Runtime build that profiles (`python -m core runtimes`); with it, its providers by default",
        strict="refuse (exit 2) a provider that leaves nodes to the CPU provider (session.disable_cpu_ep_fallback)",
    )
    add_measuring_arguments(parser)
    parser.set_defaults(func=run)


def _print(report: ProfileReport, top: int) -> None:
    from core.profile.profiler import headline

    for said in (n for n in report.notes if n.key in FALLBACKS):  # a provider that fell back, before any figure
        print((_("warning  {note}") if said.severity == "warning" else _("note     {note}")).format(note=say(said)))
    print(say(headline(report)))
    for name, used in report.settings.get("inputs", {}).items():
        print(_("input    {name}: {dtype} {shape}, {values}").format(
            name=name, dtype=used["dtype"], shape=format_shape(used["shape"]), values=used["values"]
        ))  # fmt: skip
    print(_("call     {call} ms (CPU {cpu} ms): kernels {kernels} ms, overhead {overhead} ms").format(
        call=f"{report.call_ms:.3f}", cpu=f"{report.cpu_ms:.3f}", kernels=f"{report.kernel_ms:.3f}",
        overhead=f"{report.overhead_ms:.3f}",
    ))  # fmt: skip
    for part in report.providers if len(report.providers) > 1 or report.runtime != "default" else []:
        print(_("provider {provider}: nodes {nodes} ({node_share}), {ms} ms ({time_share} of the kernels)").format(
            provider=short_name(part.provider), nodes=part.nodes, node_share=f"{part.node_share:.0%}",
            ms=f"{part.mean_ms:.3f}", time_share=f"{part.time_share:.0%}",
        ))  # fmt: skip
    print(
        padded(_("node"), 40), padded(_("op type"), 18), padded(_("provider"), 9), padded("ms", 8, True),
        padded(_("share"), 6, True), " " + _("module / note"),
    )  # fmt: skip
    for node in report.nodes[:top]:
        print(
            f"{node.name[:40]:<40} {node.op_type[:18]:<18} {short_name(node.provider)[:9]:<9} {node.mean_ms:>8.3f} "
            f"{node.share:>6.1%}  {node.module or '-'}{'; ' + note_text(node.note) if node.note else ''}"
        )
    if report.phases:
        _print_phases(report.phases["prefill"], report.phases["decode"], top)
    if report.matched:
        print(padded(_("eager layer(s)"), 40), padded("eager ms", 9, True), padded("ORT ms", 9, True), " " + _("note"))
        for row in report.matched:
            label = " + ".join(row.modules) or "(" + note_text(row.note) + ")"
            eager = f"{row.eager_ms:.3f}" if row.eager_ms is not None else "-"
            ort = f"{row.ort_ms:.3f}" if row.ort_ms is not None else "-"
            print(f"{label[:40]:<40} {eager:>9} {ort:>9}  {note_text(row.note) if row.modules else ''}")
    for note in (n for n in report.notes if n.key not in FALLBACKS):
        print(_("note     {note}").format(note=say(note)))


def _print_phases(prefill: PhaseProfile, decode: PhaseProfile, top: int) -> None:
    """Per op type, the prefill's time beside the decode step's, the op types that take the most in either first."""
    print(_("prefill  {tokens} tokens: {call} ms (kernels {kernels} ms); decode one token after {past}: {step} ms "
            "(kernels {step_kernels} ms)").format(
        tokens=prefill.new_tokens, call=f"{prefill.call_ms:.3f}", kernels=f"{prefill.kernel_ms:.3f}",
        past=decode.past, step=f"{decode.call_ms:.3f}", step_kernels=f"{decode.kernel_ms:.3f}",
    ))  # fmt: skip
    print(padded(_("op type"), 34), padded(_("prefill ms"), 11, True), padded(_("decode ms"), 11, True))
    before = {t.op_type: t.mean_ms for t in prefill.op_types}
    after = {t.op_type: t.mean_ms for t in decode.op_types}
    for op in sorted(before.keys() | after.keys(), key=lambda o: -max(before.get(o, 0.0), after.get(o, 0.0)))[:top]:
        print(f"{op[:34]:<34} {before.get(op, 0.0):>11.3f} {after.get(op, 0.0):>11.3f}")


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
            runtime=args.runtime,
            providers=provider_names(args.providers),
            strict=args.strict,
        )
        report = jobs.run(PROFILE, request, backend)
    if args.json:
        print_measured_json(to_data(report), model, args.target)
        return 0
    _print(report, args.top)
    return 0
