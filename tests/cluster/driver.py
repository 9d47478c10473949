"""A client of the local test cluster, run inside the head's network namespace (where the cluster can be reached):
``python -m tests.cluster.driver SCENARIO MODEL``. It prints one JSON object per line as things happen, and
waits for a line on stdin where a test must act in between (kill a node)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from core.bench import BenchRequest
from core.errors import WorkbenchError
from core.jobs import BENCH
from core.jobs.cluster.client import Cluster, connect
from core.jobs.cluster.local import ADDRESS
from core.jobs.process import JobHandle, JobSpec
from core.model.inputs import BenchInput
from core.model.measured import MeasuredModel


def say(**event: Any) -> None:
    print(json.dumps(event), flush=True)


def bench_args(model: str, iterations: int, providers: list[str] | None = None) -> dict[str, Any]:
    inputs = [BenchInput(name="input", dtype="float32", shape=[1, 3, 112, 112], batch_axis=0)]
    request = BenchRequest(
        model=MeasuredModel(path=model, inputs=inputs),
        engines=["ort"],
        levels=["all"],
        providers=providers,
        threads=[1],
        iterations=iterations,
        warmup=2,
        time_budget_s=300.0,
    )
    return {"request": request}


def ending(handle: JobHandle, timeout: float = 120) -> dict[str, Any]:
    try:
        value = handle.result(timeout)
    except WorkbenchError as exc:
        return {"error": type(exc).__name__, "message": str(exc), "state": handle.state}
    env = getattr(value, "environment", None)
    return {"state": handle.state, "target": env.target if env else None}


def wait_running(handle: JobHandle) -> None:
    while handle.state != "running" and not handle.done():
        time.sleep(0.02)


def exclusive(node2: Any, model: str) -> None:
    """Two benchmarks sent to one target at once: the second waits in its queue, and they never overlap."""
    first = node2.submit(JobSpec(name=BENCH.name, args=bench_args(model, 1500)))
    wait_running(first)
    second = node2.submit(JobSpec(name=BENCH.name, args=bench_args(model, 50)))
    positions = set()
    while not second.done():
        if second.queue_position is not None:
            positions.add(second.queue_position)
        time.sleep(0.02)
    a, b = first.result(60), second.result(60)
    say(case="exclusive", positions=sorted(positions), overlap=a.started < b.finished and b.started < a.finished)


def errors(cluster: Cluster, model: str, out: Path) -> None:
    """On node2: benchmarks queue for the target; each way a job ends (its own error, timeout, cancel, an agent
    killed on a live node)."""
    node2 = cluster.backend("node2")
    exclusive(node2, model)
    bad = node2.submit(JobSpec(name=BENCH.name, args=bench_args(model, 5, providers=["NoSuchExecutionProvider"])))
    say(case="own error", **ending(bad))
    slow = node2.submit(JobSpec(name=BENCH.name, args=bench_args(model, 10**6), timeout_s=2))
    say(case="timeout", **ending(slow))
    cancelled = node2.submit(JobSpec(name=BENCH.name, args=bench_args(model, 10**6)))
    wait_running(cancelled)
    cancelled.cancel()
    say(case="cancel", **ending(cancelled))
    import ray

    retried = node2.submit(JobSpec(name=BENCH.name, args=bench_args(model, 10000)))
    wait_running(retried)
    ray.kill(cluster.agent(node2.target))
    ended = ending(retried)
    say(case="agent killed", tries=getattr(retried, "tries", 0), **ended)


def lost(cluster: Cluster, model: str, out: Path) -> None:
    """A long benchmark on node2 and one on head; node2 is lost (killed or cut off, by the test) while its
    benchmark runs."""
    on_node2 = cluster.backend("node2").submit(JobSpec(name=BENCH.name, args=bench_args(model, 10**6)))
    on_head = cluster.backend("head").submit(JobSpec(name=BENCH.name, args=bench_args(model, 3000)))
    while on_node2.progress is None and not on_node2.done():
        time.sleep(0.02)
    wait_running(on_node2)
    progress = on_node2.progress
    say(case="running", state=on_node2.state, progress=progress.message if progress else None)
    sys.stdin.readline()  # the test kills node2 now
    began = time.monotonic()
    ended = ending(on_node2)
    say(case="node2", seconds=round(time.monotonic() - began, 2), **ended)
    say(case="head", **ending(on_head))
    after = cluster.backend("head").submit(JobSpec(name=BENCH.name, args=bench_args(model, 50)))
    say(case="head after", **ending(after))
    say(case="targets", targets={t.name: t.status for t in cluster.targets(hardware=False)})


SCENARIOS = {"errors": errors, "lost": lost}

if __name__ == "__main__":
    scenario, model_path, out_dir = sys.argv[1:4]
    SCENARIOS[scenario](connect(ADDRESS), model_path, Path(out_dir))
