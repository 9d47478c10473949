"""Benchmark: PyTorch eager against ONNX Runtime, measured honestly on this machine."""

from __future__ import annotations

from core.bench.benchmark import headline, run_benchmark
from core.bench.records import BenchReport, BenchRequest

__all__ = ["BenchReport", "BenchRequest", "headline", "run_benchmark"]
