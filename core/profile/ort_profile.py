"""ONNX Runtime, node by node: its own profiler's trace of the measured calls, per node (its median run, so one
preempted call cannot move it) and per op type.

The session runs as the benchmark's does (sequential, one inter-op thread); warm-up calls run first and are
cut from the trace by time. ORT writes one "<node>_kernel_time" event per node per run and one "model_run"
per run; what the kernels do not account for of a call is the runtime's own overhead.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.errors import BenchmarkError
from core.notes import Note, note, warning
from core.profile.match import Lineage, lineage
from core.profile.records import NodeTime, OpTypeTime, ProviderTime
from core.profile.words import FEWER_CALLS, NO_DECODE, OWN_TIME
from core.runtime.fallback import session_placement
from core.runtime.harness import timed_session
from core.runtime.ort import ort_message
from core.runtime.provider_options import CPU

if TYPE_CHECKING:
    import onnx

__all__ = ["MAX_EVENTS", "OrtProfile", "OrtRun", "profile_ort"]

MAX_EVENTS = 400_000  # node events in one trace: beyond this the JSON alone takes seconds and hundreds of MB
_OPTIMIZED_UP_TO = 512 << 20  # the optimized graph is saved (to trace fusions back) for models up to this size


class OrtProfile:
    def __init__(self, nodes: list[NodeTime], call_ms: float, run_ms: float, calls: int, original: Lineage) -> None:
        self.nodes, self.call_ms, self.run_ms, self.calls, self.original = nodes, call_ms, run_ms, calls, original
        self.cpu_ms = 0.0

    def node_ms(self) -> list[float]:
        """Per node of the model's main graph, in order: the time of the node it became (a fusion's time split
        evenly among the nodes it fused)."""
        times = [0.0] * len(self.original.order)
        for node in self.nodes:
            for name in node.originals:
                times[self.original.order[name]] += node.mean_ms / len(node.originals)
        return times

    @property
    def kernel_ms(self) -> float:
        return sum(n.mean_ms for n in self.nodes)

    def op_types(self) -> list[OpTypeTime]:
        totals: dict[str, tuple[float, int]] = {}
        for n in self.nodes:
            ms, count = totals.get(n.op_type, (0.0, 0))
            totals[n.op_type] = (ms + n.mean_ms, count + 1)
        rows = [
            OpTypeTime(op_type=op, mean_ms=ms, share=ms / self.call_ms if self.call_ms else 0.0, nodes=c)
            for op, (ms, c) in totals.items()
        ]
        return sorted(rows, key=lambda r: -r.mean_ms)

    def providers(self) -> list[ProviderTime]:
        """Each provider's nodes and their time, as shares of the nodes that ran and of the kernels' time."""
        totals: dict[str, tuple[float, int]] = {}
        for n in self.nodes:
            ms, count = totals.get(n.provider, (0.0, 0))
            totals[n.provider] = (ms + n.mean_ms, count + 1)
        kernels, count = self.kernel_ms, len(self.nodes)
        rows = [
            ProviderTime(
                provider=p, nodes=c, node_share=c / count, mean_ms=ms, time_share=ms / kernels if kernels else 0.0
            )
            for p, (ms, c) in totals.items()
        ]
        return sorted(rows, key=lambda r: -r.mean_ms)


def _shapes(entries: Any) -> list[str]:
    shapes = []
    for entry in entries or []:
        for dtype, dims in dict(entry).items():
            shapes.append(f"{dtype}[{'×'.join(map(str, dims))}]")
    return shapes


@dataclass(kw_only=True)
class OrtRun:
    """What one profiled session gave: a profile per phase (one, or a language model's prefill and decode step),
    notes (fewer calls for a large graph, a decode step that would not run), and ORT's own placement (the providers
    the session kept, nodes per provider: core.runtime.fallback)."""

    phases: list[OrtProfile]
    notes: list[Note]
    used: list[str] = field(default_factory=list)
    nodes: dict[str, int] = field(default_factory=dict)


def _calls(session: Any, feeds: dict[str, Any], warmup: int, iterations: int) -> tuple[list[float], list[float], Any]:
    """Warm-up, then ``iterations`` timed calls: their wall and CPU times (every thread of ours), and the last
    call's outputs."""
    walls: list[float] = []
    cpus: list[float] = []
    outputs = None
    for _ in range(warmup):
        session.run(None, feeds)
    for _ in range(iterations):
        cpu = time.process_time_ns()
        start = time.perf_counter_ns()
        outputs = session.run(None, feeds)
        walls.append((time.perf_counter_ns() - start) / 1e6)
        cpus.append((time.process_time_ns() - cpu) / 1e6)
    return walls, cpus, outputs


def profile_ort(
    path: str, source: Any, feeds: dict[str, Any], level: str, threads: int, iterations: int, warmup: int,
    folder: Path, providers: list[str] | None = None, *, strict: bool = False,
    then: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> OrtRun:  # fmt: skip
    """Profile ``iterations`` calls after ``warmup`` of the model at ``path`` (``source``: its main graph, as the
    caller loaded it) on ``providers`` in order (the CPU provider last); with ``then``, a second phase in the same
    session: the calls ``then`` feeds from the first phase's outputs (by name), each phase's nodes cut from the trace
    by time."""
    import onnx

    node_count = len(source.node)
    notes: list[Note] = []
    limit = max(3, MAX_EVENTS // max(node_count, 1) // (2 if then else 1))
    if iterations > limit:
        notes.append(note(FEWER_CALLS, count=node_count, limit=limit, asked=iterations))
        iterations = limit
    optimized = folder / "optimized.onnx"
    providers = providers or [CPU]
    # a provider that compiles its nodes (OpenVINO) leaves a graph ONNX Runtime refuses to save
    compiled = any(p != CPU for p in providers)
    keep_optimized = str(optimized) if os.path.getsize(path) <= _OPTIMIZED_UP_TO and not compiled else ""
    session, _ = timed_session(
        path, level, providers, threads, str(folder / "ort-profile"), keep_optimized, strict=strict,
        record=True,
    )  # fmt: skip
    used, placed = session_placement(session)
    timings = []
    try:
        walls, cpus, outputs = _calls(session, feeds, warmup, iterations)
    except Exception as exc:
        raise BenchmarkError(f"ONNX Runtime failed on the inputs: {ort_message(exc)}") from exc
    timings.append((walls, cpus))
    if then is not None:
        try:
            names = [o.name for o in session.get_outputs()]
            walls, cpus, _outputs = _calls(session, then(dict(zip(names, outputs, strict=True))), warmup, iterations)
            timings.append((walls, cpus))
        except Exception as exc:  # the prefill's profile stands alone, and says why
            notes.append(warning(NO_DECODE, error=ort_message(exc)[:300]))
    trace = Path(session.end_profiling())
    events = json.loads(trace.read_text())
    trace.unlink(missing_ok=True)
    graph = onnx.load(str(optimized), load_external_data=False).graph if optimized.exists() else None
    original = lineage(source)
    # each phase's calls follow each other in the trace: its warm-up, then its measured runs
    starts = sorted(e.get("ts", 0) for e in events if e.get("name") == "model_run")
    per_phase = warmup + iterations
    phases = []
    for index, (walls, cpus) in enumerate(timings):
        first, after = index * per_phase + warmup, (index + 1) * per_phase
        window = (starts[first] if len(starts) > first else 0, starts[after] if len(starts) > after else math.inf)
        phases.append(_phase(events, window, walls, cpus, graph, source, original))
    return OrtRun(phases=phases, notes=notes, used=used, nodes=placed)


def _phase(
    events: list[Any], window: tuple[float, float], walls: list[float], cpus: list[float],
    graph: onnx.GraphProto | None, source: onnx.GraphProto, original: Lineage,
) -> OrtProfile:  # fmt: skip
    """The profile of the calls timed in ``window`` of the trace (microseconds, from its start); ``graph``: the
    optimized graph, when it was saved, ``source`` the model's own."""
    call_ms = statistics.median(walls)
    nodes = _nodes(events, window, len(walls), call_ms, graph, original)
    _own_times(nodes, graph if graph is not None else source, call_ms)
    runs = [e["dur"] / 1000 for e in events if e.get("name") == "model_run" and window[0] <= e.get("ts", 0) < window[1]]
    profile = OrtProfile(nodes, call_ms, statistics.median(runs) if runs else call_ms, len(walls), original)
    profile.cpu_ms = statistics.median(cpus)
    return profile


def _nodes(
    events: list[Any], window: tuple[float, float], iterations: int, call_ms: float, graph: onnx.GraphProto | None,
    original: Lineage,
) -> list[NodeTime]:  # fmt: skip
    """The trace's kernel events in ``window``, per node and call, traced back to the model's own nodes."""
    by_name = {n.name: n for n in graph.node} if graph is not None else {}
    totals: dict[str, list[Any]] = {}
    for event in events:
        name = event.get("name", "")
        inside = window[0] <= event.get("ts", 0) < window[1]
        if event.get("cat") != "Node" or not name.endswith("_kernel_time") or not inside:
            continue
        entry = totals.setdefault(name[: -len("_kernel_time")], [[], event.get("args", {})])
        entry[0].append(event["dur"] / 1000)
    nodes = []
    for name, (durations, args) in totals.items():
        originals, what = original.originals(by_name[name]) if name in by_name else ([name], None)
        originals = [o for o in originals if o in original.ops]
        count = len(durations)
        # the median run of the node, as often as it runs per call: one preempted call cannot move it
        mean = statistics.median(durations) * count / iterations
        nodes.append(
            NodeTime(
                name=name,
                op_type=str(args.get("op_name", "")),
                provider=str(args.get("provider", "")),
                mean_ms=mean,
                share=mean / call_ms if call_ms else 0.0,
                calls=max(1, round(count / iterations)),
                input_shapes=_shapes(args.get("input_type_shape")),
                output_shapes=_shapes(args.get("output_type_shape")),
                originals=originals,
                original_ops=[original.ops[o] for o in originals],
                module=next((original.modules[o] for o in originals if original.modules[o]), ""),
                modules=list(dict.fromkeys(original.modules[o] for o in originals if original.modules[o])),
                note=what,
            )
        )
    return sorted(nodes, key=lambda n: -n.mean_ms)


def _own_times(nodes: list[NodeTime], graph: onnx.GraphProto, call_ms: float) -> None:
    """An If, Loop or Scan node's kernel time holds its branches' and body's nodes, which the trace also lists
    on their own: keep only its own time, so that nothing is counted twice."""
    import onnx

    from core.model.proto import walk_graphs

    by_name = {n.name: n for n in nodes}
    raw = {n.name: n.mean_ms for n in nodes}
    for visit in walk_graphs(graph):
        for node in visit.graph.node:
            if node.name not in by_name:
                continue
            bodies = [a.g for a in node.attribute if a.type == onnx.AttributeProto.GRAPH]
            bodies += [g for a in node.attribute if a.type == onnx.AttributeProto.GRAPHS for g in a.graphs]
            inner = sum(raw.get(n.name, 0.0) for body in bodies for n in body.node)
            if not bodies or inner == 0.0:
                continue
            timed = by_name[node.name]
            timed.mean_ms = max(0.0, raw[node.name] - inner)
            timed.share = timed.mean_ms / call_ms if call_ms else 0.0
            timed.note = note(OWN_TIME)
    nodes.sort(key=lambda n: -n.mean_ms)
