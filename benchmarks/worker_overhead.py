"""What isolation costs: a job in a fresh worker process against the same call in this process.

Run: .venv/bin/python benchmarks/worker_overhead.py [--repeat N]
Prints the median wall time of each, side by side in one run, and their ratio.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.jobs import JOBS, Job, ProcessBackend, run_job
from core.model import intake, zoo


def _median_ms(fn, repeat: int) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    backend = ProcessBackend(registry=JOBS.with_jobs(Job("bench.noop", "core.model.zoo:get_sample")))

    folder = Path(tempfile.mkdtemp())
    import onnx
    import torch

    model = zoo.build_model("tinycnn")
    onnx_path = folder / "tinycnn.onnx"
    torch.onnx.export(model, tuple(zoo.example_inputs("tinycnn").values()), str(onnx_path), dynamo=False)
    state_path = folder / "tinycnn.pt"
    torch.save(model.state_dict(), state_path)
    onnx.load(str(onnx_path))

    cases = {
        "empty job (process start + protocol)": (
            lambda: None,
            lambda: run_job("bench.noop", {"name": "tinycnn"}, backend),
        ),
        "describe tinycnn.onnx": (
            lambda: intake.describe_files([str(onnx_path)]),
            lambda: run_job("intake.describe_files", {"paths": [str(onnx_path)]}, backend),
        ),
        "describe tinycnn state_dict": (
            lambda: intake.describe_files([str(state_path)]),
            lambda: run_job("intake.describe_files", {"paths": [str(state_path)]}, backend),
        ),
    }
    print(f"{'case':<40} {'in process ms':>14} {'worker ms':>10} {'ratio':>7}")
    for label, (direct, isolated) in cases.items():
        direct()  # warm the in-process imports so the comparison is the isolation cost only
        d = _median_ms(direct, args.repeat)
        w = _median_ms(isolated, args.repeat)
        ratio = f"{w / d:>7.1f}" if d >= 0.1 else "      —"
        print(f"{label:<40} {d:>14.1f} {w:>10.1f} {ratio}")


if __name__ == "__main__":
    main()
