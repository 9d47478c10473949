"""Two runtimes on this machine, in one run: the default wheel's CPU provider and the OpenVINO build's provider.

Run: make runtime-openvino && .venv/bin/python benchmarks/runtimes.py [--iters 300] [--starts 8]

Prints, for the TinyCNN sample and a model OpenVINO splits (a small CNN with a Hardmax between two Relus,
tests/runtimes.py): ORT's own assignment on each runtime (nodes and pieces per provider, each declined node with
its reason); each runtime's providers benchmarked (median with its 95 % interval, one thread, ALL, ONNX Runtime
only; on the OpenVINO runtime its provider and the CPU provider side by side in one job); and what a job costs to
start on each runtime, cold (a fresh worker) and warm (a worker of that runtime's pool), from submit to its result
for a job that only imports onnxruntime, numpy, onnx and msgspec, the runtimes taken in turn (goal: the second
runtime's start at most 1.2× the default's).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._unit import machine
from core.cli import main as cli_main
from core.jobs import JOBS, Job, ProcessBackend, submit
from core.runtime.runtimes import runtime_named, runtime_names
from core.settings import load_settings
from tests import builders
from tests.runtimes import conv_split_model
from tests.unit.runtime_jobs import WhereRequest

OPENVINO = "openvino"
RUNTIMES = ("default", OPENVINO)
WHERE: Job[WhereRequest, dict[str, str]] = Job(name="bench.where", target="tests.unit.runtime_jobs:where")
GOAL = 1.2  # the second runtime's start, at most this many times the default's


def _cli_json(*args: str) -> Any:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli_main([*args, "--json"])
    if code != 0:
        raise SystemExit(f"python -m core {' '.join(args)} failed: {err.getvalue().strip()}")
    return json.loads(out.getvalue())


def _short(provider: str) -> str:
    return provider.removesuffix("ExecutionProvider")


def partitions(name: str, model: str) -> None:
    data = _cli_json("partition", model, "--runtime", ",".join(RUNTIMES))
    for block in data["runtimes"]:
        pieces: dict[str, int] = {}
        for piece in block["subgraphs"]:
            pieces[piece["provider"]] = pieces.get(piece["provider"], 0) + 1
        placed = ", ".join(f"{_short(p)} {n} nodes / {pieces.get(p, 0)} pieces" for p, n in block["providers"].items())
        print(f"  {name:<10} {block['runtime']:<9} onnxruntime {block['onnxruntime']:<7} {placed}")
        for declined in block["declined"]:
            print(f"{'':24}declined by {_short(declined['provider'])}: {declined['name']} ({declined['op_type']}): "
                  f"{declined['reason']}")  # fmt: skip


def benchmarks(name: str, model: str, iters: int) -> None:
    for runtime in RUNTIMES:
        data = _cli_json(
            "bench", model, "--runtime", runtime, "--levels", "all", "--threads", "1", "--iters", str(iters),
            "--warmup", "30", "--budget", "120", "--no-save",
        )  # fmt: skip
        for result in data["results"]:
            shares = ", ".join(f"{_short(p)} {n}" for p, n in result["provider_nodes"].items())
            print(
                f"  {name:<10} {result['label']:<46} median {result['median_ms']:7.3f} ms "
                f"(95 % CI {result['median_low_ms']:.3f}–{result['median_high_ms']:.3f}), p90 {result['p90_ms']:.3f}"
                f"  nodes: {shares}"
            )
        for note in data["notes"]:
            if note["severity"] == "warning" and note["key"].startswith("{provider}"):
                print(f"  {name:<10} warning: {note}")
        busy = data.get("activity") or {}
        if busy.get("busy"):
            print(f"  {'':<10} (the machine was busy: other processes kept {busy['others_cores']:.1f} cores busy)")


def _start_s(backend: ProcessBackend, runtime: str) -> float:
    began = time.perf_counter()
    submit(WHERE, WhereRequest(runtime=runtime), backend).result()
    return time.perf_counter() - began


def _ready(backend: ProcessBackend, runtime: str) -> None:
    """Wait until that runtime's pool has a worker ready (its first job started the pool)."""
    pool = backend.pool_for(runtime_named(runtime))
    assert pool is not None
    deadline = time.monotonic() + 120
    while pool.ready_count() == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.5)  # the pool's other starts settle, as a second after the last job in the app


def starts(count: int) -> None:
    settings = dataclasses.replace(load_settings(environ={}), data_dir=tempfile.mkdtemp(prefix="rt-bench-"))
    registry = JOBS.with_jobs(WHERE)
    for kind, warm in (("cold", 0), ("warm", 1)):
        backend = ProcessBackend(settings, registry, warm=warm)
        times: dict[str, list[float]] = {r: [] for r in RUNTIMES}
        if warm:
            for runtime in RUNTIMES:  # each runtime's pool starts with its first job
                _start_s(backend, runtime)
        for k in range(count):
            order = RUNTIMES if k % 2 == 0 else RUNTIMES[::-1]  # in turn, each first half of the time
            for runtime in order:
                if warm:
                    _ready(backend, runtime)
                times[runtime].append(_start_s(backend, runtime))
        medians = {r: statistics.median(t) for r, t in times.items()}
        ratio = medians[OPENVINO] / medians["default"]
        verdict = "met" if ratio <= GOAL else "NOT met"
        print(
            f"  {kind}: default {medians['default'] * 1000:6.0f} ms, openvino {medians[OPENVINO] * 1000:6.0f} ms "
            f"(median of {count} each, in turn): {ratio:.2f}×, goal ≤ {GOAL}× {verdict}"
        )
        for pool in [backend.pool_for(runtime_named(r)) for r in RUNTIMES]:
            if pool is not None:
                pool.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iters", type=int, default=300, help="measured calls per configuration")
    parser.add_argument("--starts", type=int, default=8, help="job starts per runtime and kind")
    args = parser.parse_args()
    if OPENVINO not in runtime_names():
        raise SystemExit("The OpenVINO runtime is not built: make runtime-openvino")
    print(f"machine: {machine()}")
    with tempfile.TemporaryDirectory(prefix="runtimes-") as tmp:
        models = {
            "tinycnn": str(builders.exported_sample("tinycnn", Path(tmp))),
            "conv_split": str(builders.write(conv_split_model(), Path(tmp) / "conv_split.onnx")),
        }
        print("partition (ORT's own assignment):")
        for name, model in models.items():
            partitions(name, model)
        print("benchmark (ALL, 1 thread, ONNX Runtime only):")
        for name, model in models.items():
            benchmarks(name, model, args.iters)
    print("job start, submit to result, a job that imports onnxruntime, numpy, onnx and msgspec:")
    starts(args.starts)


if __name__ == "__main__":
    main()
