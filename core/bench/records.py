"""What Benchmark is asked and what it answers."""

from __future__ import annotations

from dataclasses import dataclass

from core.model.measured import MeasuredModel
from core.runtime.runs import BenchmarkRun
from core.runtime.runtimes import RuntimeChoice

__all__ = ["EAGER_DEVICES", "BenchReport", "BenchRequest"]

EAGER_DEVICES = ("cpu", "cuda")  # where PyTorch eager may run (core.bench.eager)

# Benchmark's answer is a benchmark run of the history (core.runtime.runs): its header, settings and results
BenchReport = BenchmarkRun


@dataclass(frozen=True, kw_only=True)
class BenchRequest(RuntimeChoice):
    """Every combination of engines, levels, providers, threads and batch sizes, each measured on the model's
    input plan; None takes the default (eager and ORT when there is a PyTorch original, DISABLE_ALL and ALL,
    CPU, every core but one, batch 1). On its runtime (RuntimeChoice), each of ``providers`` is a configuration of
    its own, and with ``strict`` a provider that leaves nodes to the CPU provider is refused
    (session.disable_cpu_ep_fallback)."""

    model: MeasuredModel
    engines: list[str] | None = None  # "eager", "ort"
    levels: list[str] | None = None  # keys of core.runtime.ort.LEVELS
    threads: list[int] | None = None
    batches: list[int] | None = None
    iterations: int = 200
    warmup: int = 20
    time_budget_s: float = 60.0
    seed: int = 0
    eager_device: str = "cpu"  # where PyTorch eager runs: "cpu", or "cuda" when torch sees a GPU (core.bench.eager)
