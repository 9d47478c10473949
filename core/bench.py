"""PyTorch eager against ONNX Runtime, measured honestly. Runs in the worker under the machine-wide lock.

Method: inputs generated once per shape from a seed; every configuration (engine, optimization level,
provider, threads, batch) is created and timed once cold (the first run, reported apart), warmed up, then
measured in rounds that interleave all configurations, so drift of the machine (another process, the CPU
clock) hits all of them alike. Each call is timed with perf_counter_ns; profiling is never on. Statistics
come from core.stats; agreement is checked against the eager outputs (or ORT at DISABLE_ALL without them).
"""

from __future__ import annotations

import math
import os
import platform
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from core.errors import BenchmarkError
from core.model import ModelRecord
from core.partition import LEVELS, session_options, short_name
from core.stats import speedup_interval, summarize

__all__ = [
    "BenchInput",
    "BenchReport",
    "BenchResult",
    "Config",
    "Environment",
    "max_abs_diff",
    "measure",
    "result_of",
    "timed_session",
    "default_inputs",
    "environment",
    "make_inputs",
    "run_benchmark",
]

ROUNDS = 10  # measurement rounds; each runs a slice of every configuration's iterations
NOISY = 0.10  # a median interval wider than 10 % of the median is flagged
MAX_SAMPLES_KEPT = 5000  # per configuration, for the distribution chart and the history


@dataclass
class BenchInput:
    name: str
    dtype: str  # numpy dtype name: float32, int64, bool...
    shape: list[int]  # concrete, at batch 1 (or the model's fixed batch)
    batch_axis: int | None = None  # the axis the batch sweep changes; None when the batch is fixed


@dataclass
class Environment:
    machine: str  # host name, to tell machines apart in the history
    cpu: str
    physical_cores: int
    logical_cores: int
    os: str
    python: str
    versions: dict[str, str]
    cpu_flags: list[str]  # the ones that matter for speed: avx2, avx512f, avx512_vnni, amx...
    threads_note: str = ""


@dataclass
class BenchResult:
    label: str
    engine: str  # "eager" or "ort"
    level: str  # "" for eager, else DISABLE_ALL, BASIC, EXTENDED, LAYOUT, ALL
    provider: str
    threads: int
    batch: int
    n: int
    median_ms: float
    mean_ms: float
    p90_ms: float
    p99_ms: float
    min_ms: float
    max_ms: float
    std_ms: float
    median_low_ms: float
    median_high_ms: float
    throughput: float  # items per second at the median
    load_ms: float  # creating the session or loading the module
    first_run_ms: float
    speedup: float | None = None  # baseline median / this median, at the same threads and batch
    speedup_low: float | None = None
    speedup_high: float | None = None
    max_abs_diff: float | None = None  # against the reference outputs at the same batch
    noisy: bool = False
    samples_ms: list[float] = field(default_factory=list)


@dataclass
class BenchReport:
    id: str
    model: str
    model_id: str
    created_at: str  # ISO 8601, UTC
    settings: dict[str, Any]
    environment: Environment
    results: list[BenchResult]
    baseline: str  # what speedups are relative to: "PyTorch eager" or "ORT DISABLE_ALL"
    headline: str
    notes: list[str]
    seconds: float
    started: float = 0.0  # wall-clock start and end of the measurement (epoch seconds), under the lock
    finished: float = 0.0


_FLAGS = ("avx", "avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "avx_vnni", "amx_tile", "amx_int8", "neon")


def environment(threads: list[int] | None = None) -> Environment:
    import numpy as np
    import onnx
    import onnxruntime as ort
    import psutil

    cpu, flags = platform.processor() or platform.machine(), list[str]()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and cpu in ("", platform.machine(), platform.processor()):
                    cpu = value.strip()
                elif key.strip() in ("flags", "Features") and not flags:
                    present = set(value.split())
                    flags = [f for f in _FLAGS if f in present]
    except OSError:
        pass
    versions = {"python": platform.python_version(), "onnx": onnx.__version__, "onnxruntime": ort.__version__}
    versions["numpy"] = np.__version__
    try:
        import torch

        versions["torch"] = torch.__version__
    except ImportError:
        pass
    return Environment(
        machine=platform.node(),
        cpu=cpu,
        physical_cores=psutil.cpu_count(logical=False) or 1,
        logical_cores=psutil.cpu_count(logical=True) or 1,
        os=platform.platform(),
        python=platform.python_version(),
        versions=versions,
        cpu_flags=flags,
        threads_note=(
            f"intra-op threads {', '.join(map(str, threads))} for both engines (torch.set_num_threads and "
            "SessionOptions.intra_op_num_threads); inter-op 1, sequential execution"
            if threads
            else ""
        ),
    )


def default_inputs(onnx_record: ModelRecord, torch_record: ModelRecord | None = None) -> list[BenchInput]:
    """Concrete benchmark inputs from the model's signature: symbolic dims take the PyTorch example's size
    (same position) when there is one, else 1; a symbolic first axis is the batch axis."""
    inputs = []
    torch_inputs = torch_record.inputs if torch_record is not None else []
    for position, spec in enumerate(onnx_record.inputs):
        example = torch_inputs[position].shape if position < len(torch_inputs) else None
        shape, batch_axis = [], None
        for axis, dim in enumerate(spec.shape or []):
            if isinstance(dim, int) and dim > 0:
                shape.append(dim)
                continue
            if axis == 0:
                batch_axis = 0
            known = example[axis] if example is not None and axis < len(example) else None
            shape.append(int(known) if isinstance(known, int) and known > 0 else 1)
        if batch_axis is not None:
            shape[0] = 1
        inputs.append(BenchInput(spec.name, _numpy_dtype(spec.dtype), shape, batch_axis))
    return inputs


def _numpy_dtype(dtype: str) -> str:
    return {"bfloat16": "float32", "string": "str"}.get(dtype, dtype)


def make_inputs(specs: list[BenchInput], batch: int, seed: int = 0) -> dict[str, Any]:
    """Seeded inputs: floats from a normal distribution, integers in 0..9 (valid ids and indices), bools half."""
    import numpy as np

    rng = np.random.default_rng(seed)
    arrays = {}
    for spec in specs:
        shape = list(spec.shape)
        if spec.batch_axis is not None:
            shape[spec.batch_axis] = batch
        dtype = np.dtype(spec.dtype)
        if dtype.kind == "f":
            arrays[spec.name] = np.asarray(rng.standard_normal(shape), dtype=dtype)
        elif dtype.kind == "b":
            arrays[spec.name] = np.asarray(rng.random(shape) > 0.5)  # an array even for a 0-d shape
        elif dtype.kind in "iu":
            arrays[spec.name] = np.asarray(rng.integers(0, 10, shape), dtype=dtype)
        else:
            raise BenchmarkError(f"Input '{spec.name}' has dtype {spec.dtype}, which the benchmark cannot generate.")
    return arrays


@dataclass
class Config:
    """One thing to time: a call that runs the model once on fixed inputs, and what was measured."""

    label: str
    engine: str
    level: str
    provider: str
    threads: int
    batch: int
    run: Callable[[], list[Any]]
    load_ms: float
    samples: list[int] = field(default_factory=list)  # nanoseconds
    first_ns: int = 0
    outputs: list[Any] = field(default_factory=list)


def _flatten(out: Any) -> list[Any]:
    if isinstance(out, dict):
        out = list(out.values())
    items = list(out) if isinstance(out, (tuple, list)) else [out]
    return [t.detach().numpy() if hasattr(t, "detach") else t for t in items]


def max_abs_diff(reference: list[Any], produced: list[Any]) -> float:
    import numpy as np

    worst = 0.0
    for ref, got in zip(reference, produced, strict=False):
        a, b = np.asarray(ref, dtype=np.float64), np.asarray(got, dtype=np.float64)
        if a.shape != b.shape:
            return math.inf
        if a.size:
            both_nan = np.isnan(a) & np.isnan(b)
            diff = np.where(both_nan, 0.0, np.abs(a - b))
            worst = max(worst, float(np.nanmax(np.where(np.isnan(diff), np.inf, diff))))
    return worst


def timed_session(path: str, level: str, provider: str, threads: int) -> tuple[Any, float]:
    """A session as the benchmark uses it (sequential, one inter-op thread, no profiling) and its load time."""
    import onnxruntime as ort

    options = session_options(level, threads)
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.enable_profiling = False
    providers = [provider] + (["CPUExecutionProvider"] if provider != "CPUExecutionProvider" else [])
    start = time.perf_counter_ns()
    try:
        session = ort.InferenceSession(path, options, providers=providers)
    except Exception as exc:
        from core.partition import explain_session_error

        raise BenchmarkError(str(explain_session_error(exc, "create a session for this model"))) from exc
    return session, (time.perf_counter_ns() - start) / 1e6


def _ort_configs(
    path: str, specs: list[BenchInput], levels: list[str], providers: list[str], threads: list[int],
    batches: list[int], inputs: dict[int, dict[str, Any]], label_parts: Callable[..., str],
) -> list[Config]:  # fmt: skip

    configs = []
    for level in levels:
        for provider in providers:
            for t in threads:
                session, load_ms = timed_session(path, level, provider, t)
                names = [i.name for i in session.get_inputs()]
                missing = [s.name for s in specs if s.name not in names]
                if missing:
                    raise BenchmarkError(f"The model has no input named {', '.join(missing)}; its inputs: {names}.")
                for batch in batches:
                    feed = inputs[batch]

                    def run(session: Any = session, feed: dict[str, Any] = feed) -> list[Any]:
                        return list(session.run(None, feed))

                    label = label_parts("ort", LEVELS[level][0], provider, t, batch)
                    configs.append(Config(label, "ort", LEVELS[level][0], provider, t, batch, run, load_ms))
    return configs


def _eager_configs(
    source: dict[str, Any], specs: list[BenchInput], threads: list[int], batches: list[int],
    inputs: dict[int, dict[str, Any]], label_parts: Callable[..., str],
) -> list[Config]:  # fmt: skip
    import torch

    from core.records import from_jsonable
    from core.torchload import TorchSource, load_module

    start = time.perf_counter_ns()
    module = load_module(from_jsonable(TorchSource, source))
    runner = module.module() if isinstance(module, torch.export.ExportedProgram) else module
    load_ms = (time.perf_counter_ns() - start) / 1e6
    configs = []
    for t in threads:
        for batch in batches:
            tensors = [torch.from_numpy(inputs[batch][s.name]) for s in specs]

            def run(tensors: list[Any] = tensors, t: int = t) -> list[Any]:
                if torch.get_num_threads() != t:
                    torch.set_num_threads(t)
                with torch.inference_mode():
                    return _flatten(runner(*tensors))

            label = label_parts("eager", "", "CPUExecutionProvider", t, batch)
            configs.append(Config(label, "eager", "", "CPUExecutionProvider", t, batch, run, load_ms))
    return configs


def measure(
    configs: list[Config],
    iterations: int,
    warmup: int,
    time_budget_s: float,
    notes: list[str],
    progress: Callable[[float, str], None],
    span: tuple[float, float] = (0.12, 0.95),
) -> int:
    """Time ``configs``: a cold first run each (outputs kept), warm-up, then interleaved rounds. Returns the
    number of rounds; a note says so when the time budget cut them short."""
    first, last = span
    for k, config in enumerate(configs):
        progress(first + (last - first) * 0.15 * k / len(configs), f"Warming up {config.label}")
        start = time.perf_counter_ns()
        try:
            config.outputs = config.run()
        except Exception as exc:
            from core.partition import ort_message

            raise BenchmarkError(f"{config.label} failed on the generated inputs: {ort_message(exc)}") from exc
        config.first_ns = time.perf_counter_ns() - start
        for _ in range(warmup):
            config.run()

    # rounds that interleave the configurations, each round in a rotated order
    chunk = max(1, math.ceil(iterations / ROUNDS))
    deadline = time.perf_counter() + time_budget_s
    rounds = 0
    while any(len(c.samples) < iterations for c in configs):
        order = configs[rounds % len(configs) :] + configs[: rounds % len(configs)]
        for config in order:
            for _ in range(min(chunk, iterations - len(config.samples))):
                start = time.perf_counter_ns()
                config.run()
                config.samples.append(time.perf_counter_ns() - start)
        rounds += 1
        done = sum(len(c.samples) for c in configs) / (iterations * len(configs))
        progress(first + (last - first) * (0.15 + 0.85 * done), f"Measuring: round {rounds}, {done:.0%} of the calls")
        if time.perf_counter() > deadline:
            short = min(len(c.samples) for c in configs)
            notes.append(
                f"The time budget of {time_budget_s:g} s ran out after {rounds} round(s): {short} of {iterations} "
                "iterations per configuration. Raise the budget or lower the iterations for tighter intervals."
            )
            break
    return rounds


def run_benchmark(
    onnx_path: str,
    inputs: list[dict[str, Any]],
    torch_source: dict[str, Any] | None = None,
    model: str = "",
    model_id: str = "",
    engines: list[str] | None = None,
    levels: list[str] | None = None,
    providers: list[str] | None = None,
    threads: list[int] | None = None,
    batches: list[int] | None = None,
    iterations: int = 200,
    warmup: int = 20,
    time_budget_s: float = 60.0,
    seed: int = 0,
    progress: Callable[[float, str], None] | None = None,
) -> BenchReport:
    """Measure every configuration; see the module's docstring for the method."""
    import onnxruntime as ort

    from core.records import from_jsonable

    report_progress = progress or (lambda fraction, message: None)
    began = time.perf_counter()
    specs = [from_jsonable(BenchInput, i) for i in inputs]
    engines = engines or (["eager", "ort"] if torch_source else ["ort"])
    levels = levels or ["disable", "all"]
    providers = providers or ["CPUExecutionProvider"]
    threads = sorted(set(threads or [os.cpu_count() or 1]))
    batches = sorted(set(batches or [1]))
    _validate(engines, levels, providers, threads, batches, iterations, warmup, specs, torch_source)
    notes: list[str] = []
    unavailable = [p for p in providers if p not in ort.get_available_providers()]
    if unavailable:
        raise BenchmarkError(
            f"{', '.join(short_name(p) for p in unavailable)} is not in this build of ONNX Runtime "
            f"({', '.join(ort.get_available_providers())}); benchmark it on a machine that has it."
        )

    def label_parts(engine: str, level: str, provider: str, t: int, batch: int) -> str:
        text = "PyTorch eager" if engine == "eager" else f"ORT {level}"
        if engine == "ort" and len(providers) > 1:
            text += f" {short_name(provider)}"
        if len(threads) > 1:
            text += f" · {t} thread{'s' * (t != 1)}"
        if len(batches) > 1:
            text += f" · batch {batch}"
        return text

    report_progress(0.02, "Generating inputs")
    feeds = {batch: make_inputs(specs, batch, seed) for batch in batches}
    configs: list[Config] = []
    if "eager" in engines:
        report_progress(0.05, "Loading the PyTorch model")
        assert torch_source is not None
        configs += _eager_configs(torch_source, specs, threads, batches, feeds, label_parts)
    if "ort" in engines:
        report_progress(0.1, "Creating ONNX Runtime sessions")
        configs += _ort_configs(onnx_path, specs, levels, providers, threads, batches, feeds, label_parts)

    started_wall = time.time()
    rounds = measure(configs, iterations, warmup, time_budget_s, notes, report_progress)
    finished_wall = time.time()
    report_progress(0.96, "Computing statistics")
    results, baseline = _results(configs, notes)
    report = BenchReport(
        id=uuid.uuid4().hex[:12],
        model=model or os.path.basename(onnx_path),
        model_id=model_id,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        settings={
            "engines": engines,
            "levels": [LEVELS[lv][0] for lv in levels],
            "providers": providers,
            "threads": threads,
            "batches": batches,
            "iterations": iterations,
            "warmup": warmup,
            "time_budget_s": time_budget_s,
            "seed": seed,
            "rounds": rounds,
            "inputs": {s.name: {"dtype": s.dtype, "shape": s.shape, "batch_axis": s.batch_axis} for s in specs},
        },
        environment=environment(threads),
        results=results,
        baseline=baseline,
        headline="",
        notes=notes,
        seconds=time.perf_counter() - began,
        started=started_wall,
        finished=finished_wall,
    )
    report.headline = headline(report)
    return report


def _validate(
    engines: list[str], levels: list[str], providers: list[str], threads: list[int], batches: list[int],
    iterations: int, warmup: int, specs: list[BenchInput], torch_source: dict[str, Any] | None,
) -> None:  # fmt: skip
    unknown = [e for e in engines if e not in ("eager", "ort")]
    if unknown or not engines:
        raise BenchmarkError(f"Unknown engine {', '.join(unknown)}; choose eager and/or ort.")
    if "eager" in engines and not torch_source:
        raise BenchmarkError("PyTorch eager needs the PyTorch model; this ONNX model has no PyTorch original here.")
    bad = [lv for lv in levels if lv not in LEVELS]
    if bad:
        raise BenchmarkError(f"Unknown optimization level {', '.join(bad)}; choose from {', '.join(LEVELS)}.")
    if any(t < 1 or t > 256 for t in threads):
        raise BenchmarkError("Threads must be between 1 and 256.")
    if any(b < 1 or b > 4096 for b in batches):
        raise BenchmarkError("Batch sizes must be between 1 and 4096.")
    if batches != [1] and not any(s.batch_axis is not None for s in specs):
        raise BenchmarkError("The model's batch axis is fixed, so only its own batch size can be measured.")
    if not 1 <= iterations <= 1_000_000 or not 0 <= warmup <= 100_000:
        raise BenchmarkError("Iterations must be 1–1,000,000 and warm-up runs 0–100,000.")


def _results(configs: list[Config], notes: list[str]) -> tuple[list[BenchResult], str]:
    has_eager = any(c.engine == "eager" for c in configs)
    baseline_name = "PyTorch eager" if has_eager else "ORT DISABLE_ALL"

    def is_baseline(c: Config) -> bool:
        return c.engine == "eager" if has_eager else c.level == "DISABLE_ALL"

    baselines = {(c.threads, c.batch): c for c in configs if is_baseline(c)}
    references = {c.batch: c for c in configs if is_baseline(c)}
    if not baselines:
        baseline_name = ""
        notes.append("No baseline (PyTorch eager or ORT DISABLE_ALL) was measured, so there are no speedups.")
    results = []
    for c in configs:
        result = result_of(c)
        ms = [s / 1e6 for s in c.samples]
        base = baselines.get((c.threads, c.batch))
        if base is not None:
            ratio, low, high = speedup_interval([s / 1e6 for s in base.samples], ms)
            result.speedup, result.speedup_low, result.speedup_high = ratio, low, high
        reference = references.get(c.batch)
        if reference is not None:
            result.max_abs_diff = max_abs_diff(reference.outputs, c.outputs)
        results.append(result)
    noisy = [r.label for r in results if r.noisy]
    if noisy:
        notes.append(
            f"Noisy: the 95 % interval of the median is wider than ±{NOISY * 50:.0f} % for {', '.join(noisy)}. "
            "Another process may be using the CPU; run again, or with more iterations."
        )
    return results, baseline_name


def result_of(c: Config) -> BenchResult:
    """The statistics of one configuration's calls (speedup and agreement are filled in by the caller)."""
    ms = [s / 1e6 for s in c.samples]
    summary = summarize(ms)
    return BenchResult(
        label=c.label,
        engine=c.engine,
        level=c.level,
        provider=c.provider,
        threads=c.threads,
        batch=c.batch,
        n=summary.n,
        median_ms=summary.median,
        mean_ms=summary.mean,
        p90_ms=summary.p90,
        p99_ms=summary.p99,
        min_ms=summary.min,
        max_ms=summary.max,
        std_ms=summary.std,
        median_low_ms=summary.median_low,
        median_high_ms=summary.median_high,
        throughput=c.batch / (summary.median / 1000) if summary.median > 0 else math.nan,
        load_ms=c.load_ms,
        first_run_ms=c.first_ns / 1e6,
        noisy=summary.relative_interval > NOISY,
        samples_ms=ms[:MAX_SAMPLES_KEPT],
    )


def headline(report: BenchReport) -> str:
    """The one sentence a reader wants: the fastest ORT configuration against the baseline."""
    candidates = [r for r in report.results if r.engine == "ort" and r.speedup is not None and r.level != ""]
    if report.baseline == "ORT DISABLE_ALL":
        candidates = [r for r in candidates if r.level != "DISABLE_ALL"]
    if not candidates:
        fastest = min(report.results, key=lambda r: r.median_ms)
        return f"{fastest.label}: median {fastest.median_ms:.3g} ms per call"
    best = max(candidates, key=lambda r: r.speedup or 0)
    assert best.speedup is not None
    name = f"ONNX Runtime ({best.level})" + (f" at {best.threads} thread(s), batch {best.batch}" if len(
        {(r.threads, r.batch) for r in report.results}) > 1 else "")  # fmt: skip
    low, high = best.speedup_low or best.speedup, best.speedup_high or best.speedup
    if best.speedup >= 1:
        verdict, interval = f"{best.speedup:.1f}× faster than", f"{low:.1f}–{high:.1f}×"
    else:  # say "slower" and turn the interval round with it
        verdict, interval = f"{1 / best.speedup:.1f}× slower than", f"{1 / high:.1f}–{1 / low:.1f}×"
    return (
        f"{name} is {verdict} {report.baseline}, 95 % CI {interval} "
        f"(median {best.median_ms:.3g} ms against {best.median_ms * best.speedup:.3g} ms)"
    )
