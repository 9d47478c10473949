"""What the Ray backend costs and gives, on the local two-node cluster (core.jobs.cluster.local), side by side in
one run:

1. per-job overhead: the same small job (``decode.run`` of TinyCNN) in a fresh local worker (ProcessBackend, as
   the command line runs it), and on each target of the cluster (the agent's worker on that node, after the
   model's first trip into the node's cache); and what the model's first trip costs;
2. throughput: N benchmarks (TinyCNN, ORT ALL, 1 thread) all sent to one target, where they queue for its lock,
   against the same N spread over two targets.

Both nodes share this machine's cores, so two targets here can at best double the throughput of benchmarks that
each use one thread; on real hosts each target brings its own cores.

Run (root; starts and removes its own cluster): .venv/bin/python benchmarks/ray_backend.py [--repeat 9] [-n 4]
Small jobs run in rounds that take each backend once; the throughput tests alternate (``--rounds``, median).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.bench import BenchRequest
from core.decode import DecodeRequest
from core.jobs import BENCH, DECODE, HARDWARE, Backend, JobSpec, ProcessBackend
from core.jobs.cluster import local
from core.model.inputs import BenchInput
from core.model.measured import MeasuredModel
from core.runtime.hardware import HardwareRequest
from core.settings import PROJECT_ROOT, load_settings


def _interleaved_ms(runs: dict[str, Callable[[], object]], repeat: int) -> dict[str, float]:
    """The median wall time of each run, in rounds that take each once, so drift of the machine hits all alike."""
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeat):
        for name, fn in runs.items():
            start = time.perf_counter()
            fn()
            times[name].append((time.perf_counter() - start) * 1000)
    return {name: statistics.median(values) for name, values in times.items()}


def _bench(model: Path, iterations: int) -> JobSpec:
    inputs = [BenchInput(name="input", dtype="float32", shape=[1, 3, 112, 112], batch_axis=0)]
    request = BenchRequest(model=MeasuredModel(path=str(model), inputs=inputs), engines=["ort"], levels=["all"],
                           threads=[1], iterations=iterations, warmup=20, time_budget_s=300.0)  # fmt: skip
    return JobSpec(name=BENCH.name, args={"request": request})


def _job(backend: Backend, spec: JobSpec) -> Callable[[], object]:
    return lambda: backend.submit(spec).result(120)


def _throughput(backends: list[Backend], model: Path, n: int, iterations: int) -> float:
    """Seconds for ``n`` benchmarks sent round-robin to ``backends``, all at once."""
    start = time.perf_counter()
    handles = [backends[i % len(backends)].submit(_bench(model, iterations)) for i in range(n)]
    for handle in handles:
        handle.result(600)
    return time.perf_counter() - start


def measure(repeat: int, n: int, iterations: int, rounds: int) -> dict[str, float]:
    """The figures; run inside the head's namespace."""
    from core.jobs.cluster.client import connect
    from tests.builders import exported_sample

    work = Path(tempfile.mkdtemp(prefix="ray-bench-"))
    settings = dataclasses.replace(load_settings(environ={}), data_dir=str(work / "data"))
    here = ProcessBackend(settings)
    cluster = connect(load_settings().cluster_address)
    head, node2 = cluster.backend(local.HEAD), cluster.backend(local.NODE2)
    figures: dict[str, float] = {}
    (work / "m").mkdir()
    model = exported_sample("tinycnn", work / "m")
    decode = JobSpec(name=DECODE.name, args={"request": DecodeRequest(path=str(model))})
    hardware = JobSpec(name=HARDWARE.name, args={"request": HardwareRequest()})
    head.submit(hardware).result(120)  # the agents started, before anything is timed
    node2.submit(hardware).result(120)
    start = time.perf_counter()
    node2.submit(decode).result(120)
    figures["first job on node2, model sent (ms)"] = (time.perf_counter() - start) * 1000
    from core.jobs.cluster.answers import read_bytes

    agent = cluster.agent(node2.target)
    calls = _interleaved_ms({"call": lambda: read_bytes(agent.missing.remote([]))}, 50)["call"]
    figures["one call to node2's agent (ms)"] = calls  # a job makes at least three: missing, submit, poll
    backends: dict[str, Backend] = {"here, fresh worker": here, "on head": head, "on node2": node2}
    runs = {f"decode {name} (ms)": _job(backend, decode) for name, backend in backends.items()}
    figures.update(_interleaved_ms(runs, repeat))
    figures["Ray overhead per job (ms)"] = figures["decode on node2 (ms)"] - figures["decode here, fresh worker (ms)"]
    ones, twos = [], []
    for _ in range(rounds):  # alternated, like the small jobs
        ones.append(_throughput([node2], model, n, iterations))
        twos.append(_throughput([node2, head], model, n, iterations))
    figures[f"{n} benchmarks on one target (s)"] = one = statistics.median(ones)
    figures[f"{n} benchmarks on two targets (s)"] = two = statistics.median(twos)
    figures["throughput, two targets / one"] = one / two
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=9, help="runs of each small job (median)")
    parser.add_argument("-n", type=int, default=4, help="benchmarks in the throughput test")
    parser.add_argument("--iterations", type=int, default=3000, help="measured calls of each benchmark")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of the throughput test (median)")
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inside:
        print(json.dumps(measure(args.repeat, args.n, args.iterations, args.rounds)))
        return
    root = Path("/tmp/wb-bench-cluster")
    try:
        cluster = local.start(root, hold=True)
        command = [sys.executable, __file__, "--inside", f"--repeat={args.repeat}", f"-n={args.n}"]
        done = subprocess.run(
            cluster.in_namespace([*command, f"--iterations={args.iterations}", f"--rounds={args.rounds}"]),
            cwd=PROJECT_ROOT,
            env={**os.environ, **cluster.client_env()},
            capture_output=True,
            text=True,
            check=False,
        )
    finally:
        local.stop(root)
        shutil.rmtree(root, ignore_errors=True)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        sys.exit(f"the measurement failed:\n{done.stderr[-3000:]}")
    for name, value in json.loads(lines[-1]).items():
        print(f"{name:<40} {value:10.2f}")


if __name__ == "__main__":
    main()
