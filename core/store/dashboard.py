"""What the team's Dashboard shows, from saved runs: the latest result per model and machine, each
configuration's latency across a model's versions (its exports, told apart by their sha256), and regressions:
a new version surely slower than the one before it on the same machine and configuration.

A configuration measures one version of one thing: ONNX Runtime's, the ONNX model; PyTorch eager's, the PyTorch
original it was exported from (whatever the ONNX version), so eager rows are compared across the original's
versions, never the ONNX model's. A run measured while other work kept the machine busy says as much about that
work as about the model: it is compared with nothing."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from core.i18n import _
from core.runtime.harness import BenchResult
from core.runtime.runs import LatencyRun, TuneRun

__all__ = [
    "Latest",
    "Newest",
    "Point",
    "Regression",
    "Tuned",
    "busy_runs",
    "latest_per_model_machine",
    "latest_tuned",
    "regressions",
    "trend",
]

SLOWER = 1.05  # a version is flagged when its interval lies wholly above the one before's and it is 5 % slower


def _version(run: LatencyRun) -> str:
    """The ONNX model's version: its sha256, shortened."""
    return run.model_id[:12] or "?"


def _busy(run: LatencyRun) -> bool:
    """Measured while other processes kept the machine busy: its numbers are theirs as much as the model's."""
    return run.activity is not None and run.activity.busy


def _version_of(run: LatencyRun, result: BenchResult) -> str:
    """What ``result`` measured: the PyTorch original's version for eager ("" when the run did not record it, as
    runs saved before it did not), else the ONNX model's."""
    if result.engine == "eager":
        return str(run.settings.get("torch_model_id") or "")[:12]
    return _version(run)


@dataclass(kw_only=True)
class Newest:
    """The newest run of a model on a machine, as a row of the Dashboard's tables names it (Latest, Tuned)."""

    model: str
    machine: str
    run_id: str
    created_at: str
    owner: str
    version: str
    runs: int  # runs of this model on this machine (of the kind the table lists: tunings for Tuned)


@dataclass(kw_only=True)
class Latest(Newest):
    fastest: str  # the fastest ONNX Runtime configuration
    fastest_ms: float
    speedup: float | None  # against the run's baseline (eager, or ORT DISABLE_ALL)
    regressed: bool  # its version is surely slower than the version before on some configuration


@dataclass(kw_only=True)
class Point:
    """One configuration of one run, placed in time."""

    run_id: str
    created_at: str
    machine: str
    owner: str
    version: str
    configuration: str
    median_ms: float
    low_ms: float
    high_ms: float
    speedup: float | None


@dataclass(kw_only=True)
class Regression:
    model: str
    machine: str
    configuration: str
    before_version: str
    after_version: str
    before_run: str
    after_run: str
    before_ms: float
    after_ms: float
    engine: str = "ort"  # "eager": the versions are the PyTorch original's

    @property
    def ratio(self) -> float:
        return self.after_ms / self.before_ms if self.before_ms else float("inf")

    @property
    def text(self) -> str:
        """The regression in a line, in the current language (made where it is shown, from saved numbers)."""
        said = (
            _(
                "{configuration} on {machine}: {before} → {after} ms ({ratio}×) from the PyTorch original's version "
                "{old} to {new}"
            )
            if self.engine == "eager"
            else _("{configuration} on {machine}: {before} → {after} ms ({ratio}×) from version {old} to {new}")
        )
        return said.format(
            configuration=self.configuration,
            machine=self.machine,
            before=f"{self.before_ms:.3g}",
            after=f"{self.after_ms:.3g}",
            ratio=f"{self.ratio:.2f}",
            old=self.before_version,
            new=self.after_version,
        )


def _fastest(results: list[BenchResult]) -> BenchResult | None:
    ort = [r for r in results if r.engine == "ort"] or results
    return min(ort, key=lambda r: r.median_ms) if ort else None


_Run = TypeVar("_Run", bound=LatencyRun)


def _per_model_machine(runs: Iterable[_Run]) -> list[tuple[dict[str, Any], _Run]]:
    """The newest of ``runs`` on each model and machine, in that order: what a row says of it (Newest's fields, for
    Latest or Tuned), and the run."""
    groups: dict[tuple[str, str], list[_Run]] = defaultdict(list)
    for run in runs:
        groups[(run.model, run.environment.place)].append(run)
    found = []
    for (model, machine), group in sorted(groups.items()):
        newest = max(group, key=lambda r: r.created_at)
        row = Newest(
            model=model,
            machine=machine,
            run_id=newest.id,
            created_at=newest.created_at,
            owner=newest.owner,
            version=_version(newest),
            runs=len(group),
        )
        found.append((vars(row), newest))
    return found


def latest_per_model_machine(runs: Iterable[LatencyRun]) -> list[Latest]:
    """The newest run of each model on each machine, with its fastest configuration; flagged when that run's
    version regressed against the version before it."""
    measured = [run for run in runs if not isinstance(run, TuneRun)]  # a tuning's answer is its own table's
    flagged = {r.after_run for r in regressions(measured)}
    rows = []
    for row, newest in _per_model_machine(measured):
        best = _fastest(newest.results)
        if best is None:
            continue
        rows.append(
            Latest(
                **row,
                fastest=best.label,
                fastest_ms=best.median_ms,
                speedup=best.speedup,
                regressed=newest.id in flagged,
            )
        )
    return rows


def trend(runs: Iterable[LatencyRun]) -> list[Point]:
    """Every configuration of every run, oldest first: a model's latency across its versions and machines."""
    points = [
        Point(
            run_id=run.id,
            created_at=run.created_at,
            machine=run.environment.place,
            owner=run.owner,
            version=_version_of(run, r) or "?",
            configuration=r.label,
            median_ms=r.median_ms,
            low_ms=r.median_low_ms,
            high_ms=r.median_high_ms,
            speedup=r.speedup,
        )
        for run in runs
        for r in run.results
    ]
    return sorted(points, key=lambda p: (p.created_at, p.run_id, p.configuration))


def busy_runs(runs: Iterable[_Run]) -> list[_Run]:
    """The runs measured on a busy machine, which ``regressions`` leaves out."""
    return [run for run in runs if _busy(run)]


def regressions(runs: Iterable[LatencyRun], slower: float = SLOWER) -> list[Regression]:
    """Each version against the version before it (the newest earlier run of another version of what the
    configuration measures, on the same machine): flagged when surely slower, its median's 95 % interval wholly
    above the earlier one's and the median at least ``slower`` times the earlier. Runs of one version are compared
    with nothing: they differ by noise, not by the model. Left out: runs on a busy machine, and eager results whose
    PyTorch version was not recorded."""
    series: dict[tuple[str, str, str], list[tuple[LatencyRun, BenchResult, str]]] = defaultdict(list)
    for run in runs:
        if _busy(run):
            continue
        for r in run.results:
            version = _version_of(run, r)
            if version:
                series[(run.model, run.environment.place, r.label)].append((run, r, version))
    found = []
    for (model, machine, configuration), points in series.items():
        points.sort(key=lambda p: p[0].created_at)
        for i, (after, a, version) in enumerate(points):
            before = next((p for p in reversed(points[:i]) if p[2] != version), None)
            if before is None:
                continue
            run, b, earlier = before
            if a.median_low_ms > b.median_high_ms and a.median_ms >= slower * b.median_ms:
                found.append(
                    Regression(
                        model=model,
                        machine=machine,
                        configuration=configuration,
                        before_version=earlier,
                        after_version=version,
                        before_run=run.id,
                        after_run=after.id,
                        before_ms=b.median_ms,
                        after_ms=a.median_ms,
                        engine=a.engine,
                    )
                )
    return sorted(found, key=lambda g: (g.model, g.machine, g.configuration, g.after_run))


@dataclass(kw_only=True)
class Tuned(Newest):
    """The newest tuning run of a model on a machine: the configuration it chose against the defaults."""

    chosen: str  # the chosen configuration's label, in English as saved ("ORT defaults" when they stayed)
    settings: dict[str, object]  # its SessionConfig, as JSON data
    median_ms: float  # per sample, in the final round
    low_ms: float
    high_ms: float
    default_ms: float  # the defaults' median, in the same rounds
    speedup: float | None  # default / chosen; None when the defaults stayed


def latest_tuned(runs: Iterable[LatencyRun]) -> list[Tuned]:
    """The newest tuning run of each model on each machine, with the configuration it chose."""
    rows = []
    tunings = (run for run in runs if isinstance(run, TuneRun) and run.results)
    for row, newest in _per_model_machine(tunings):
        default = newest.results[0]  # the final round's defaults come first
        label = newest.best_label or default.label
        chosen = next((r for r in newest.results if r.label == label), default)
        rows.append(
            Tuned(
                **row,
                chosen=chosen.label,
                settings=dict(newest.best),
                median_ms=chosen.median_ms / chosen.batch,
                low_ms=chosen.median_low_ms / chosen.batch,
                high_ms=chosen.median_high_ms / chosen.batch,
                default_ms=default.median_ms / default.batch,
                speedup=chosen.speedup if chosen is not default else None,
            )
        )
    return rows
