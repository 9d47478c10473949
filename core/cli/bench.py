"""bench: PyTorch eager against ONNX Runtime, saved to the history, as the Benchmark page does."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from core import jobs
from core.bench import BenchRequest
from core.bench.records import EAGER_DEVICES
from core.cli.common import add_runtime_arguments, ints, nodes_text, padded, provider_names, split, target_backend
from core.cli.measuring import add_measuring_arguments, print_measured_json
from core.cli.plan import add_model_arguments, measured
from core.errors import IdentityRefused
from core.i18n import _, number
from core.identity import ANONYMOUS, Identity, named
from core.jobs import BENCH
from core.jobs.wire import to_data
from core.model.records import format_shape
from core.notes import say
from core.runtime.fallback import FALLBACKS
from core.runtime.harness import PER_CALL
from core.settings import load_settings

if TYPE_CHECKING:
    from core.bench import BenchReport

__all__ = ["register", "run"]


def register(parser: Any) -> None:
    add_model_arguments(parser, eager="measure ONNX Runtime only")
    parser.add_argument("--levels", default="disable,all", help="ORT optimization levels (default disable,all)")
    add_runtime_arguments(
        parser,
        providers="ORT execution providers to measure, each a configuration, e.g. openvino,cpu (default cpu)",
        runtime="the ONNX Runtime build that measures (`python -m core runtimes`); with it, its providers by default",
        strict="refuse (exit 2) a provider that leaves nodes to the CPU provider (session.disable_cpu_ep_fallback)",
    )
    parser.add_argument(
        "--eager-device",
        choices=EAGER_DEVICES,
        default="cpu",
        help="where PyTorch eager runs: cpu (default), or cuda when this torch sees a GPU (timed with "
        "torch.cuda.synchronize around each call)",
    )
    parser.add_argument("--threads", help="intra-op threads to sweep, e.g. 1,2 (default: every core but one)")
    parser.add_argument("--batch", help="batch sizes to sweep when the batch axis is dynamic, e.g. 1,8")
    parser.add_argument("--iters", type=int, default=200, help="measured calls per configuration (default 200)")
    parser.add_argument("--warmup", type=int, default=20, help="warm-up calls per configuration (default 20)")
    parser.add_argument(
        "--budget", type=float, default=120.0, help="time budget, seconds: opening the sessions, warm-up and measuring"
    )
    parser.add_argument("--no-save", action="store_true", help="do not save the run in the history")
    parser.add_argument(
        "--owner",
        default="",
        metavar="EMAIL",
        help="save the run as this person's (an email, or a user name), for their team's History and Dashboard (the "
        "team: --team, else the one team_domains gives the email's domain, else theirs alone)",
    )
    parser.add_argument("--team", default="", help="the team the run is saved for (default: see --owner)")
    add_measuring_arguments(parser)
    parser.set_defaults(func=run)


def _print(report: BenchReport) -> None:
    for warned in (n for n in report.notes if n.severity == "warning" and n.key in FALLBACKS):
        print(_("warning  {note}").format(note=say(warned)))  # a provider that fell back, before any figure
    print(say(report.headline))
    for name, used in report.settings.get("inputs", {}).items():
        print(_("input    {name}: {dtype} {shape}, {values}").format(
            name=name, dtype=used["dtype"], shape=format_shape(used["shape"]), values=used["values"]
        ))  # fmt: skip
    width = max(32, *(len(r.label) for r in report.results))  # "ORT ALL on openvino/OpenVINOExecutionProvider"
    print(
        padded(_("configuration"), width), padded(_("median"), 9, True), padded("p90", 9, True),
        padded("p99", 9, True), padded(_("items/s"), 10, True), padded(_("speedup"), 15, True),
        padded(_("max diff"), 9, True),
    )  # fmt: skip
    for r in report.results:
        speedup = f"{r.speedup:.2f}× ({r.speedup_low:.1f}–{r.speedup_high:.1f})" if r.speedup is not None else "-"
        diff = f"{r.max_abs_diff:.1e}" if r.max_abs_diff is not None else "-"
        print(
            f"{r.label:<{width}} {r.median_ms:>7.3f}ms {r.p90_ms:>7.3f}ms {r.p99_ms:>7.3f}ms {r.throughput:>10,.0f} "
            f"{speedup:>15} {diff:>9}"
        )
    env = report.environment
    said = (
        _("machine  {machine} on target {target}: {cpu}, {cores} cores ({logical} logical), {os}")
        if env.target
        else _("machine  {machine}: {cpu}, {cores} cores ({logical} logical), {os}")
    )
    print(said.format(
        machine=env.machine, target=env.target, cpu=env.cpu, cores=env.physical_cores, logical=env.logical_cores,
        os=env.os,
    ))  # fmt: skip
    print(_("versions {versions}").format(versions=", ".join(f"{k} {v}" for k, v in env.versions.items())))
    for r in (r for r in report.results if r.provider_nodes):
        print(_("nodes    {label}: {nodes}").format(label=r.label, nodes=nodes_text(r.provider_nodes)))
    for r in report.results:  # PyTorch eager on CUDA has its GPU memory at a call's peak (core.bench.eager)
        if r.gpu_peak_mb is not None:
            said = _("gpu      {label}: {mb} MiB of GPU memory at a call's peak")
            print(said.format(label=r.label, mb=number(r.gpu_peak_mb, 1)))
    for note in (n for n in report.notes if n.severity != "warning" or n.key not in FALLBACKS):
        print(_("note     {note}").format(note=say(note)))


def _owner(args: argparse.Namespace) -> Identity:
    """Whom the run is saved for (checked before any work: a name that cannot be one is refused, never cleaned)."""
    if args.team and not args.owner:
        raise IdentityRefused("--team names the team of the person --owner names: give --owner too.")
    return named(args.owner, args.team, load_settings().teams_by_domain)


def run(args: argparse.Namespace) -> int:
    backend = target_backend(args.target)  # a target that is not there, before any work
    owner = ANONYMOUS if args.no_save else _owner(args)
    with measured(args, backend) as model:
        request = BenchRequest(
            model=model,
            levels=[level.lower().removesuffix("_all") for level in split(args.levels)] or None,
            providers=provider_names(args.providers),
            threads=ints(args.threads, "--threads"),
            batches=ints(args.batch, "--batch"),
            iterations=args.iters,
            warmup=args.warmup,
            time_budget_s=args.budget,
            seed=args.seed,
            runtime=args.runtime,
            strict=args.strict,
            eager_device=args.eager_device,
        )
        from core.bench.eager import eager_routed  # (loads the torch helpers: only for a benchmark that runs)

        if not args.target:  # eager on CUDA: in this machine's GPU runtime, whose torch is a CUDA build
            request = eager_routed(request)
        report = jobs.run(BENCH, request, backend)
    if not args.no_save:
        from core.store import open_history  # SQLAlchemy: imported only by the commands that save

        open_history(load_settings()).save(report, owner=owner.user, team=owner.team)
    if args.json:
        data = to_data(report)
        data["results"] = [{k: v for k, v in r.items() if k not in PER_CALL} for r in data["results"]]
        data["headline"] = report.headline.english()  # a sentence, in English as every text of --json; notes as data
        print_measured_json(data, model, args.target)
        return 0
    _print(report)
    if not args.no_save:
        print(_("saved    run {run} in the history").format(run=report.id))
    return 0
