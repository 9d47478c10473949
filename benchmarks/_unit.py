"""The unit the benchmarks give their figures in, and the goals they are held to.

Machines differ, and a shared machine is busier at one moment than another, so a wall time alone says little.
Each script measures a unit in the same run: how long a fresh interpreter takes to ``import onnx, onnxruntime,
numpy``, three times before its walk and three times after it (the median of the six: on a shared machine the
load changes within a run), and prints each figure in seconds and as a multiple of that unit, beside its goal.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["GOALS", "machine", "measure_unit", "report", "unit_samples"]

# figure -> the most it may take, in units (issue #27: where people run it). The first page, the pages answering
# and Partition's levels are judged against their floors instead, measured in the same run (benchmarks/floors.py,
# issue #51): a unit shrank with an import that most of those figures do not wait on.
GOALS: dict[str, float] = {
    "open to first chart": 8,
    "Decode: graph drawn": 5,
}


def unit_samples(runs: int = 3) -> list[float]:
    """Seconds a fresh interpreter takes to import onnx, onnxruntime and numpy, ``runs`` times."""
    times = []
    for _ in range(runs):
        began = time.monotonic()
        subprocess.run([sys.executable, "-c", "import onnx, onnxruntime, numpy"], check=True)
        times.append(time.monotonic() - began)
    return times


def measure_unit(before: list[float], after: list[float]) -> float:
    """The unit: the median of the samples taken before a script's walk and after it."""
    return statistics.median([*before, *after])


def machine() -> str:
    """This machine in a few words: its cores (as nproc counts them) and its CPU's model name."""
    name = "unknown CPU"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
                break
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{cores} cores, {name}"


def report(figures: dict[str, float], unit: float) -> list[str]:
    """One line per figure: seconds, the multiple of ``unit``, and its goal (met or not) where it has one."""
    lines = []
    for name, seconds in figures.items():
        line = f"  {name:<28} {seconds:7.1f} s  {seconds / unit:6.1f} units"
        goal = GOALS.get(name)
        if goal is not None:
            line += f"   goal ≤ {goal:g}: {'met' if seconds / unit <= goal else 'NOT met'}"
        lines.append(line)
    return lines
