"""How far repeated benchmarks of TinyCNN agree: on an idle machine, and while another CPU-bound process runs.

Run: .venv/bin/python benchmarks/bench_spread.py [--runs 5] [--iterations 200] [--threads N]
Runs the default benchmark (PyTorch eager against ONNX Runtime DISABLE_ALL and ALL, every core but one unless
--threads says otherwise) --runs times in a
row, then as many again beside a process that keeps one core busy, each as a job in its own worker as the app
runs it. Prints each run's speedup of ORT ALL over eager with its interval, the other processes' CPU use the run
recorded, whether it called itself busy, and the spread of each set: the largest distance from the set's median,
in per cent. Run it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.bench import BenchRequest
from core.jobs import BENCH, run
from core.model import zoo
from core.model.inputs import plan_inputs
from core.model.intake import IntakeRequest, describe_files
from core.model.measured import MeasuredModel
from core.model.torchload import TorchSource

SPIN = "import time\nend = time.monotonic() + 3600\nwhile time.monotonic() < end: pass"


def _runs(
    path: str, plan: list, count: int, iterations: int, threads: list[int] | None
) -> list[tuple[float, float, float, float, bool]]:
    found = []
    for _ in range(count):
        model = MeasuredModel(path=path, inputs=plan, torch_source=TorchSource(kind="sample", name="tinycnn"))
        report = run(BENCH, BenchRequest(model=model, iterations=iterations, warmup=20, threads=threads))
        best = next(r for r in report.results if r.level == "ALL")
        activity = report.activity
        assert activity is not None
        assert best.speedup is not None and best.speedup_low is not None and best.speedup_high is not None
        found.append((best.speedup, best.speedup_low, best.speedup_high, activity.others_cores, activity.busy))
        state = "busy" if activity.busy else "quiet"
        interval = f"({best.speedup_low:.2f}–{best.speedup_high:.2f})"
        print(f"  {best.speedup:6.2f}× {interval}, others used {activity.others_cores:.2f} cores, {state}")
    return found


def _spread(values: list[float]) -> float:
    middle = statistics.median(values)
    return max(abs(v - middle) for v in values) / middle * 100


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--threads", type=int, default=0, help="intra-op threads (default: every core but one)")
    args = parser.parse_args()
    import torch

    folder = Path(tempfile.mkdtemp())
    path = folder / "tinycnn.onnx"
    model = zoo.build_model("tinycnn")
    torch.onnx.export(model, tuple(zoo.example_inputs("tinycnn").values()), str(path), dynamo=False)
    plan = plan_inputs(describe_files(IntakeRequest(paths=[str(path)])))
    print(f"idle: {args.runs} runs")
    threads = [args.threads] if args.threads else None
    idle = _runs(str(path), plan, args.runs, args.iterations, threads)
    hog = subprocess.Popen([sys.executable, "-c", SPIN])
    time.sleep(1)
    try:
        print(f"beside a process that keeps one core busy: {args.runs} runs")
        busy = _runs(str(path), plan, args.runs, args.iterations, threads)
    finally:
        hog.kill()
    for label, runs in (("idle", idle), ("busy", busy)):
        speedups = [r[0] for r in runs]
        flagged = sum(r[4] for r in runs)
        extremes = f"min {min(speedups):.2f}×, max {max(speedups):.2f}×"
        print(
            f"{label}: speedup median {statistics.median(speedups):.2f}×, spread ±{_spread(speedups):.1f} % "
            f"({extremes}), {flagged} of {len(runs)} runs said busy"
        )


if __name__ == "__main__":
    main()
