"""Checks the benchmark harness itself, on TinyCNN in this process.

1. Overhead: the harness's reported ORT median against a bare ``session.run`` loop timed the same way
   (perf_counter_ns per call), alternated several times so drift hits both alike. The ratio should be
   within a few percent of 1.
2. Run-to-run spread: the harness's eager and ORT medians and their speedup over several whole runs.

Run: .venv/bin/python benchmarks/harness_overhead.py [--iters 500] [--pairs 5] [--runs 5] [--threads 1]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.bench import BenchRequest, run_benchmark
from core.model.inputs import BenchInput, make_inputs
from core.model.measured import MeasuredModel
from core.model.torchload import TorchSource
from tests.builders import exported_sample


def _bare_median_ms(path: Path, feed: dict, iters: int, warmup: int, threads: int) -> float:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    for _ in range(warmup):
        session.run(None, feed)
    times = []
    for _ in range(iters):
        start = time.perf_counter_ns()
        session.run(None, feed)
        times.append(time.perf_counter_ns() - start)
    return statistics.median(times) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iters", type=int, default=500)
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    specs = [BenchInput(name="input", dtype="float32", shape=[1, 3, 112, 112], batch_axis=0)]
    inputs = specs
    with tempfile.TemporaryDirectory() as tmp:
        path = exported_sample("tinycnn", Path(tmp))
        feed = make_inputs(specs, 1)
        bare, harness = [], []
        for _ in range(args.pairs):
            bare.append(_bare_median_ms(path, feed, args.iters, 20, args.threads))
            report = run_benchmark(
                BenchRequest(
                    model=MeasuredModel(path=str(path), inputs=inputs),
                    levels=["all"],
                    threads=[args.threads],
                    iterations=args.iters,
                )
            )
            harness.append(report.results[0].median_ms)
        ratios = [h / b for h, b in zip(harness, bare, strict=True)]
        print(f"TinyCNN, ORT ALL, {args.threads} thread(s), {args.iters} calls each, {args.pairs} alternated pairs")
        print(f"  bare session.run loop  median of medians {statistics.median(bare):.4f} ms   {_fmt(bare)}")
        print(f"  harness                median of medians {statistics.median(harness):.4f} ms   {_fmt(harness)}")
        print(f"  harness / bare         {statistics.median(ratios):.3f}  (per pair: {_fmt(ratios)})")

        source = TorchSource(kind="sample", name="tinycnn")
        eager, ort_all, speedups = [], [], []
        for _ in range(args.runs):
            report = run_benchmark(
                BenchRequest(
                    model=MeasuredModel(path=str(path), inputs=inputs, torch_source=source),
                    levels=["all"],
                    threads=[args.threads],
                    iterations=args.iters,
                )
            )
            by = {r.label: r for r in report.results}
            eager.append(by["PyTorch eager"].median_ms)
            ort_all.append(by["ORT ALL"].median_ms)
            speedups.append(by["ORT ALL"].speedup or float("nan"))
        print(f"run-to-run spread over {args.runs} whole runs (max-min over median):")
        for name, values in (("eager median", eager), ("ORT ALL median", ort_all), ("speedup", speedups)):
            spread = (max(values) - min(values)) / statistics.median(values)
            print(f"  {name:<15} {_fmt(values)}   spread {spread:.1%}")


def _fmt(values: list[float]) -> str:
    return "[" + ", ".join(f"{v:.3f}" for v in values) + "]"


if __name__ == "__main__":
    main()
