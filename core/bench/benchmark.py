"""PyTorch eager against ONNX Runtime, measured honestly. Runs in the worker under the machine-wide lock.

Method: inputs generated once per shape from a seed; every configuration (engine, optimization level,
provider, threads, batch) is created and timed once cold (the first run, reported apart), warmed up, then
measured in rounds that interleave all configurations (core.runtime.harness), so drift of the machine hits
all of them alike. Statistics come from core.runtime.stats; agreement is checked against the eager outputs
(or ORT at DISABLE_ALL without them).
"""

from __future__ import annotations

import dataclasses
import gc
import os
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from core.bench.eager import eager_configs, ort_gpu_memory_notes
from core.bench.records import BenchReport, BenchRequest
from core.errors import BenchmarkError
from core.i18n import N_, _, bounds, number
from core.model.hints import guess_hint
from core.model.inputs import BenchInput, make_inputs, plan_summary
from core.model.torchload import TorchSource
from core.notes import Note, NoteValue, note, warning
from core.runtime.activity import ActivityMeter
from core.runtime.fallback import Placed, placement_notes, session_placement
from core.runtime.harness import CUT_SHORT, NOISY, BenchResult, Config, measure, result_of, timed_session
from core.runtime.machine import default_threads, environment
from core.runtime.ort import LEVELS, short_name
from core.runtime.outputs import max_abs_diff
from core.runtime.provider_options import CPU
from core.runtime.runs import LatencyRun
from core.runtime.runtimes import DEFAULT
from core.runtime.stats import speedup_interval

__all__ = ["NOISY_LABELS", "NO_BASELINE", "headline", "run_benchmark"]

WIDE = 2.0  # a speedup interval whose ends are further apart than this ratio is not one number
SESSIONS_SHARE = 0.5  # of the memory free, the most the sessions after the first may take together (else one at a time)
# what a run says: notes (a template and its values), said in the reader's language where they are shown
NO_BASELINE = N_("No baseline (PyTorch eager or ORT DISABLE_ALL) was measured, so there are no speedups.")
NOISY_LABELS = N_(
    "Noisy: for {labels}, the 95 % CI of the median is wider than ±{percent} %, so the headline gives the interval, "
    "not one number. Another process may have used the CPU, or the run was short: run again, with more calls or on "
    "a quieter machine."
)
ONE_AT_A_TIME = N_(
    "One session of this model takes about {size} MB and this machine has {free} MB free, so its {count} "
    "ONNX Runtime sessions were measured one after another, each closed before the next opened, each in its share of "
    "the time budget, not side by side in rounds: a change in the machine between them is not evened out."
)
LOADING_TOOK = N_(
    "Opening the sessions took {load} s of the {budget} s time budget, which holds the loading, the warm-up and the "
    "measuring: raise the budget to measure more calls."
)
# the headline and its clauses; where a count decides the English form, one template per form
MEDIAN_ONLY = N_("{name}: median {ms} ms per call")
ORT_AT = N_("ONNX Runtime ({level})")
ORT_AT_THREADS = (
    N_("ONNX Runtime ({level}) at {count} thread, batch {batch}"),
    N_("ONNX Runtime ({level}) at {count} threads, batch {batch}"),
)
MEDIANS = N_("median {ms} ms against {base} ms")
MEDIANS_BUSY = N_(
    "median {ms} ms against {base} ms; the machine was busy: other processes kept {others} of {cores} cores busy"
)
AS_FAST = N_("{name} and {baseline} are as fast as each other here: 95 % CI {low}–{high}× ({ms})")
FASTER = N_("{name} is {speedup}× faster than {baseline}, 95 % CI {low}–{high}× ({ms})")
SLOWER = N_("{name} is {speedup}× slower than {baseline}, 95 % CI {low}–{high}× ({ms})")
NEARLY_FASTER = N_("{name} is about as fast as {baseline}, faster by {percent} %: 95 % CI {low}–{high}× ({ms})")
NEARLY_SLOWER = N_("{name} is about as fast as {baseline}, slower by {percent} %: 95 % CI {low}–{high}× ({ms})")
NOISY_EITHER_WAY = N_(
    "Noisy run: {name} was somewhere between {slower}× slower and {faster}× faster than {baseline} (95 % CI; {ms})"
)
NOISY_AS_FAST = N_("Noisy run: {name} was between {low}× and {high}× as fast as {baseline} (95 % CI; {ms})")
NOISY_FASTER = N_("Noisy run: {name} was between {low}× and {high}× faster than {baseline} (95 % CI; {ms})")
NOISY_SLOWER = N_("Noisy run: {name} was between {low}× and {high}× slower than {baseline} (95 % CI; {ms})")


@dataclass(kw_only=True)
class _Plan:
    """What to measure: every combination of these, each one configuration."""

    engines: list[str]
    levels: list[str]
    providers: list[str]
    threads: list[int]
    batches: list[int]
    runtime: str = DEFAULT  # the build of ONNX Runtime that measures (core.runtime.runtimes)
    strict: bool = False  # no node may fall back to the CPU provider
    # (level name, provider, threads) -> (the providers the session kept, nodes per provider): ORT's assignment
    placed: dict[tuple[str, str, int], tuple[list[str], dict[str, int]]] = field(default_factory=dict)

    def config(
        self, engine: str, level: str, provider: str, threads: int, batch: int, run: Any, load_ms: float
    ) -> Config:
        """One configuration to time (``run`` calls the model once), labelled as the table says it: "PyTorch
        eager", "ORT ALL", "ORT ALL on openvino/OpenVINOExecutionProvider", with its threads and batch where the
        plan has several."""
        text = "PyTorch eager" if engine == "eager" else f"ORT {level}"
        if engine == "ort" and self.runtime != DEFAULT:  # "ORT ALL on openvino/OpenVINOExecutionProvider"
            text += f" on {self.runtime}/{provider}"
        elif engine == "ort" and len(self.providers) > 1:
            text += f" {short_name(provider)}"
        if len(self.threads) > 1:
            text += f" · {threads} thread{'s' * (threads != 1)}"
        if len(self.batches) > 1:
            text += f" · batch {batch}"
        return Config(
            label=text,
            engine=engine,
            level=level,
            provider=provider,
            threads=threads,
            batch=batch,
            run=run,
            load_ms=load_ms,
        )


def _sessions(plan: _Plan) -> list[tuple[str, str, int]]:
    """The ONNX Runtime sessions the plan opens: (level, provider, threads), one per combination."""
    if "ort" not in plan.engines:
        return []
    return [(level, provider, t) for level in plan.levels for provider in plan.providers for t in plan.threads]


def _ort_configs(
    path: str, specs: list[BenchInput], plan: _Plan, feeds: dict[int, dict[str, Any]], key: tuple[str, str, int]
) -> list[Config]:
    """One session opened, as one configuration per batch size."""
    level, provider, t = key
    session, load_ms = timed_session(path, level, provider, t, strict=plan.strict, record=True)
    plan.placed[(LEVELS[level].name, provider, t)] = session_placement(session)
    names = [i.name for i in session.get_inputs()]
    missing = [s.name for s in specs if s.name not in names]
    if missing:
        raise BenchmarkError(f"The model has no input named {', '.join(missing)}; its inputs: {names}.")
    configs = []
    for batch in plan.batches:
        feed = feeds[batch]

        def run(session: Any = session, feed: dict[str, Any] = feed) -> list[Any]:
            return list(session.run(None, feed))

        configs.append(plan.config("ort", LEVELS[level].name, provider, t, batch, run, load_ms))
    return configs


def _closed() -> list[Any]:
    raise AssertionError("this configuration's session was closed after it was measured")


def _rss() -> int:
    import psutil

    return int(psutil.Process().memory_info().rss)


def _free_memory() -> int:
    import psutil

    return int(psutil.virtual_memory().available)


def _plan(
    engines: list[str] | None,
    levels: list[str] | None,
    providers: list[str] | None,
    threads: list[int] | None,
    batches: list[int] | None,
    has_torch: bool,
    runtime: str = DEFAULT,
    strict: bool = False,
) -> _Plan:
    import onnxruntime as ort

    available = ort.get_available_providers()
    # another runtime's own providers, each measured beside the CPU provider; the default wheel's: the CPU
    devices = [p for p in available if p not in (CPU, "AzureExecutionProvider")] if runtime != DEFAULT else []
    plan = _Plan(
        engines=engines or (["eager", "ort"] if has_torch else ["ort"]),
        levels=levels or ["disable", "all"],
        providers=providers or [*devices, CPU],
        threads=sorted(set(threads or [default_threads()])),
        batches=sorted(set(batches or [1])),
        runtime=runtime,
        strict=strict,
    )
    unavailable = [p for p in plan.providers if p not in available]
    if unavailable:
        raise BenchmarkError(
            f"{', '.join(short_name(p) for p in unavailable)} is not in this build of ONNX Runtime (the runtime "
            f"{runtime}: {', '.join(available)}); measure it on a runtime that has it (--runtime NAME; `python -m "
            "core runtimes` lists them) or on a machine that has it."
        )
    return plan


def _provider_notes(plan: _Plan, results: list[BenchResult]) -> list[Note]:
    """Each ORT result's share of the nodes per provider (ORT's assignment in its session), and what fell back:
    a provider asked for that took no node or that its session left out (core.runtime.fallback), once each."""
    import onnxruntime as ort

    for result in results:
        result.provider_nodes = plan.placed.get((result.level, result.provider, result.threads), ([], {}))[1]
    said: list[Note] = []
    for provider in dict.fromkeys(p for p in plan.providers if p != CPU):
        # the last session of the provider (the highest level asked): the one whose assignment ORT optimized most
        last = [placed for (_level, p, _t), placed in plan.placed.items() if p == provider]
        used, nodes = last[-1] if last else ([], {})
        placed = Placed(runtime=plan.runtime, asked=[provider], available=ort.get_available_providers(), used=used)
        said += placement_notes(dataclasses.replace(placed, nodes=nodes))
    return said


def _silent(fraction: float, message: str) -> None:
    """Progress goes nowhere when nobody watches."""


def run_benchmark(request: BenchRequest, progress: Callable[[float, str], None] | None = None) -> BenchReport:
    """Measure every configuration; see the module's docstring for the method."""
    report_progress = progress or _silent
    began = time.perf_counter()
    measured = request.model
    onnx_path, inputs, torch_source = measured.path, measured.inputs, measured.torch_source
    iterations, warmup, time_budget_s, seed = request.iterations, request.warmup, request.time_budget_s, request.seed
    engines, levels, providers, threads, batches = (
        request.engines,
        request.levels,
        request.providers,
        request.threads,
        request.batches,
    )
    plan = _plan(
        engines, levels, providers, threads, batches, torch_source is not None, request.runtime, request.strict
    )
    _validate(plan, iterations, warmup, inputs, torch_source)
    report_progress(0.02, _("Generating inputs"))
    feeds = {batch: make_inputs(inputs, batch, seed) for batch in plan.batches}
    notes: list[Note] = []
    started_wall = time.time()
    meter = ActivityMeter()
    try:  # the budget holds everything from here: loading, warm-up and measuring
        configs, rounds = _measured(request, plan, feeds, began + time_budget_s, notes, report_progress)
    except BenchmarkError as exc:
        raise BenchmarkError(str(exc) + guess_hint(inputs)) from exc
    activity = meter.stop()
    finished_wall = time.time()
    if (activity.busy or not activity.known) and activity.note is not None:
        notes.append(activity.note)
    report_progress(0.96, _("Computing statistics"))
    results, baseline = _results(configs, notes)
    notes[:0] = _provider_notes(plan, results)  # what fell back, said before any figure (core.runtime.fallback)
    notes += ort_gpu_memory_notes(plan.providers if "ort" in plan.engines else [])  # no peak from ORT on CUDA
    settings = {
        "engines": plan.engines, "levels": [LEVELS[lv].name for lv in plan.levels], "providers": plan.providers,
        "threads": plan.threads, "batches": plan.batches, "iterations": iterations, "warmup": warmup,
        "time_budget_s": time_budget_s, "seed": seed, "rounds": rounds,
        "inputs": plan_summary(inputs),
    }  # fmt: skip
    if plan.runtime != DEFAULT:  # measured by another build of ONNX Runtime (the default's runs say nothing)
        settings["runtime"] = plan.runtime
    if any(c.engine == "eager" for c in configs):  # eager measured the PyTorch original, not the ONNX model
        settings["torch_model_id"] = measured.torch_id
    report = BenchReport(
        id=uuid.uuid4().hex[:12],
        model=measured.name or os.path.basename(onnx_path),
        model_id=measured.id,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        settings=settings,
        environment=environment(plan.threads),
        results=results,
        baseline=baseline,
        headline=note(""),
        notes=notes,
        seconds=time.perf_counter() - began,
        started=started_wall,
        finished=finished_wall,
        activity=activity,
    )
    report.headline = headline(report)
    return report


def _measured(
    request: BenchRequest,
    plan: _Plan,
    feeds: dict[int, dict[str, Any]],
    deadline: float,
    notes: list[Note],
    progress: Callable[[float, str], None],
) -> tuple[list[Config], int]:
    """Every configuration opened and timed by ``deadline`` (the budget's end, counting the loading): all sessions
    at once, interleaved in rounds, when the memory this machine has free holds them; else one at a time, each
    closed before the next opens, each with its share of the time left. The configurations, and the rounds."""
    model, timing = request.model, (request.iterations, request.warmup, request.time_budget_s)
    eager: list[Config] = []
    if "eager" in plan.engines and model.torch_source is not None:
        progress(0.05, _("Loading the PyTorch model"))
        eager = eager_configs(model.torch_source, model.path, model.inputs, plan, feeds, request.eager_device)
    keys = _sessions(plan)
    progress(0.1, _("Creating ONNX Runtime sessions"))
    before = _rss()
    first = _ort_configs(model.path, model.inputs, plan, feeds, keys[0]) if keys else []
    each, free = max(_rss() - before, 0), _free_memory()  # what one session of this model takes
    if len(keys) <= 1 or (len(keys) - 1) * each < SESSIONS_SHARE * free:
        rest = [c for key in keys[1:] for c in _ort_configs(model.path, model.inputs, plan, feeds, key)]
        configs = eager + first + rest
        rounds = measure(configs, *timing, notes, progress, deadline=deadline)
        _loading_note(configs, request.time_budget_s, notes)
        return configs, rounds
    notes.append(note(ONE_AT_A_TIME, count=len(keys), size=f"{each / 2**20:,.0f}", free=f"{free / 2**20:,.0f}"))
    slots: list[list[Config] | tuple[str, str, int]] = [eager] if eager else []
    slots += [first, *keys[1:]]
    done: list[Config] = []
    cut: list[Note] = []  # one group's note that the budget cut it short says it for all
    rounds = 0
    for k, slot in enumerate(slots):
        until = time.perf_counter() + (deadline - time.perf_counter()) / (len(slots) - k)  # an equal share of the rest
        group = slot if isinstance(slot, list) else _ort_configs(model.path, model.inputs, plan, feeds, slot)
        span = (0.12 + 0.83 * k / len(slots), 0.12 + 0.83 * (k + 1) / len(slots))
        rounds = max(rounds, measure(group, *timing, cut, progress, span, deadline=until))
        for c in group:
            c.run = _closed  # the session (or the PyTorch module) goes before the next opens
        done += group
        slots[k] = []
        del group, slot
        gc.collect()
    notes += cut[:1]
    _loading_note(done, request.time_budget_s, notes)
    return done, rounds


def _loading_note(configs: list[Config], budget_s: float, notes: list[Note]) -> None:
    """When the budget cut the measuring short and opening the sessions took a fifth of it or more, a note that
    says so (the budget holds the loading)."""
    loads = {(c.engine, c.level, c.provider, c.threads): c.load_ms for c in configs}
    load_s = sum(loads.values()) / 1000
    if load_s >= 0.2 * budget_s and any(n.key in CUT_SHORT for n in notes):
        notes.append(note(LOADING_TOOK, load=load_s, budget=f"{budget_s:g}"))


def _validate(
    plan: _Plan, iterations: int, warmup: int, specs: list[BenchInput], torch_source: TorchSource | None
) -> None:
    engines, levels, threads, batches = plan.engines, plan.levels, plan.threads, plan.batches
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


def _results(configs: list[Config], notes: list[Note]) -> tuple[list[BenchResult], str]:
    baseline_name = "PyTorch eager" if any(c.engine == "eager" for c in configs) else "ORT DISABLE_ALL"
    baselines = {(c.threads, c.batch): c for c in configs if _is_baseline(c, baseline_name)}
    references = {c.batch: c for c in configs if _is_baseline(c, baseline_name)}
    if not baselines:
        baseline_name = ""
        notes.append(note(NO_BASELINE))
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
        notes.append(warning(NOISY_LABELS, percent=round(NOISY * 50), labels=", ".join(noisy)))
    return results, baseline_name


def headline(report: LatencyRun) -> Note:
    """The one sentence a reader wants, as a note: the fastest ORT configuration against the baseline (a noisy or
    busy run's as a warning, with the interval, never one number)."""
    candidates = [r for r in report.results if r.engine == "ort" and r.speedup is not None and r.level != ""]
    if report.baseline == "ORT DISABLE_ALL":
        candidates = [r for r in candidates if r.level != "DISABLE_ALL"]
    if not candidates:
        fastest = min(report.results, key=lambda r: r.median_ms)
        return note(MEDIAN_ONLY, name=fastest.label, ms=fastest.median_ms)
    best = max(candidates, key=lambda r: r.speedup or 0)
    assert best.speedup is not None
    name = note(ORT_AT, level=best.level)
    if len({(r.threads, r.batch) for r in report.results}) > 1:
        at_threads = ORT_AT_THREADS[0] if best.threads == 1 else ORT_AT_THREADS[1]
        name = note(at_threads, level=best.level, count=best.threads, batch=best.batch)
    low, high = best.speedup_low or best.speedup, best.speedup_high or best.speedup
    base = next(
        (
            r
            for r in report.results
            if r.threads == best.threads and r.batch == best.batch and _is_baseline(r, report.baseline)
        ),
        None,
    )
    busy = report.activity is not None and report.activity.busy
    noisy = busy or best.noisy or (base is not None and base.noisy) or high > low * WIDE
    medians: dict[str, NoteValue] = {"ms": best.median_ms, "base": best.median_ms * best.speedup}
    ms = note(MEDIANS, **medians)
    if busy:
        assert report.activity is not None
        others = number(report.activity.others_cores, 1)
        ms = note(MEDIANS_BUSY, **medians, others=others, cores=report.activity.cores)
    said: dict[str, NoteValue] = {"name": name, "baseline": report.baseline, "ms": ms}
    if noisy:  # never a settled number that the next run may contradict: the interval is the answer
        return _noisy_headline(best.speedup, low, high, said)
    if low <= 1 <= high:
        lo, hi = bounds(low, high, 2)
        return note(AS_FAST, **said, low=lo, high=hi)
    if number(best.speedup, 1) == number(1.0, 1) or number(1 / best.speedup, 1) == number(1.0, 1):
        lo, hi = bounds(low, high, 2)  # "1.0× faster" says nothing: the percent does, beside the interval
        percent = abs(best.speedup - 1) * 100
        template = NEARLY_FASTER if best.speedup >= 1 else NEARLY_SLOWER
        return note(template, **said, percent=number(percent, 1 if percent < 1 else 0), low=lo, high=hi)
    if best.speedup >= 1:
        lo, hi = bounds(low, high)
        return note(FASTER, **said, speedup=number(best.speedup, 1), low=lo, high=hi)
    # say "slower" and turn the interval round with it
    lo, hi = bounds(1 / high, 1 / low)
    return note(SLOWER, **said, speedup=number(1 / best.speedup, 1), low=lo, high=hi)


def _noisy_headline(speedup: float, low: float, high: float, said: dict[str, NoteValue]) -> Note:
    """A noisy run's headline: the interval, never one number."""
    if low <= 1 <= high:
        if low < 1:
            return warning(NOISY_EITHER_WAY, **said, slower=number(1 / low, 1), faster=number(high, 1))
        lo, hi = bounds(low, high)
        return warning(NOISY_AS_FAST, **said, low=lo, high=hi)
    if speedup >= 1:
        lo, hi = bounds(low, high)
        return warning(NOISY_FASTER, **said, low=lo, high=hi)
    lo, hi = bounds(1 / high, 1 / low)
    return warning(NOISY_SLOWER, **said, low=lo, high=hi)


def _is_baseline(item: Config | BenchResult, baseline: str) -> bool:
    """Whether a configuration (or its result) is what speedups are measured against."""
    if baseline == "PyTorch eager":
        return item.engine == "eager"
    return item.engine == "ort" and item.level == "DISABLE_ALL"
