"""loadtest: a served model's latency and throughput at each concurrency, beside ONNX Runtime in-process."""

from __future__ import annotations

import argparse
import json
import math
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core import jobs
from core.cli.common import ints, padded
from core.cli.deploy import tuned_options
from core.cli.plan import add_measured_inputs, measured_model
from core.deploy import LoadtestRequest
from core.deploy.load_requests import BODIES
from core.errors import LoadtestError
from core.i18n import _
from core.jobs import LOADTEST, LOADTEST_URL
from core.jobs.wire import to_data
from core.notes import say, significant
from core.settings import load_settings

if TYPE_CHECKING:
    from core.deploy import LoadtestReport

__all__ = ["register", "report_json", "run", "served_runtime"]

_PERCENTILES = [f"p{q}{part}_ms" for q in (50, 90, 99) for part in ("", "_low", "_high")]


def register(parser: Any) -> None:
    parser.add_argument(
        "target", help="a folder python -m core deploy wrote (started on a loopback port), or a server's URL"
    )
    parser.add_argument("--model", required=True, help="the model it serves: outputs are checked against it")
    parser.add_argument("--concurrency", default="1,4,16", help="concurrent requests, in turn (default 1,4,16)")
    parser.add_argument("--duration", type=float, default=5.0, help="seconds of load per concurrency (default 5)")
    parser.add_argument(
        "--body", choices=BODIES, default="auto",
        help="the request body: JSON, or .npy (one input) / .npz (several) when JSON would be over 1 MiB (auto, the "
        "default; the answers then come as .npz); json, npy or npz",
    )  # fmt: skip
    parser.add_argument("--npy", action="store_const", const="npy", dest="body", help="the same as --body npy")
    parser.add_argument("--tuned", metavar="FILE.json", help="with a URL: the session options it serves with")
    parser.add_argument(
        "--new-tokens", type=int, default=32, help="a language model's server: tokens each stream asks for (default 32)"
    )
    parser.add_argument(
        "--prompt-tokens", type=int, default=16, help="... and the prompt's ids, drawn with the seed (default 16)"
    )
    add_measured_inputs(parser)
    parser.add_argument("--no-save", action="store_true", help="do not save the run in the history")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(func=run, torch=None, no_eager=True)


def _print(report: LoadtestReport) -> None:
    from core.deploy.loadtest import headline, percentile_text

    print(say(headline(report)))
    if report.tokens:  # a language model's server: its load is in tokens, and no request of /predict was sent
        _print_tokens(report)
        for note in report.notes:
            print(_("note     {note}").format(note=say(note)))
        return
    print(padded(_("concurrency"), 12), padded(_("requests/s"), 11, True), padded("p50", 22, True),
          padded("p90", 10, True), padded("p99", 10, True), padded(_("errors"), 7, True))  # fmt: skip
    for r in report.results:
        if not r.requests:  # nothing to take a percentile of: said in words, never "nan"
            print(f"{r.concurrency:<12} {r.rps:>11,.1f}", padded(_("no request answered"), 42, True), f"{r.errors:>7}")
            continue
        p50 = percentile_text(r.p50_ms, r.p50_low_ms, r.p50_high_ms) + "ms"
        p90, p99 = significant(r.p90_ms), significant(r.p99_ms)
        print(f"{r.concurrency:<12} {r.rps:>11,.1f} {p50:>22} {p90:>8}ms {p99:>8}ms {r.errors:>7}")
    print(
        _("in-process p50 {ms} ms ({calls} calls)").format(
            ms=significant(report.in_process_p50_ms), calls=report.in_process_calls
        )
    )
    for note in report.notes:
        print(_("note     {note}").format(note=say(note)))


def _print_tokens(report: LoadtestReport) -> None:
    """The load in tokens, a row per concurrency (a language model's server: /generate)."""
    print(
        _("{streams} tokens a stream after a prompt of {prompt}").format(
            streams=report.new_tokens, prompt=report.prompt_tokens
        )
    )
    print(padded(_("concurrency"), 12), padded(_("first token p50/p95"), 22, True),
          padded(_("between tokens p50/p95"), 24, True), padded(_("tokens/s a stream"), 18, True),
          padded(_("tokens/s in all"), 16, True), padded(_("errors"), 7, True))  # fmt: skip
    for r in report.tokens:
        if not r.streams:
            print(f"{r.concurrency:<12}", padded(_("no stream finished"), 64, True), f"{r.errors:>7}")
            continue
        ttft = f"{significant(r.ttft_p50_ms)}/{significant(r.ttft_p95_ms)} ms"
        itl = f"{significant(r.itl_p50_ms)}/{significant(r.itl_p95_ms)} ms"
        print(
            f"{r.concurrency:<12} {ttft:>22} {itl:>24} {r.stream_tok_s:>18,.1f} {r.total_tok_s:>16,.1f} {r.errors:>7}"
        )


def served_runtime(folder: Path) -> str:
    """The runtime a folder deploy wrote was written for (its session.json's): the load test runs in it, so that
    the server it starts, and the in-process run beside, import that build of ONNX Runtime."""
    from core.runtime.session_config import SessionConfig

    try:
        return SessionConfig.from_json((folder / "session.json").read_text(encoding="utf-8")).runtime
    except OSError:
        return "default"


def report_json(report: LoadtestReport) -> dict[str, Any]:
    """The report as --json prints it: a concurrency with no request answered has null percentiles and says why in
    ``unmeasured`` (JSON has no NaN; a string "nan" is not a number either)."""
    data: dict[str, Any] = to_data(report)
    for result, row in zip(report.results, data["results"], strict=True):
        if not result.requests:
            row.update(dict.fromkeys(_PERCENTILES))
            row["unmeasured"] = f"no request was answered at concurrency {result.concurrency}: {result.errors} failed"
    for token_row in data["tokens"]:  # no stream finished: null, never NaN
        token_row.update({k: None for k, v in token_row.items() if isinstance(v, float) and not math.isfinite(v)})
    return data


def run(args: argparse.Namespace) -> int:
    is_url = args.target.startswith(("http://", "https://"))
    if is_url and load_settings().hosted:
        raise LoadtestError(
            _(
                "This instance is hosted: a load test may only load the server it starts itself, never an address. "
                "Give the folder python -m core deploy wrote."
            )
        )
    if not is_url and not (Path(args.target) / "app.py").is_file():
        raise LoadtestError(
            _("{target} is neither an http(s) address nor a folder python -m core deploy wrote.").format(
                target=args.target
            )
        )
    concurrency = ints(args.concurrency, "--concurrency") or [1]
    with tempfile.TemporaryDirectory(prefix="workbench-") as tmp:
        model = measured_model(args, Path(tmp), None)
        tuned = tuned_options(args.tuned)
        request = LoadtestRequest(
            model=model, app=None if is_url else str(Path(args.target).resolve()), url=args.target if is_url else "",
            concurrency=concurrency, duration_s=args.duration, body=args.body, seed=args.seed, tuned=tuned,
            new_tokens=args.new_tokens, prompt_tokens=args.prompt_tokens,
            runtime=(tuned.runtime if tuned else "default") if is_url else served_runtime(Path(args.target)),
        )  # fmt: skip
        report = jobs.run(LOADTEST_URL if is_url else LOADTEST, request)
    if not args.no_save:
        from core.deploy.saved import as_run
        from core.store import open_history  # SQLAlchemy: imported only by the commands that save

        open_history(load_settings()).save(as_run(report))
    stopped = 1 if report.stopped_at is not None else 0  # measured, but the server failed: the notes say how
    if args.json:
        print(json.dumps(report_json(report), indent=2, allow_nan=False))
        return stopped
    _print(report)
    if not args.no_save:
        print(_("saved    run {run} in the history").format(run=report.id))
    return stopped
