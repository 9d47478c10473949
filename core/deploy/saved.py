"""A load test as the history keeps it: a run of kind "loadtest" (core.runtime.runs.LoadtestRun), one result per
concurrency (engine "http") and the in-process latency beside them (engine "ort"), so History and the Dashboard list
and chart it with the other runs that timed configurations. A language model's server, loaded in tokens, keeps a
result per concurrency of its inter-token p50 (its throughput: tokens per second in all; its first call: the time
to the first token)."""

from __future__ import annotations

import math
from typing import Any

from core.deploy.loadtest import headline
from core.deploy.records import LoadResult, LoadtestReport, TokenLoadResult
from core.i18n import using
from core.notes import read_note, read_notes
from core.runtime.harness import BenchResult
from core.runtime.ort import LEVELS
from core.runtime.runs import LoadtestRun

__all__ = ["as_run", "http_label"]


def http_label(concurrency: int) -> str:
    """A concurrency's configuration as the history names it (English, as every saved label)."""
    return f"HTTP · {concurrency} concurrent"


def as_run(report: LoadtestReport) -> LoadtestRun:
    """``report`` as a run of the history (see the module's docstring)."""
    nan = math.nan
    level = LEVELS[report.session.level].name
    provider = report.session.providers[0]
    threads = report.session.intra_op_threads
    common: dict[str, Any] = {"level": level, "provider": provider, "threads": threads, "batch": 1, "load_ms": 0.0}
    results = [
        BenchResult(
            label="ONNX Runtime in-process", engine="ort", n=report.in_process_calls,
            median_ms=report.in_process_p50_ms, mean_ms=nan, p90_ms=nan, p99_ms=nan, min_ms=nan, max_ms=nan,
            std_ms=nan, median_low_ms=report.in_process_low_ms, median_high_ms=report.in_process_high_ms,
            throughput=1e3 / report.in_process_p50_ms if report.in_process_p50_ms > 0 else 0.0, first_run_ms=0.0,
            **common,
        )
    ]  # fmt: skip
    for r in report.results:
        results.append(
            BenchResult(
                label=http_label(r.concurrency), engine="http", n=r.requests, median_ms=r.p50_ms, mean_ms=nan,
                p90_ms=r.p90_ms, p99_ms=r.p99_ms, min_ms=nan, max_ms=nan, std_ms=nan, median_low_ms=r.p50_low_ms,
                median_high_ms=r.p50_high_ms, throughput=r.rps, first_run_ms=0.0, max_abs_diff=r.max_abs_diff,
                **common,
            )
        )  # fmt: skip
    for t in report.tokens:  # a language model's server: a token's latency, tokens per second as the throughput
        results.append(
            BenchResult(
                label=f"HTTP · {t.concurrency} streams, per token", engine="http", n=t.tokens,
                median_ms=t.itl_p50_ms, mean_ms=nan, p90_ms=nan, p99_ms=nan, min_ms=nan, max_ms=nan, std_ms=nan,
                median_low_ms=nan, median_high_ms=nan, throughput=t.total_tok_s, first_run_ms=t.ttft_p50_ms,
                **common,
            )
        )  # fmt: skip
    loads: list[LoadResult | TokenLoadResult] = [*report.results, *report.tokens]
    with using("en"):
        said = read_note(headline(report))
    return LoadtestRun(
        id=report.id, model=report.model, model_id=report.model_id, created_at=report.created_at,
        settings={}, environment=report.environment, results=results, headline=said,
        notes=read_notes(report.notes), seconds=report.seconds, concurrency=[r.concurrency for r in loads],
        duration_s=report.duration_s, body=report.body, target=report.target or "the app the load test started",
        session=report.session.to_data(), errors={str(r.concurrency): r.errors for r in loads},
        intervals={
            str(r.concurrency): {"p90": [r.p90_low_ms, r.p90_high_ms], "p99": [r.p99_low_ms, r.p99_high_ms]}
            for r in report.results
        },
    )  # fmt: skip
