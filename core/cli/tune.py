"""tune: the fastest session configuration surely faster than ONNX Runtime's defaults, within a time budget, as
the Deploy page finds it; saved to the history."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from core import jobs
from core.cli.common import add_runtime_arguments, ints, nodes_text, padded, runtime_choice, split, target_backend
from core.cli.measuring import add_measuring_arguments, print_measured_json
from core.cli.plan import add_model_arguments, measured
from core.errors import JobError
from core.i18n import _, number
from core.jobs import TUNE
from core.notes import say, significant
from core.runtime.provider_options import CPU
from core.settings import load_settings
from core.tune import TuneReport, TuneRequest
from core.tune.across import tune_across
from core.tune.budget import TunePartial, longest_budget, read_partial
from core.tune.saved import candidate_data, report_data

__all__ = ["register", "run"]


def register(parser: Any) -> None:
    add_model_arguments(parser)
    parser.add_argument("--budget", type=float, default=60.0, help="seconds to search, all in (default 60)")
    parser.add_argument(
        "--variants",
        default="dynamic-qint8,fp16",
        help="Quantize's variants to try, comma-separated ('' for none; default dynamic-qint8,fp16)",
    )
    parser.add_argument("--batch", help="batch sizes to try when the batch axis is open (default 8)")
    add_runtime_arguments(
        parser,
        providers="execution providers to try, e.g. openvino (default: each of every runtime's; CPU is always tried)",
        runtime="the ONNX Runtime builds to tune on, each in its own worker, e.g. default,openvino (`python -m core "
        "runtimes`); the budget is shared between them",
        strict="never choose a configuration whose provider took no node or left nodes to the CPU provider",
    )
    parser.add_argument(
        "-o", "--output", help="write the chosen configuration (SessionConfig JSON) here, and its variant beside it"
    )
    parser.add_argument("--no-save", action="store_true", help="do not save the run in the history")
    add_measuring_arguments(parser)
    parser.set_defaults(func=run)


def _print(report: TuneReport) -> None:
    from core.tune.search import config_label

    for warned in (n for n in report.notes if n.severity == "warning"):
        print(_("warning  {note}").format(note=say(warned)))  # what fell back, before any figure
    print(say(report.headline))
    print(padded(_("configuration"), 44), padded(_("median"), 10, True), padded(_("95 % CI"), 21, True))
    for c in report.candidates:
        name = config_label(c.config)
        if c.measured:
            low, high = c.ci_ms
            interval = f"{significant(low)}–{significant(high)}"
            print(padded(name, 44), padded(significant(c.median_ms), 10, True), padded(interval, 21, True))
        else:
            print(padded(name, 44), say(c.accuracy_note) if c.accuracy_note else c.error)
    for c in (c for c in report.candidates if c.nodes and set(c.nodes) != {CPU}):
        print(_("nodes    {label}: {nodes}").format(label=config_label(c.config), nodes=nodes_text(c.nodes)))
    for line in report.not_tried:
        print(_("not tried {line}").format(line=say(line)))
    for note in (n for n in report.notes if n.severity != "warning"):
        print(_("note     {note}").format(note=say(note)))


def _write(report: TuneReport, output: Path) -> None:
    """The chosen configuration as JSON at ``output``; its variant's model beside it (NAME.KEY.onnx), with the data
    file its weights are in when it keeps them apart (named in the model as it was made, so it keeps that name)."""
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(report.best.config.to_json() + "\n")
    made = report.variant_paths.get(report.best.config.variant)
    if made:
        shutil.copyfile(made, output.with_name(f"{output.stem}.{report.best.config.variant}.onnx"))
        data = Path(f"{made}.data")  # where the quantizers write a large variant's weights (location=NAME.data)
        if data.is_file():
            shutil.copyfile(data, output.with_name(data.name))


def _budget(asked: float) -> float:
    """``asked``, or the longest budget the worker's time limit lets a search finish in (said on stderr), as the
    Deploy page caps it: a longer one was killed at the limit and lost the whole search."""
    limit = load_settings().worker_timeout_s
    longest = longest_budget(limit)
    if asked <= longest:
        return asked
    print(
        _(
            "budget capped to {budget} s: the worker limit is {limit} s and a job past it is stopped (raise "
            "WORKBENCH_WORKER_TIMEOUT_S to search longer)"
        ).format(budget=longest, limit=number(limit)),
        file=sys.stderr,
    )
    return float(longest)


def _print_partial(partial: TunePartial) -> None:
    """What a search that was stopped had measured, said for what it is: each candidate beside the best before it,
    none beside the defaults in a final round."""
    from core.tune.search import STAGES, config_label

    print(
        _(
            "The search was stopped before its answer, {seconds} s into its {budget} s (stages done: {stages}). What "
            "it measured, each configuration beside the best before it; none was timed beside the defaults in a "
            "final round:"
        ).format(
            seconds=number(partial.seconds, 1), budget=number(partial.budget_s),
            stages=", ".join(_(STAGES[s]) for s in partial.stages_done if s in STAGES),
        )
    )  # fmt: skip
    print(padded(_("configuration"), 44), padded(_("median"), 10, True), padded(_("95 % CI"), 21, True))
    for c in partial.candidates:
        if c.measured:
            low, high = c.ci_ms
            interval = f"{significant(low)}–{significant(high)}"
            print(padded(config_label(c.config), 44), padded(significant(c.median_ms), 10, True),
                  padded(interval, 21, True))  # fmt: skip
    print(_("best so far  {label}").format(label=config_label(partial.best.config)))


def _partial_json(partial: TunePartial, error: JobError) -> dict[str, Any]:
    return {
        "complete": False,
        "error": str(error),
        "best_so_far": candidate_data(partial.best),
        "candidates": [candidate_data(c) for c in partial.candidates],
        "stages_done": partial.stages_done,
        "budget_s": partial.budget_s,
        "seconds": partial.seconds,
    }


def run(args: argparse.Namespace) -> int:
    backend = target_backend(args.target)  # a target that is not there, before any work
    runtimes, providers, strict = runtime_choice(args)
    with measured(args, backend) as model, tempfile.TemporaryDirectory(prefix="workbench-") as tmp:
        request = TuneRequest(
            model=model,
            out_dir=str(Path(tmp) / "tuned"),
            budget_s=_budget(args.budget),
            variants=split(args.variants),
            batches=ints(args.batch, "--batch"),
            seed=args.seed,
            providers=providers,
            strict=strict,
        )
        asked: list[TuneRequest] = []

        def tune(one: TuneRequest) -> TuneReport:  # a job in the worker of the runtime it names
            asked.append(one)
            return jobs.run(TUNE, one, backend)

        try:
            report = tune_across(request, runtimes, tune)
        except JobError as exc:  # stopped (its time or memory limit): what the search wrote down is not lost
            partial = read_partial(asked[-1].out_dir) if asked else None
            if partial is not None and args.json:
                print(json.dumps(_partial_json(partial, exc), indent=2))
            elif partial is not None:
                _print_partial(partial)
            raise
        if args.output:
            _write(report, Path(args.output).resolve())
    if not args.no_save:
        from core.store import open_history  # SQLAlchemy: imported only by the commands that save
        from core.tune.saved import as_run

        open_history(load_settings()).save(as_run(report))
    if args.json:
        print_measured_json(report_data(report), model, args.target)
        return 0
    _print(report)
    if not args.no_save:
        print(_("saved    run {run} in the history").format(run=report.id))
    return 0
