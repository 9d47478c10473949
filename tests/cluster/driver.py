"""A client of the local test cluster, run inside the head's network namespace (where the cluster can be reached):
``python -m tests.cluster.driver SCENARIO MODEL``. It prints one JSON object per line as things happen, and
waits for a line on stdin where a test must act in between (kill a node).

From its first line it counts every global that anything in it unpickles (Python's audit event
``pickle.find_class``: unpickling can call nothing without looking one up), and says how many at the end."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

UNPICKLED: list[tuple[str, str]] = []


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event == "pickle.find_class":
        UNPICKLED.append((str(args[0]), str(args[1])))


sys.addaudithook(_audit)

from core.bench import BenchRequest  # noqa: E402  (after the hook: nothing unpickled escapes it)
from core.errors import WorkbenchError  # noqa: E402
from core.jobs import BENCH  # noqa: E402
from core.jobs.cluster.client import Cluster, connect  # noqa: E402
from core.jobs.process import JobHandle, JobSpec  # noqa: E402
from core.model.inputs import BenchInput  # noqa: E402
from core.model.measured import MeasuredModel  # noqa: E402
from core.settings import load_settings  # noqa: E402


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


class Rogue:
    """An actor that answers as a hostile node would: with objects that run code when unpickled."""

    def pickled(self) -> Any:
        return Marker(self.marker)

    def raises(self) -> bytes:
        raise Marker(self.marker)

    def __init__(self, marker: str) -> None:
        self.marker = marker


class Marker(Exception):
    """Unpickled, it writes its file: the sign that the client ran what a node sent."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.path = path

    def __reduce__(self) -> tuple[Any, ...]:
        return (Path(self.path).write_text, ("unpickled in the client",))


def rogue(cluster: Cluster, model: str, out: Path) -> None:
    """A node's actor that answers with pickles (a plain object, an exception): the client refuses both unread."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from core.jobs.cluster.answers import read_bytes

    node2 = cluster.target("node2")
    strategy = NodeAffinitySchedulingStrategy(node2.node_id, soft=False)
    actor = ray.remote(Rogue).options(num_cpus=0, scheduling_strategy=strategy).remote(str(out / "pwned"))
    for method in ("pickled", "raises"):
        try:
            read_bytes(getattr(actor, method).remote(), timeout=60)
            say(case=f"rogue {method}", error=None)
        except WorkbenchError as exc:
            say(case=f"rogue {method}", error=type(exc).__name__, message=str(exc))
    say(case="rogue marker", exists=(out / "pwned").exists())


SCENARIOS = {"errors": errors, "lost": lost}

if __name__ == "__main__":
    scenario, model_path, out_dir = sys.argv[1:4]
    cluster = connect(load_settings().cluster_address)
    SCENARIOS[scenario](cluster, model_path, Path(out_dir))
    if scenario == "errors":
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        rogue(cluster, model_path, Path(out_dir))
    say(case="unpickled", globals=UNPICKLED, insecure=cluster.insecure)
