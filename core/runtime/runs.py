"""A run in the history, as a tagged union: one record per kind of run (a benchmark, a tuning, a load test, a
browser's result), each with the header every run has (what it measured, when, where, who saved it, whether it was
imported). The kind is the record's type, named by its ``kind`` field where the run is data (the history's column,
a spool file); a new kind of run (a generation) is one more record here and one more member of ``AnyRun``.

The store reads ``kind`` in one place (core.store.kinds) and builds the record of that kind; everything else asks
the record's type (``isinstance(run, TuneRun)``), never a string."""

from __future__ import annotations

import typing
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar, Literal

from core.i18n import N_
from core.notes import Note
from core.runtime.activity import Activity
from core.runtime.harness import BenchResult
from core.runtime.machine import Environment

__all__ = [
    "CLOCK_SKEW",
    "EARLIEST_RUN",
    "KINDS",
    "AnyRun",
    "BenchmarkRun",
    "BrowserRun",
    "BrowserSide",
    "LatencyRun",
    "LoadtestRun",
    "Run",
    "TuneRun",
    "date_bounds",
]

# A run's date lies between the project's first run and now (a clock a little ahead allowed): a date outside, from
# an imported file, is refused, so that no run sorts before the history began or stays the "latest" forever.
EARLIEST_RUN = datetime(2024, 1, 1, tzinfo=UTC)
CLOCK_SKEW = timedelta(days=1)


def date_bounds(now: datetime) -> tuple[datetime, datetime]:
    """The earliest and the latest date a run may have, ``now`` being the moment it is taken in."""
    return EARLIEST_RUN, now + CLOCK_SKEW


@dataclass(kw_only=True)
class Run:
    """The header of every run: what it measured, when and where, who saved it, and what it says."""

    kind: str = ""  # the record's kind, fixed by each kind's record (its ``Literal``): the discriminator as data
    id: str
    model: str
    model_id: str  # the measured file's sha256
    created_at: str  # ISO 8601, UTC: when it was measured
    environment: Environment  # the machine (for a browser's run, the browser and its device)
    headline: Note
    notes: list[Note]
    seconds: float
    started: float = 0.0  # wall-clock start and end of the measurement (epoch seconds), under the lock
    finished: float = 0.0
    activity: Activity | None = None  # what else the machine did meanwhile (None in runs saved before it)
    # who saved it and the team that may see it, as the history has it ("": anonymous); a record made by a job has
    # none yet: the history takes them from whoever saves it, never from the record (an imported file names no one)
    owner: str = ""
    team: str = ""
    imported_at: str = ""  # ISO 8601, UTC: when a run measured elsewhere was imported ("": measured here)

    TITLE: ClassVar[str] = N_("run")  # the kind in a word, as History's table says it


@dataclass(kw_only=True)
class LatencyRun(Run):
    """A run that timed configurations: every kind so far (a generation's run will time tokens instead)."""

    settings: dict[str, Any]  # how it measured: calls, warm-up, rounds, time budget, seed, the inputs used
    results: list[BenchResult]  # one per configuration
    baseline: str = ""  # what speedups are relative to: "PyTorch eager", "ORT DISABLE_ALL", or none


@dataclass(kw_only=True)
class BenchmarkRun(LatencyRun):
    """Benchmark's run: PyTorch eager and ONNX Runtime's configurations (core.bench)."""

    kind: Literal["benchmark"] = "benchmark"
    TITLE: ClassVar[str] = N_("benchmark")


@dataclass(kw_only=True)
class TuneRun(LatencyRun):
    """Tune's run (core.tune.saved): its results are the final round (the defaults, and the winner when it is
    another) and every other candidate measured."""

    kind: Literal["tune"] = "tune"
    default: dict[str, Any] = field(default_factory=dict)  # ONNX Runtime's defaults (a SessionConfig, as data)
    best: dict[str, Any] = field(default_factory=dict)  # the configuration chosen
    best_label: str = ""  # its label, in English as saved ("" in runs saved before it: the defaults')
    budget_s: float = 0.0
    per_sample: bool = False  # some candidate ran at a batch above 1: latencies are per sample
    not_tried: list[Note] = field(default_factory=list)  # what the budget or the machine left out
    tolerance: Note | str = ""  # what a variant had to keep of the original's outputs (str: an earlier version's)
    TITLE: ClassVar[str] = N_("tune")


@dataclass(kw_only=True)
class LoadtestRun(LatencyRun):
    """A load test of a served model (core.deploy.saved): one result per concurrency (engine "http") and the
    in-process latency beside them (engine "ort")."""

    kind: Literal["loadtest"] = "loadtest"
    concurrency: list[int] = field(default_factory=list)
    duration_s: float = 0.0
    body: str = ""  # "json" or "npy"
    target: str = ""  # the URL loaded, or the app the load test started
    session: dict[str, Any] = field(default_factory=dict)  # the served session's options
    errors: dict[str, int] = field(default_factory=dict)  # failed requests per concurrency
    intervals: dict[str, dict[str, list[float]]] = field(default_factory=dict)  # p90's and p99's per concurrency
    TITLE: ClassVar[str] = N_("load test")


@dataclass(kw_only=True)
class BrowserSide:
    """How ONNX Runtime Web ran in the browser."""

    runtime_ms: float | None = None  # loading ONNX Runtime Web
    backend: str = "wasm"  # "wasm" or "webgpu"
    threads: int = 1


@dataclass(kw_only=True)
class BrowserRun(LatencyRun):
    """A browser's result (core.browser.result): ONNX Runtime Web's call times, statistics computed here."""

    kind: Literal["browser"] = "browser"
    browser: BrowserSide = field(default_factory=BrowserSide)
    TITLE: ClassVar[str] = N_("browser")


AnyRun = BenchmarkRun | TuneRun | LoadtestRun | BrowserRun
# each kind's record by its name: the table the history reads a kind from (core.store.kinds)
KINDS: dict[str, type[AnyRun]] = {cls.kind: cls for cls in typing.get_args(AnyRun)}
