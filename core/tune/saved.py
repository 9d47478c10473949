"""A tuning run as the history keeps it: a run of kind "tune" (core.runtime.runs.TuneRun). Its results are the
final round (the defaults, and the winner when it is another) and every other candidate measured; beside them the
defaults' and the best's SessionConfig, the budget and what was not tried."""

from __future__ import annotations

import dataclasses
from typing import Any

from core.notes import read_note
from core.runtime.harness import BenchResult
from core.runtime.runs import TuneRun
from core.runtime.stats import speedup_interval
from core.tune.records import Candidate, TuneReport

__all__ = ["as_run", "candidate_data", "report_data"]


def _results(report: TuneReport) -> list[BenchResult]:
    finals = [report.default] + ([report.best] if report.changed else [])
    finals += [report.runner_up] if report.runner_up is not None else []
    final_configs = {c.config for c in finals}
    others = [c for c in report.candidates if c.measured and c.config not in final_configs]
    kept: dict[str, BenchResult] = {}
    for candidate in [*finals, *others]:
        if candidate.result is not None and candidate.label not in kept:
            kept[candidate.label] = _speedup(candidate, report.default)
    return list(kept.values())


def _speedup(candidate: Candidate, default: Candidate) -> BenchResult:
    """The candidate's result; a final-round one with its speedup over the defaults (per sample), measured in the
    same rounds."""
    assert candidate.result is not None and default.result is not None
    result = dataclasses.replace(candidate.result)
    if candidate.stage == "final" and candidate.config != default.config:
        per_sample = [ms / candidate.config.batch for ms in candidate.result.samples_ms]
        ratio = speedup_interval(default.result.samples_ms, per_sample)
        result.speedup, result.speedup_low, result.speedup_high = ratio
    return result


def as_run(report: TuneReport) -> TuneRun:
    """``report`` as a run of the history (core.store)."""
    settings = {
        "time_budget_s": report.budget_s,
        **report.final_round,  # iterations, warmup, rounds, seed: how the final round measured
        "inputs": report.inputs,
    }
    return TuneRun(
        id=report.id,
        model=report.model,
        model_id=report.model_id,
        created_at=report.created_at,
        settings=settings,
        environment=report.environment,
        results=_results(report),
        headline=report.headline,
        notes=list(report.notes),
        seconds=report.seconds,
        started=report.started,
        finished=report.finished,
        activity=report.activity,
        default=report.default.config.to_data(),
        best=report.best.config.to_data(),
        best_label=report.best.label,
        budget_s=report.budget_s,
        per_sample=report.per_sample,
        not_tried=list(report.not_tried),
        tolerance=report.tolerance,
    )


def candidate_data(c: Candidate) -> dict[str, Any]:
    """A candidate as --json gives it: its settings, median and interval per sample, and why it was left out."""
    measured = c.measured
    return {
        "label": c.label,
        "stage": c.stage,
        "settings": c.config.to_data(),
        "median_ms": c.median_ms if measured else None,
        "ci_ms": list(c.ci_ms) if measured else None,
        "p90_ms": c.result.p90_ms / c.config.batch if measured and c.result else None,
        "p99_ms": c.result.p99_ms / c.config.batch if measured and c.result else None,
        "calls": c.result.n if c.result else 0,
        "accuracy_ok": c.accuracy_ok,
        "accuracy_note": read_note(c.accuracy_note).english() if c.accuracy_note else "",  # as placement
        "cosine": c.cosine,
        "error": c.error,
        "providers_used": c.used,  # what its session kept, in the runtime that measured it (settings.runtime)
        "provider_nodes": c.nodes,
        "fell_back": c.fell_back,
        "placement": [n.english() for n in c.placement],
    }


def report_data(report: TuneReport) -> dict[str, Any]:
    """The JSON form of a tuning run (``python -m core tune --json``, the Deploy page's download): ``default`` and
    ``best`` each with its settings, ``median_ms`` and ``ci_ms`` (per sample), and every candidate."""
    return {
        "id": report.id,
        "model": report.model,
        "model_id": report.model_id,
        "headline": report.headline.english(),  # sentences, in English as every text of --json
        "default": candidate_data(report.default),
        "best": candidate_data(report.best),
        "changed": report.changed,
        "per_sample": report.per_sample,
        "candidates": [candidate_data(c) for c in report.candidates],
        "not_tried": [n.english() for n in report.not_tried],
        "notes": [n.english() for n in report.notes],
        "tolerance": read_note(report.tolerance).english(),
        "budget_s": report.budget_s,
        "seconds": report.seconds,
        "environment": dataclasses.asdict(report.environment),
        "runtimes": [_runtime_data(report, c) for c in report.runtime_bests],  # across runtimes; else empty
    }


def _runtime_data(report: TuneReport, best: Candidate) -> dict[str, Any]:
    """One runtime's best when tuned across runtimes, from its own job, with its onnxruntime's version."""
    runtime = best.config.runtime
    return {"runtime": runtime, "onnxruntime": report.runtime_versions.get(runtime, ""), "best": candidate_data(best)}
