"""Benchmark: PyTorch eager against ONNX Runtime, measured honestly on this machine."""

from __future__ import annotations

from core.bench.benchmark import BenchReport, headline, run_benchmark

__all__ = ["BenchReport", "headline", "run_benchmark"]
