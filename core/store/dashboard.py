"""What the team's Dashboard shows, from saved runs: the latest result per model and machine, each
configuration's latency across a model's versions (its exports, told apart by their sha256), and regressions:
a new version surely slower than the one before it on the same machine and configuration."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from core.bench import BenchReport
from core.runtime.harness import BenchResult

__all__ = ["Latest", "Owned", "Point", "Regression", "latest_per_model_machine", "regressions", "trend"]

SLOWER = 1.05  # a version is flagged when its interval lies wholly above the one before's and it is 5 % slower


@dataclass
class Owned:
    """A saved run and who saved it."""

    report: BenchReport
    owner: str = ""

    @property
    def version(self) -> str:
        return self.report.model_id[:12] or "?"


@dataclass(kw_only=True)
class Latest:
    model: str
    machine: str
    run_id: str
    created_at: str
    owner: str
    version: str
    fastest: str  # the fastest ONNX Runtime configuration
    fastest_ms: float
    speedup: float | None  # against the run's baseline (eager, or ORT DISABLE_ALL)
    runs: int  # runs of this model on this machine
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

    @property
    def ratio(self) -> float:
        return self.after_ms / self.before_ms if self.before_ms else float("inf")

    @property
    def text(self) -> str:
        return (
            f"{self.configuration} on {self.machine}: {self.before_ms:.3g} → {self.after_ms:.3g} ms "
            f"({self.ratio:.2f}×) from version {self.before_version} to {self.after_version}"
        )


def _fastest(results: list[BenchResult]) -> BenchResult | None:
    ort = [r for r in results if r.engine == "ort"] or results
    return min(ort, key=lambda r: r.median_ms) if ort else None


def latest_per_model_machine(runs: Iterable[Owned]) -> list[Latest]:
    """The newest run of each model on each machine, with its fastest configuration; flagged when that run's
    version regressed against the version before it."""
    groups: dict[tuple[str, str], list[Owned]] = defaultdict(list)
    for run in runs:
        groups[(run.report.model, run.report.environment.place)].append(run)
    flagged = {r.after_run for r in regressions([run for group in groups.values() for run in group])}
    rows = []
    for (model, machine), group in sorted(groups.items()):
        newest = max(group, key=lambda r: r.report.created_at)
        best = _fastest(newest.report.results)
        if best is None:
            continue
        rows.append(
            Latest(
                model=model,
                machine=machine,
                run_id=newest.report.id,
                created_at=newest.report.created_at,
                owner=newest.owner,
                version=newest.version,
                fastest=best.label,
                fastest_ms=best.median_ms,
                speedup=best.speedup,
                runs=len(group),
                regressed=newest.report.id in flagged,
            )
        )
    return rows


def trend(runs: Iterable[Owned]) -> list[Point]:
    """Every configuration of every run, oldest first: a model's latency across its versions and machines."""
    points = [
        Point(
            run_id=run.report.id,
            created_at=run.report.created_at,
            machine=run.report.environment.place,
            owner=run.owner,
            version=run.version,
            configuration=r.label,
            median_ms=r.median_ms,
            low_ms=r.median_low_ms,
            high_ms=r.median_high_ms,
            speedup=r.speedup,
        )
        for run in runs
        for r in run.report.results
    ]
    return sorted(points, key=lambda p: (p.created_at, p.run_id, p.configuration))


def regressions(runs: Iterable[Owned], slower: float = SLOWER) -> list[Regression]:
    """Each version against the version before it (the newest earlier run of another version of the same model,
    on the same machine and configuration): flagged when surely slower, its median's 95 % interval wholly above
    the earlier one's and the median at least ``slower`` times the earlier. Runs of one version are compared
    with nothing: they differ by noise, not by the model."""
    series: dict[tuple[str, str, str], list[tuple[Owned, BenchResult]]] = defaultdict(list)
    for run in runs:
        for r in run.report.results:
            series[(run.report.model, run.report.environment.place, r.label)].append((run, r))
    found = []
    for (model, machine, configuration), points in series.items():
        points.sort(key=lambda p: p[0].report.created_at)
        for i, (after, a) in enumerate(points):
            before = next(((run, r) for run, r in reversed(points[:i]) if run.version != after.version), None)
            if before is None:
                continue
            run, b = before
            if a.median_low_ms > b.median_high_ms and a.median_ms >= slower * b.median_ms:
                found.append(
                    Regression(
                        model=model,
                        machine=machine,
                        configuration=configuration,
                        before_version=run.version,
                        after_version=after.version,
                        before_run=run.report.id,
                        after_run=after.report.id,
                        before_ms=b.median_ms,
                        after_ms=a.median_ms,
                    )
                )
    return sorted(found, key=lambda g: (g.model, g.machine, g.configuration, g.after_run))
