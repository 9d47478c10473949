"""The figures of a generation, from its timed runs: time to the first token, prefill and decode tokens per second
(medians over the runs with their 95 % intervals, core.runtime.stats.interval), inter-token percentiles over every
decode step, the latency of each position, and the worker's own peak memory (its high-water mark, reset before each
engine, so each engine's peak is its own)."""

from __future__ import annotations

import resource
from pathlib import Path

from core.generate.records import EngineRun, Percentiles
from core.runtime.greedy import Trace
from core.runtime.stats import interval

__all__ = ["engine_run", "peak_rss_mb", "reset_peak"]

_STATUS, _CLEAR = Path("/proc/self/status"), Path("/proc/self/clear_refs")
MB = 1 << 20


def reset_peak() -> bool:
    """Start counting this process's peak memory again from what it holds now (Linux: clear_refs 5); False where
    it cannot be (the peak is then the process's whole life)."""
    try:
        _CLEAR.write_text("5")
    except OSError:
        return False
    return True


def peak_rss_mb() -> float:
    """This process's peak resident memory in MB since the last ``reset_peak`` (VmHWM), else over its life."""
    try:
        for line in _STATUS.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024 / MB
    except (OSError, ValueError, IndexError):
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / MB  # kB on Linux


def _percentiles(values: list[float]) -> Percentiles:
    import numpy as np

    if not values:
        return Percentiles(p50=0.0, p95=0.0, p99=0.0)
    p50, p95, p99 = (float(v) for v in np.percentile(np.asarray(values, dtype=np.float64), [50, 95, 99]))
    return Percentiles(p50=p50, p95=p95, p99=p99)


def engine_run(
    engine: str, label: str, traces: list[Trace], prompt_length: int, *, load_ms: float, peak_mb: float
) -> EngineRun:
    """One engine's figures from its timed ``traces`` (each run's steps: the prefill, then one per new token)."""
    import numpy as np

    batch = int(traces[0].tokens.shape[0])
    ttft = [t.step_ns[0] / 1e6 for t in traces]
    prefill = [batch * prompt_length / (t.step_ns[0] / 1e9) for t in traces]
    decode = [batch * (len(t.step_ns) - 1) / (sum(t.step_ns[1:]) / 1e9) for t in traces if len(t.step_ns) > 1]
    steps = [ns / 1e6 for t in traces for ns in t.step_ns[1:]]
    by_position = np.median(np.asarray([t.step_ns for t in traces], dtype=np.float64), axis=0) / 1e6
    return EngineRun(
        engine=engine,
        label=label,
        tokens=traces[0].tokens.tolist(),
        ttft_ms=interval(ttft),
        prefill_tok_s=interval(prefill),
        decode_tok_s=interval(decode),
        inter_token_ms=_percentiles(steps),
        step_ms=[float(v) for v in by_position],
        kv_cache_mb=traces[0].cache_bytes / MB,
        peak_rss_mb=peak_mb,
        load_ms=load_ms,
        runs_ms=[sum(t.step_ns) / 1e6 for t in traces],
    )
