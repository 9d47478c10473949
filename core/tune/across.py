"""Tune across runtimes: one tuning job per runtime, each in that runtime's worker with the same harness (its lock,
its rounds, its intervals), then the runtimes' bests side by side and one answer with the reason a runtime won.

ONNX Runtime's builds cannot share a process, so the harness alternates configurations within a runtime's job (its
stages, its final round beside that build's defaults) and the jobs run one after the other, each with an equal share
of the budget. A runtime replaces the first one asked for (the default runtime, when asked) only when its best's
median's 95 % interval lies wholly below the first's best's; under ``strict``, a best whose provider fell back is
never chosen. Pure but for the ``tune`` it is given (the caller's way of running a job: the command line's, a
page's).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

from core.i18n import N_
from core.notes import Note, NoteValue, note, warning
from core.runtime.provider_options import CPU
from core.runtime.runtimes import DEFAULT
from core.tune.records import Candidate, TuneReport, TuneRequest
from core.tune.search import config_note, surely_faster
from core.tune.words import SENTENCES

__all__ = ["RUNTIME_LOST", "RUNTIME_WON", "combine", "tune_across"]

RUNTIME_WON = N_(
    "The runtime {runtime} wins: {name}, median {ms} ms (95 % CI {low}–{high}), beats {other}, the best on {home} "
    "({other_ms} ms, {other_low}–{other_high}), by {percent} %; the intervals do not overlap. Each runtime was tuned "
    "in its own worker with the same harness, one after the other."
)
RUNTIME_LOST = N_(
    "The runtime {home} stays: the best on {runtime}, {name}, median {ms} ms (95 % CI {low}–{high}), is {percent} % "
    "{direction} than {other} ({other_ms} ms, {other_low}–{other_high}); {why}. Each runtime was tuned in its own "
    "worker with the same harness, one after the other."
)
FASTER, SLOWER = N_("faster"), N_("slower")
OVERLAP = N_("the intervals overlap")
APART_SLOWER = N_("the intervals do not overlap")
FELL_BACK = N_("under --strict it is not chosen, since a provider of it fell back to the CPU provider")
ON_RUNTIME = N_("{runtime}: {said}")  # a note of one runtime's job, among the others'


def tune_across(request: TuneRequest, runtimes: list[str], tune: Callable[[TuneRequest], TuneReport]) -> TuneReport:
    """Tune ``request`` on each of ``runtimes`` (its budget shared equally), each by ``tune`` (a job on that
    runtime), and the answer across them (``combine``); one runtime is that runtime's own answer. The providers
    asked for go to each runtime that has them (the others tune on the CPU provider); a provider no runtime has goes
    to the first, which refuses it by name."""
    names = list(dict.fromkeys(runtimes)) or [DEFAULT]
    if len(names) == 1:
        return tune(dataclasses.replace(request, runtime=names[0]))
    share = max(1.0, request.budget_s / len(names))
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
    return combine(reports, request.strict)


def _providers_of(runtime: str) -> list[str]:
    from core.runtime.runtimes import describe

    return describe(runtime).providers


def _choosable(c: Candidate, strict: bool) -> bool:
    return c.measured and not (strict and c.fell_back)


def _figures(c: Candidate, prefix: str = "") -> dict[str, NoteValue]:
    low, high = c.ci_ms
    return {f"{prefix}ms": c.median_ms, f"{prefix}low": low, f"{prefix}high": high}


def _verdict(home: Candidate, rival: Candidate, strict: bool) -> Note:
    """Why ``rival``'s runtime replaced ``home``'s (each the best of its runtime), or did not: by how much, and
    whether the intervals are apart."""
    said: dict[str, NoteValue] = {"runtime": rival.config.runtime, "home": home.config.runtime}
    said |= {"name": config_note(rival.config), "other": config_note(home.config)}
    said |= {**_figures(rival), **_figures(home, "other_")}
    ratio = (home.median_ms - rival.median_ms) / home.median_ms * 100
    said["percent"] = f"{abs(ratio):.0f}"
    if surely_faster(rival, home):
        if _choosable(rival, strict):
            return note(RUNTIME_WON, **said)
        return note(RUNTIME_LOST, direction=note(FASTER), why=note(FELL_BACK), **said)
    why = APART_SLOWER if surely_faster(home, rival) else OVERLAP
    return note(RUNTIME_LOST, direction=note(FASTER if ratio > 0 else SLOWER), why=note(why), **said)


def _on(runtime: str, said: Note) -> Note:
    """One runtime's note among the others', as severe as it was (a fallback stays a warning)."""
    return (warning if said.severity == "warning" else note)(ON_RUNTIME, runtime=runtime, said=said)


def combine(reports: list[TuneReport], strict: bool) -> TuneReport:
    """One answer from each runtime's report (the first's runtime is home): every candidate of each, each runtime's
    best, and the best across them, with why its runtime won or the home runtime stayed."""
    home = reports[0]
    rivals = [r for r in reports[1:] if _choosable(r.best, strict) and surely_faster(r.best, home.best)]
    winner = min(rivals, key=lambda r: r.best.median_ms) if rivals else home
    judged = winner if winner is not home else min(reports[1:], key=lambda r: r.best.median_ms)
    headline = note(SENTENCES, said=_verdict(home.best, judged.best, strict), more=winner.headline)
    return dataclasses.replace(
        home,
        best=winner.best,
        runner_up=None if winner is not home else home.runner_up,
        candidates=[c for r in reports for c in r.candidates],
        headline=headline,
        not_tried=[_on(r.default.config.runtime, n) for r in reports for n in r.not_tried],
        notes=[_on(r.default.config.runtime, n) for r in reports for n in r.notes],
        budget_s=sum(r.budget_s for r in reports),
        seconds=sum(r.seconds for r in reports),
        per_sample=any(r.per_sample for r in reports),
        variant_paths=winner.variant_paths,
        started=min(r.started for r in reports),
        finished=max(r.finished for r in reports),
        runtime_bests=[r.best for r in reports],
        runtime_versions={r.default.config.runtime: r.environment.versions.get("onnxruntime", "") for r in reports},
    )
