"""Tune across runtimes: one tuning job per runtime, each in that runtime's worker with the same harness (its lock,
its rounds, its intervals), then the runtimes' bests side by side and one answer with the reason a runtime won.

ONNX Runtime's builds cannot share a process, so the harness alternates configurations within a runtime's job (its
stages, its final round beside that build's defaults), the searches run one after the other (each with an equal
share of most of the budget), and then the runtimes alternate instead: each runtime's best is timed again alone in
jobs of its runtime, in the order A B … B A (core.tune.rematch), so that a machine that drifts weighs on each alike,
and the bests are compared on those calls pooled. A runtime replaces the first one asked for (the default runtime,
when asked) only when its best's median's 95 % interval lies wholly below the first's best's; under ``strict``, a
best whose provider fell back is never chosen. Pure but for the ``tune`` it is given (the caller's way of running a
job: the command line's, a page's).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

from core.i18n import N_, pgettext
from core.notes import Note, NoteValue, note, warning
from core.runtime.harness import timed_fields
from core.runtime.provider_options import CPU
from core.runtime.runtimes import DEFAULT
from core.tune.records import Candidate, TuneReport, TuneRequest
from core.tune.search import config_note, surely_faster
from core.tune.words import SENTENCES

__all__ = ["RUNTIME_LOST", "RUNTIME_WON", "combine", "pooled", "tune_across"]

RUNTIME_WON = N_(
    "The runtime {runtime} wins: {name}, median {ms} ms (95 % CI {low}–{high}), beats {other}, the best on {home} "
    "({other_ms} ms, {other_low}–{other_high}), by {percent} %; the intervals do not overlap. Each runtime was tuned "
    "in its own worker with the same harness, then each best timed again in jobs that took turns ({order})."
)
RUNTIME_LOST = N_(
    "The runtime {home} stays: the best on {runtime}, {name}, median {ms} ms (95 % CI {low}–{high}), is {percent} % "
    "{direction} than {other} ({other_ms} ms, {other_low}–{other_high}); {why}. Each runtime was tuned in its own "
    "worker with the same harness, then each best timed again in jobs that took turns ({order})."
)
FASTER, SLOWER = N_("faster"), N_("slower")
OVERLAP = N_("the intervals overlap")
APART_SLOWER = N_("the intervals do not overlap")
FELL_BACK = N_("under --strict it is not chosen, since a provider of it fell back to the CPU provider")
ON_RUNTIME = N_("{runtime}: {said}")  # a note of one runtime's job, among the others'
REMATCH_SHARE = 0.3  # of the budget: the runtimes' bests timed again, in jobs that take turns
REMATCH_MIN_S = 0.5  # the least one of those jobs measures


def tune_across(request: TuneRequest, runtimes: list[str], tune: Callable[[TuneRequest], TuneReport]) -> TuneReport:
    """Tune ``request`` on each of ``runtimes`` (its budget shared equally), each by ``tune`` (a job on that
    runtime), and the answer across them (``combine``); one runtime is that runtime's own answer. The providers
    asked for go to each runtime that has them (the others tune on the CPU provider); a provider no runtime has goes
    to the first, which refuses it by name."""
    names = list(dict.fromkeys(runtimes)) or [DEFAULT]
    if len(names) == 1:
        return tune(dataclasses.replace(request, runtime=names[0]))
    share = max(1.0, request.budget_s * (1 - REMATCH_SHARE) / len(names))
    again_s = max(REMATCH_MIN_S, request.budget_s * REMATCH_SHARE / (2 * len(names)))
    offered = {name: _providers_of(name) for name in names} if request.providers else {}
    anywhere = any(p in offered[name] for name in names for p in request.providers or [])
    reports = []
    for name in names:
        providers = request.providers
        if providers and anywhere:
            providers = [p for p in providers if p in offered[name]] or [CPU]
        asked = dataclasses.replace(
            request, runtime=name, budget_s=share, out_dir=str(Path(request.out_dir) / name), providers=providers
        )
        reports.append(tune(asked))
    again: dict[str, list[TuneReport]] = {name: [] for name in names}
    for k, name in enumerate([*names, *reversed(names)]):  # A B … B A: a drift of the machine weighs on each alike
        again[name].append(tune(_again(request, reports[names.index(name)], again_s, k)))
    return combine(reports, [again[name] for name in names], request.strict)


def _again(request: TuneRequest, report: TuneReport, seconds: float, turn: int) -> TuneRequest:
    """The request that times ``report``'s best again in a job of its runtime (its variant's file when it is one,
    read from the search's folder; the job writes into a folder of its own)."""
    best = report.best.config
    model = dataclasses.replace(request.model, path=report.variant_paths.get(best.variant, request.model.path))
    out_dir = str(Path(request.out_dir) / f"{best.runtime}-again-{turn}")
    return dataclasses.replace(
        request, runtime=best.runtime, budget_s=seconds, model=model, rematch=best, out_dir=out_dir
    )


def pooled(best: Candidate, again: list[TuneReport]) -> Candidate:
    """``best`` with the calls of its timings again pooled: its median and interval from all of them (``best``
    itself when none was measured)."""
    results = [r.best.result for r in again if r.best.result is not None and r.best.measured]
    if not results:
        return best
    calls = [ms for result in results for ms in result.samples_ms]
    if not calls:
        return best
    result = dataclasses.replace(results[0], label=best.label, **timed_fields(calls, results[0].batch))
    return dataclasses.replace(best, result=result, stage="final")


def _providers_of(runtime: str) -> list[str]:
    from core.runtime.runtimes import describe

    return describe(runtime).providers


def _choosable(c: Candidate, strict: bool) -> bool:
    return c.measured and not (strict and c.fell_back)


def _figures(c: Candidate, prefix: str = "") -> dict[str, NoteValue]:
    low, high = c.ci_ms
    return {f"{prefix}ms": c.median_ms, f"{prefix}low": low, f"{prefix}high": high}


def _verdict(home: Candidate, rival: Candidate, strict: bool, order: str) -> Note:
    """Why ``rival``'s runtime replaced ``home``'s (each the best of its runtime), or did not: by how much, and
    whether the intervals are apart."""
    said: dict[str, NoteValue] = {"runtime": rival.config.runtime, "home": home.config.runtime}
    said |= {"name": config_note(rival.config), "other": config_note(home.config)}
    said |= {**_figures(rival), **_figures(home, "other_")}
    ratio = (home.median_ms - rival.median_ms) / home.median_ms * 100
    said["percent"], said["order"] = f"{abs(ratio):.0f}", order
    if surely_faster(rival, home):
        if _choosable(rival, strict):
            return note(RUNTIME_WON, **said)
        return note(RUNTIME_LOST, direction=note(FASTER), why=note(FELL_BACK), **said)
    why = APART_SLOWER if surely_faster(home, rival) else OVERLAP
    return note(RUNTIME_LOST, direction=note(FASTER if ratio > 0 else SLOWER), why=note(why), **said)


def _on(runtime: str, said: Note) -> Note:
    """One runtime's note among the others', as severe as it was (a fallback stays a warning)."""
    return (warning if said.severity == "warning" else note)(ON_RUNTIME, runtime=runtime, said=said)


def combine(reports: list[TuneReport], again: list[list[TuneReport]], strict: bool) -> TuneReport:
    """One answer from each runtime's report (the first's runtime is home) and each runtime's timings again (in the
    same order): every candidate of each, each runtime's best (its calls again pooled), and the best across them,
    with why its runtime won or the home runtime stayed."""
    bests = [pooled(r.best, a) for r, a in zip(reports, again, strict=True)]
    home = bests[0]
    rivals = [k for k in range(1, len(bests)) if _choosable(bests[k], strict) and surely_faster(bests[k], home)]
    won = min(rivals, key=lambda k: bests[k].median_ms) if rivals else 0
    judged = won or min(range(1, len(bests)), key=lambda k: bests[k].median_ms)
    names = [r.default.config.runtime for r in reports]
    verdict = _verdict(home, bests[judged], strict, pgettext("list", ", ").join([*names, *reversed(names)]))
    extra = [r for a in again for r in a]
    first = reports[0]
    return dataclasses.replace(
        first,
        best=bests[won],
        runner_up=first.runner_up if won == 0 else None,
        candidates=[c for r in reports for c in r.candidates],
        headline=note(SENTENCES, said=verdict, more=reports[won].headline),
        not_tried=[_on(r.default.config.runtime, n) for r in reports for n in r.not_tried],
        notes=[_on(r.default.config.runtime, n) for r in reports for n in r.notes],
        budget_s=sum(r.budget_s for r in [*reports, *extra]),
        seconds=sum(r.seconds for r in [*reports, *extra]),
        per_sample=any(r.per_sample for r in reports),
        variant_paths=reports[won].variant_paths,
        started=min(r.started for r in reports),
        finished=max(r.finished for r in [*reports, *extra]),
        runtime_bests=bests,
        runtime_versions={r.default.config.runtime: r.environment.versions.get("onnxruntime", "") for r in reports},
    )
