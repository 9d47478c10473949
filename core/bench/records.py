"""What Benchmark is asked and what it answers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.model.measured import MeasuredModel
from core.runtime.activity import Activity
from core.runtime.harness import BenchResult
from core.runtime.machine import Environment

__all__ = ["BenchReport", "BenchRequest"]


@dataclass(frozen=True, kw_only=True)
class BenchRequest:
    """Every combination of engines, levels, providers, threads and batch sizes, each measured on the model's
    input plan; None takes the default (eager and ORT when there is a PyTorch original, DISABLE_ALL and ALL,
    CPU, every core but one, batch 1)."""

    model: MeasuredModel
    engines: list[str] | None = None  # "eager", "ort"
    levels: list[str] | None = None  # keys of core.runtime.ort.LEVELS
    providers: list[str] | None = None
    threads: list[int] | None = None
    batches: list[int] | None = None
    iterations: int = 200
    warmup: int = 20
    time_budget_s: float = 60.0
    seed: int = 0


@dataclass(kw_only=True)
class BenchReport:
    id: str
    model: str
    model_id: str
    created_at: str  # ISO 8601, UTC
    settings: dict[str, Any]
    environment: Environment
    results: list[BenchResult]
    baseline: str  # what speedups are relative to: "PyTorch eager" or "ORT DISABLE_ALL"
    headline: str
    notes: list[str]
    seconds: float
    started: float = 0.0  # wall-clock start and end of the measurement (epoch seconds), under the lock
    finished: float = 0.0
    activity: Activity | None = None  # what else the machine did meanwhile (None in runs saved before it)
