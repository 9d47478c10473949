"""The timing harness shared by Benchmark and Quantize: sessions as measured, cold run, warm-up, then calls
timed one by one in rounds that interleave every configuration, so drift of the machine hits all alike."""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from core.errors import BenchmarkError, ProviderFallbackError, RuntimeRefusedError
from core.i18n import N_, _
from core.notes import Note, warning
from core.runtime.ort import explain_session_error, ort_message, session_options, short_name, stop_spinning
from core.runtime.provider_options import CPU, STRICT, session_providers
from core.runtime.stats import summarize

__all__ = [
    "CUT_SHORT",
    "MAX_SAMPLES_KEPT",
    "NOISY",
    "PER_CALL",
    "BenchResult",
    "Config",
    "measure",
    "result_of",
    "timed_fields",
    "timed_session",
]


ROUNDS = 10  # measurement rounds; each runs a slice of every configuration's iterations


NOISY = 0.10  # a median interval wider than 10 % of the median is flagged
WARMUP_SHARE = 0.2  # of the time left to a deadline, the most the warm-up may take (measured calls get the rest)


MAX_SAMPLES_KEPT = 5000  # per configuration, for the distribution chart and the history
PER_CALL = ("samples_ms", "cpu_samples_ms")  # a result's per-call lists, left out of tables and summaries


@dataclass(kw_only=True)
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
    # the median call's CPU time, all our threads together: near the wall time for one thread, up to threads ×
    # wall time when they all work; far below it, the call waited for a CPU that something else had
    cpu_median_ms: float | None = None
    cpu_samples_ms: list[float] = field(default_factory=list)  # each kept call's CPU time, beside samples_ms
    # ORT's: how many nodes each provider ran in this configuration's session (its share; empty for eager)
    provider_nodes: dict[str, int] = field(default_factory=dict)
    # GPU memory held at the peak of one call, as the runtime itself counts it (PyTorch eager on CUDA:
    # torch.cuda.max_memory_allocated after a reset, core.bench.eager); None: not on a GPU, or a runtime that tells
    # none (ONNX Runtime's CUDA provider: its Python API has no peak, core.bench.eager says why)
    gpu_peak_mb: float | None = None


@dataclass(kw_only=True)
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
    cpu_samples: list[int] = field(default_factory=list)  # the same calls' CPU time (every thread of ours), ns
    first_ns: int = 0
    outputs: list[Any] = field(default_factory=list)
    provider_nodes: dict[str, int] = field(default_factory=dict)  # ORT's assignment in its session
    gpu_peak_mb: float | None = None  # the runtime's own count of GPU memory at a call's peak (BenchResult's)


def timed_session(
    path: str,
    level: str,
    provider: str | list[str],
    threads: int,
    profile_prefix: str = "",
    optimized_path: str = "",
    *,
    strict: bool = False,
    record: bool = False,
) -> tuple[Any, float]:
    """A session as the benchmark uses it (sequential, one inter-op thread, no profiling) and its load time.
    Profile's sessions are the same, with ORT's profiler on (its trace named ``profile_prefix``) and the
    optimized graph saved (at ``optimized_path``) to trace its nodes back. ``provider`` (or several, in order of
    preference) is opened with its options (core.runtime.provider_options), the CPU provider after it; ``record``:
    ORT keeps which provider took which node (core.runtime.fallback.nodes_per_provider); ``strict``: no node may fall
    back to the CPU provider (``session.disable_cpu_ep_fallback``), else ProviderFallbackError."""
    import onnxruntime as ort

    options = stop_spinning(session_options(level, threads))  # sessions timed in turn must not slow each other
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.enable_profiling = bool(profile_prefix)
    if profile_prefix:
        options.profile_file_prefix = profile_prefix
    if optimized_path:
        options.optimized_model_filepath = optimized_path
    if record:
        options.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
    asked = [p for p in ([provider] if isinstance(provider, str) else provider) if p != CPU]
    provider = asked[0] if asked else CPU  # the one a refusal names
    strict = strict and provider != CPU  # the CPU provider alone cannot fall back
    if strict:
        options.add_session_config_entry(*STRICT)
    providers = session_providers([*asked, CPU], strict=strict, threads=threads)
    start = time.perf_counter_ns()
    try:
        session = ort.InferenceSession(path, options, providers=providers)
    except Exception as exc:
        if strict and "fallback to CPU EP has been explicitly disabled" in str(exc):
            raise ProviderFallbackError(
                _(
                    "Refused (--strict): {provider} does not take every node of this model, and ONNX Runtime refuses "
                    "to run the rest on the CPU provider (session.disable_cpu_ep_fallback). `python -m core "
                    "partition MODEL --runtime RUNTIME` names the nodes and why; without --strict the CPU provider "
                    "runs them."
                ).format(provider=short_name(provider))
            ) from exc
        error = explain_session_error(exc, "create a session for this model", path)
        raise (error if isinstance(error, RuntimeRefusedError) else BenchmarkError(str(error))) from exc
    return session, (time.perf_counter_ns() - start) / 1e6


# the note of a run the time budget stopped, one template per English form (a note of the run, said where shown)
CUT_SHORT = (
    N_(
        "The time budget of {budget} s ran out after {rounds} round: {measured} of the {asked} calls asked for were "
        "measured per configuration. The intervals come from those calls; raise the budget to measure them all "
        "(more calls give tighter intervals)."
    ),
    N_(
        "The time budget of {budget} s ran out after {rounds} rounds: {measured} of the {asked} calls asked for were "
        "measured per configuration. The intervals come from those calls; raise the budget to measure them all "
        "(more calls give tighter intervals)."
    ),
)


def measure(
    configs: list[Config],
    iterations: int,
    warmup: int,
    time_budget_s: float,
    notes: list[Note],
    progress: Callable[[float, str], None],
    span: tuple[float, float] = (0.12, 0.95),
    deadline: float | None = None,
) -> int:
    """Time ``configs``: a cold first run each (outputs kept), warm-up, then interleaved rounds. Returns the
    number of rounds; a note says so when the time budget cut them short.

    Without ``deadline``, measuring has ``time_budget_s`` from its first round. With it (a ``time.perf_counter()``
    the caller's budget ends at, counting what it did before: opening sessions), the warm-up stops once it has
    taken WARMUP_SHARE of the time left, and measuring stops at the deadline. Either way the clock is read after
    every call, not every round (a model of a second a call ran 20 calls a configuration past a round's end), and
    every configuration gets one timed call at least, so that each has a result."""
    first, last = span
    warm_until = None if deadline is None else time.perf_counter() + WARMUP_SHARE * (deadline - time.perf_counter())
    call_ns: dict[int, int] = {}  # what a configuration's last call before the rounds took
    for k, config in enumerate(configs):
        progress(first + (last - first) * 0.15 * k / len(configs), _("Warming up {name}").format(name=config.label))
        start = time.perf_counter_ns()
        try:
            config.outputs = config.run()
        except Exception as exc:
            raise BenchmarkError(
                _("{name} failed on the generated inputs: {error}").format(name=config.label, error=ort_message(exc))
            ) from exc
        config.first_ns = time.perf_counter_ns() - start
        call_ns[id(config)] = config.first_ns
        for _run in range(warmup):
            if warm_until is not None and time.perf_counter() > warm_until:
                break
            start = time.perf_counter_ns()
            config.run()
            call_ns[id(config)] = time.perf_counter_ns() - start

    # rounds that interleave the configurations, each round in a rotated order; a slow model's round is made short
    # enough that ROUNDS of them fit in the time left (one call each at least), so that none takes the rest alone
    deadline = time.perf_counter() + time_budget_s if deadline is None else deadline
    round_s = sum(call_ns.values()) / 1e9
    chunk = max(1, math.ceil(iterations / ROUNDS))
    if round_s > 0:
        chunk = max(1, min(chunk, int((deadline - time.perf_counter()) / (ROUNDS * round_s))))
    rounds = 0
    while any(len(c.samples) < iterations for c in configs):
        order = configs[rounds % len(configs) :] + configs[: rounds % len(configs)]
        for config in order:
            for _call in range(min(chunk, iterations - len(config.samples))):
                if config.samples and time.perf_counter() > deadline:
                    break
                cpu = time.process_time_ns()
                start = time.perf_counter_ns()
                config.run()
                config.samples.append(time.perf_counter_ns() - start)
                config.cpu_samples.append(time.process_time_ns() - cpu)
        rounds += 1
        done = sum(len(c.samples) for c in configs) / (iterations * len(configs))
        said = _("Measuring: round {rounds}, {done} of the calls").format(rounds=rounds, done=f"{done:.0%}")
        progress(first + (last - first) * (0.15 + 0.85 * done), said)
        if time.perf_counter() > deadline and any(len(c.samples) < iterations for c in configs):
            notes.append(_cut_short(configs, iterations, time_budget_s, rounds))
            break
    return rounds


def _cut_short(configs: list[Config], iterations: int, time_budget_s: float, rounds: int) -> Note:
    """What a run that the time budget stopped measured, and the one change that tightens its intervals."""
    measured = min(len(c.samples) for c in configs)  # every configuration gets the same calls in a round
    template = CUT_SHORT[0] if rounds == 1 else CUT_SHORT[1]
    return warning(template, budget=f"{time_budget_s:g}", rounds=rounds, measured=measured, asked=iterations)


def timed_fields(calls_ms: list[float], batch: int = 1) -> dict[str, Any]:
    """The fields of a BenchResult that a configuration's call times decide, whoever timed them (this harness,
    or a browser): the statistics, the throughput of ``batch`` samples a call, whether the interval is too wide,
    and the calls kept."""
    summary = summarize(calls_ms)
    return {
        "n": summary.n,
        "median_ms": summary.median,
        "mean_ms": summary.mean,
        "p90_ms": summary.p90,
        "p99_ms": summary.p99,
        "min_ms": summary.min,
        "max_ms": summary.max,
        "std_ms": summary.std,
        "median_low_ms": summary.median_low,
        "median_high_ms": summary.median_high,
        "throughput": batch / (summary.median / 1000) if summary.median > 0 else math.nan,
        "noisy": summary.relative_interval > NOISY,
        "samples_ms": calls_ms[:MAX_SAMPLES_KEPT],
    }


def result_of(c: Config) -> BenchResult:
    """The statistics of one configuration's calls (speedup and agreement are filled in by the caller)."""
    return BenchResult(
        label=c.label,
        engine=c.engine,
        level=c.level,
        provider=c.provider,
        threads=c.threads,
        batch=c.batch,
        load_ms=c.load_ms,
        first_run_ms=c.first_ns / 1e6,
        **timed_fields([s / 1e6 for s in c.samples], c.batch),
        cpu_median_ms=float(statistics.median(c.cpu_samples)) / 1e6 if c.cpu_samples else None,
        cpu_samples_ms=[s / 1e6 for s in c.cpu_samples[:MAX_SAMPLES_KEPT]],
        provider_nodes=c.provider_nodes,
        gpu_peak_mb=c.gpu_peak_mb,
    )
