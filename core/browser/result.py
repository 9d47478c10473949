"""A browser's result (the JSON its page returns or offers for download) as a saved run of kind "browser": the raw
call times it measured, their statistics computed here by core.runtime.stats (the same code as the server's
harness), and the browser as the machine. The JSON comes from a browser or a file, so every field is checked, its
date too: a run dated after it came in (a day of clock ahead allowed) or before the first run the history can hold
is refused, so that no imported run stays the "latest" forever."""

from __future__ import annotations

import math
import re
import uuid
from datetime import UTC, datetime
from typing import Any

from core.bench.benchmark import headline
from core.errors import BrowserBenchError
from core.i18n import N_, _, ngettext
from core.notes import note
from core.runtime.harness import BenchResult, timed_fields
from core.runtime.machine import Environment
from core.runtime.runs import CLOCK_SKEW, BrowserRun, BrowserSide, date_bounds

__all__ = ["COARSE", "FALLBACK", "FORMAT", "MISMATCH", "ONE_THREAD", "WEB_THREADS", "browser_report", "machine_name"]

FORMAT = "onnx-workbench-browser-result"
MAX_CALLS = 100_000
# what a browser run's notes say: notes of the run, said in the reader's language where shown (core.notes)
ONE_THREAD = N_(
    "ONNX Runtime Web ran on one thread: the page was not cross-origin isolated, so it could not start threads."
)
FALLBACK = N_("WebGPU was asked for but the browser had no GPU adapter (or no WebGPU build): the run is WASM.")
MISMATCH = N_("The browser's outputs differ in size from the server's: the model does not agree with itself.")
COARSE = N_(
    "The browser's clock moved in steps of {step} ms, and the median call took {median} ms: the calls were timed "
    "only roughly."
)
# the threads it ran on, one template per English form
WEB_THREADS = (N_("ONNX Runtime Web on {count} thread"), N_("ONNX Runtime Web on {count} threads"))


def _text(data: dict[str, Any], key: str, limit: int = 200) -> str:
    value = data.get(key, "")
    if value is None:
        return ""
    if not isinstance(value, str):
        raise BrowserBenchError(f"The result's {key} is not text; export the result from the browser page again.")
    return "".join(ch if ch.isprintable() else "?" for ch in value)[:limit]


def _number(data: dict[str, Any], key: str, *, required: bool = False) -> float | None:
    value = data.get(key)
    if value is None and not required:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise BrowserBenchError(
            f"The result's {key} is not a non-negative number; export the result from the browser page again."
        )
    return float(value)


def _calls(data: dict[str, Any]) -> list[float]:
    calls = data.get("calls_ms")
    if not isinstance(calls, list) or not 1 <= len(calls) <= MAX_CALLS:
        raise BrowserBenchError(
            f"The result holds no call times (calls_ms: a list of 1 to {MAX_CALLS:,} numbers); is it a browser "
            "benchmark's result file?"
        )
    if not all(not isinstance(c, bool) and isinstance(c, int | float) and math.isfinite(c) and c >= 0 for c in calls):
        raise BrowserBenchError("The result's calls_ms holds something that is not a time in milliseconds.")
    return [float(c) for c in calls]


def machine_name(env: dict[str, Any]) -> str:
    """Where a browser run ran, as the history and the Dashboard tell places apart: browser, major version, OS."""
    version = _text(env, "browser_version", 40).split(".")[0]
    name = " ".join(filter(None, [_text(env, "browser", 60), version]))
    return f"{name or 'browser'} · {_text(env, 'os', 60) or '?'} (browser)"


def _environment(env: dict[str, Any], backend: str) -> Environment:
    cores = env.get("cores")
    cores = cores if isinstance(cores, int) and not isinstance(cores, bool) and 0 < cores < 100_000 else 1
    adapter = _text(env, "gpu_adapter", 200)
    cpu = f"{cores} cores (as the browser reports)" + (f"; GPU {adapter}" if adapter else "")
    threads: int = found if isinstance(found := env.get("threads"), int) else 1
    return Environment(
        machine=machine_name(env),
        cpu=cpu,
        physical_cores=cores,
        logical_cores=cores,
        os=_text(env, "os", 60),
        python="",
        versions={
            "browser": " ".join(filter(None, [_text(env, "browser", 60), _text(env, "browser_version", 40)])),
            "onnxruntime-web": _text(env, "ort_web", 40),
            "backend": backend,
            "user agent": _text(env, "user_agent", 300),
        },
        cpu_flags=["wasm-simd"] if env.get("simd") is True else [],
        threads_note=note(WEB_THREADS[0] if threads == 1 else WEB_THREADS[1], count=threads),
    )


def _result(data: dict[str, Any], backend: str, threads: int) -> BenchResult:
    diff = _number(data, "max_abs_diff")
    if data.get("outputs_differ_in_size") is True:
        diff = math.inf
    return BenchResult(
        label=f"ORT Web {'WebGPU' if backend == 'webgpu' else 'WASM'}",
        engine="ort",
        level="ALL",
        provider=backend,
        threads=threads,
        batch=1,
        load_ms=_number(data, "load_ms") or 0.0,
        first_run_ms=_number(data, "first_call_ms") or 0.0,
        max_abs_diff=diff,
        **timed_fields(_calls(data)),
    )


def browser_report(data: Any, *, imported_at: datetime | None = None) -> BrowserRun:
    """The saved run of a browser's result; BrowserBenchError when ``data`` is not one, or is dated outside the
    history's bounds. ``imported_at``: the moment a result file was imported (History's import, ``history
    --import``), which the run then records; a result that comes straight from the page is bounded by now."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise BrowserBenchError(
            f"This is not a browser benchmark's result (format {FORMAT!r}); download it again from the page that "
            "`python -m core browser-bench` writes, or from the Benchmark page."
        )
    env = data.get("environment")
    env = env if isinstance(env, dict) else {}
    backend = "webgpu" if data.get("backend") == "webgpu" else "wasm"
    threads = env["threads"] if isinstance(env.get("threads"), int) and 0 < env["threads"] < 1024 else 1
    result = _result(data, backend, threads)
    notes = [] if env.get("cross_origin_isolated") is True else [note(ONE_THREAD)]
    if env.get("fallback") in ("none", "noadapter", "nobuild"):
        notes.append(note(FALLBACK))
    if result.max_abs_diff == math.inf:
        notes.append(note(MISMATCH))
    step = _number(env, "clock_step_ms")
    if step and result.median_ms < 20 * step:
        notes.append(note(COARSE, step=step, median=result.median_ms))
    model_id = _text(data, "model_id", 64)
    inputs = data.get("inputs")
    now = (imported_at or datetime.now(UTC)).astimezone(UTC)
    report = BrowserRun(
        id=uuid.uuid4().hex[:12],
        model=_text(data, "model", 200) or "model",
        model_id=model_id if re.fullmatch(r"[0-9a-f]{0,64}", model_id) else "",
        created_at=_created(data, now),
        imported_at=imported_at.astimezone(UTC).isoformat(timespec="seconds") if imported_at else "",
        settings={
            "engines": ["ort-web"],
            "levels": ["ALL"],
            "providers": [backend],
            "threads": [threads],
            "batches": [1],
            "iterations": len(result.samples_ms),
            "warmup": int(_number(data, "warmup") or 0),
            "seed": int(_number(data, "seed") or 0),
            "inputs": _inputs(inputs),
        },
        browser=BrowserSide(runtime_ms=_number(data, "runtime_ms"), backend=backend, threads=threads),
        environment=_environment(env, backend),
        results=[result],
        headline=note(""),
        notes=notes,
        seconds=sum(result.samples_ms) / 1000,
    )
    report.headline = headline(report)
    return report


def _created(data: dict[str, Any], now: datetime) -> str:
    """The result's date (``now`` when it has none), refused outside the history's bounds; a date a little after
    ``now`` (a device's clock ahead) is taken as ``now``: no run is in the future."""
    text = _text(data, "created_at", 40)
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        when = now
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    when = when.astimezone(UTC)
    earliest, latest = date_bounds(now)
    if not earliest <= when <= latest:
        said = (
            _(
                "This result is dated {date}, after it came in ({now}): the history takes runs dated from {earliest} "
                "to {skew} after they come in, so that no run stays the latest forever. Check the clock of the "
                "device it ran on, and run it again there."
            )
            if when > latest
            else _(
                "This result is dated {date}, before the first run this history can hold ({earliest}): the history "
                "takes runs dated from {earliest} to {skew} after they come in. Check the clock of the device it ran "
                "on, and run it again there."
            )
        )
        raise BrowserBenchError(
            said.format(
                date=f"{when:%Y-%m-%d %H:%M} UTC",
                now=f"{now:%Y-%m-%d %H:%M} UTC",
                earliest=f"{earliest:%Y-%m-%d}",
                skew=ngettext("{count} day", "{count} days", CLOCK_SKEW.days).format(count=CLOCK_SKEW.days),
            )
        )
    return min(when, now).isoformat(timespec="seconds")


def _inputs(value: Any) -> dict[str, dict[str, Any]]:
    """The plan's inputs as the page recorded them (plan_summary), only the fields a saved run shows, as text."""
    if not isinstance(value, dict):
        return {}
    out: dict[str, dict[str, Any]] = {}
    for name, used in list(value.items())[:64]:
        if isinstance(name, str) and isinstance(used, dict):
            shape = used.get("shape")
            dims = (
                [d for d in shape if isinstance(d, int) and not isinstance(d, bool)] if isinstance(shape, list) else []
            )
            out[name[:200]] = {"dtype": _text(used, "dtype", 20), "shape": dims[:16], "values": _text(used, "values")}
    return out
