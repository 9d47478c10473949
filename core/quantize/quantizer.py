"""INT8 and FP16 variants of an ONNX model, compared with the fp32 original: size, latency, accuracy, and
where the integer ops ran. Runs in the worker, under the machine-wide lock (it benchmarks).

Variants are made with ONNX Runtime's own tools (variants.py). Latency uses the timing harness of the
benchmark (core.runtime.harness); accuracy compares each variant's outputs with the fp32 model's on held-out
inputs that calibration never saw (calibration.py).

The time budget holds what grows with a call of the model: one call of the float32 model is timed first, and the
generated calibration samples and the held-out inputs are as many as asked, or as a quarter of the budget each
allows (a note says so), and the latency is measured within the rest (the harness's deadline). A 2-layer encoder of
a second a call took 356 s: 32 calibration calls, 128 held-out ones and 40 warm-up calls came on top of the budget.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from core.errors import QuantizeError
from core.i18n import N_, _, number
from core.model.inputs import BenchInput, make_inputs
from core.notes import Note, note, significant
from core.quantize.accuracy import accuracy, outputs, typed
from core.quantize.calibration import split_data
from core.quantize.judge import Tolerance, judge, recommend, size_note
from core.quantize.records import (
    INTEGER_OPS,
    UNLOADABLE,
    VARIANTS,
    QuantizeReport,
    QuantizeRequest,
    Variant,
    variant_label,
)
from core.quantize.variants import (
    file_size,
    make_variant,
    refuse_unquantizable,
    stage_source,
    unstage_source,
    weight_bytes,
)
from core.runtime.harness import Config, measure, result_of, timed_session
from core.runtime.machine import default_threads, environment
from core.runtime.ort import ort_message, session_options
from core.runtime.placement import nodes_per_provider
from core.runtime.refusals import old_opset_refusal
from core.runtime.stats import speedup_interval

__all__ = ["quantize_model"]

# the report's notes (core.notes: said where shown)
NO_MESSAGE = N_("one of ORT's own checks failed, without a message")
NOT_PREPROCESSED = N_(
    "ORT's pre-processing for static INT8 (shape inference and a clean-up of the graph) could not handle this model "
    "({reason}); the static variants are made from the model as it is."
)
VNNI = N_(
    "This CPU has VNNI or AMX instructions ({flags}): int8 dot products run in one instruction. A variant can still be "
    "slower than float32: dynamic INT8 quantizes each activation on every call, and the conversions between int8 and "
    "float32 around ops that stay in float cost time too."
)
NO_VNNI = N_(
    "This CPU has no VNNI or AMX instructions: int8 arithmetic is emulated with wider instructions, so int8 may be "
    "slower than float32."
)
FEWER_HELD_OUT = N_(
    "Accuracy is measured on {count} held-out inputs of the {asked} asked for: one call of the model takes {ms} ms, "
    "and the checks of {models} models keep to a quarter of the {budget} s time budget."
)
FEWER_CALIBRATION = N_(
    "Calibrated on {count} generated samples of the {asked} asked for: one call of the model takes {ms} ms, and "
    "calibration keeps to a quarter of the {budget} s time budget."
)
ENTROPY = N_(
    "ONNX Runtime's quantize_static builds the Entropy histogram with 128 bins for 128 levels, which leaves nothing to "
    "clip, so Entropy usually gives the same ranges as MinMax. Percentile clips the rarest {share} of values."
)


def _ops(path: str) -> dict[str, int]:
    import onnx

    model = onnx.load_model(path, load_external_data=False)
    return dict(Counter(n.op_type for n in model.graph.node).most_common())


def _runtime_ops(path: str, out: Path) -> dict[str, int]:
    """Op counts of the graph ORT runs (level ALL), e.g. QDQ pairs fused into QLinearConv."""
    import onnxruntime as ort

    options = session_options("all")
    options.log_severity_level = 3  # not the warning that a saved LAYOUT graph is machine-specific: known
    options.optimized_model_filepath = str(out / (Path(path).stem + ".runtime.onnx"))
    ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    return _ops(options.optimized_model_filepath)


def _check_request(variants: list[str], calibration_count: int, held_out: int) -> None:
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown or not variants:
        raise QuantizeError(
            _("Unknown variant {names}; choose from {known}.").format(
                names=", ".join(unknown) or _("(none)"), known=", ".join(VARIANTS)
            )
        )
    if not 1 <= calibration_count <= 10_000 or not 1 <= held_out <= 10_000:
        raise QuantizeError(
            _("Calibration and held-out sample counts must be between 1 and {most}.").format(most=number(10_000))
        )


def _open_model(source: Path, specs: list[BenchInput]) -> bool:
    """Refuse what cannot be quantized or inputs that are not the model's; True when the model is large
    enough (or already external) to be written with external data."""
    import onnx

    model = onnx.load_model(str(source), load_external_data=False)
    refuse_unquantizable(model)
    too_old = old_opset_refusal(model)  # before any variant is made of a model ONNX Runtime cannot run
    if too_old is not None:
        raise too_old
    initializers = {t.name for t in model.graph.initializer}
    graph_inputs = [i.name for i in model.graph.input if i.name not in initializers]
    if sorted(graph_inputs) != sorted(s.name for s in specs):
        raise QuantizeError(
            _("The inputs given ({given}) are not the model's ({inputs}).").format(
                given=", ".join(s.name for s in specs), inputs=", ".join(graph_inputs)
            )
        )
    return source.stat().st_size > 1 << 30 or any(
        t.data_location == onnx.TensorProto.EXTERNAL for t in model.graph.initializer
    )


def _preprocessed(source: Path, out: Path, large: bool, notes: list[Note | str]) -> Path:
    """ORT's pre-processing for static quantization (symbolic shape inference and optimization)."""
    from onnxruntime.quantization.shape_inference import quant_pre_process

    pre = out / f"{source.stem}.preprocessed.onnx"
    try:
        quant_pre_process(str(source), str(pre), save_as_external_data=large)
    except Exception as exc:
        said = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else ""
        reason = Note.kept(said) if said else note(NO_MESSAGE)  # ORT's words as sent; a bare AssertionError has none
        notes.append(note(NOT_PREPROCESSED, reason=reason))
        return source
    return pre


def _make_all(
    keys: list[str],
    source: Path,
    pre: Path | None,
    out: Path,
    calibration: list[dict[str, Any]],
    large: bool,
    progress: Callable[[float, str], None],
    keep: list[str],
) -> list[Variant]:
    """The fp32 original and every variant asked for (made from ``source``, the original as staged for ORT's
    tools); one that cannot be made says why, the others are made."""
    original = source.resolve()
    results = [
        Variant(
            key="fp32",
            label=variant_label("fp32"),
            path=str(original),
            size_bytes=file_size(original),
            weight_bytes=weight_bytes(original),
        )
    ]
    for n, key in enumerate(keys):
        variant = Variant(key=key, label=variant_label(key))
        progress(0.05 + 0.35 * n / len(keys), _("Making {variant}").format(variant=variant.label))
        started = time.perf_counter()
        try:
            target = make_variant(key, source, pre, out, calibration, large, variant.kept_float32, keep)
            variant.path, variant.size_bytes, variant.weight_bytes = (
                str(target),
                file_size(target),
                weight_bytes(target),
            )
        except QuantizeError as exc:
            variant.error = str(exc)
        except Exception as exc:  # ORT's quantizer raises plain errors on graphs it cannot handle
            variant.error = f"ONNX Runtime could not make this variant: {str(exc)[:600]}"
        variant.seconds = time.perf_counter() - started
        results.append(variant)
    return results


def _latency(
    made: list[Variant],
    specs: list[BenchInput],
    threads: int,
    seed: int,
    timing: tuple[int, int, float],
    notes: list[Note | str],
    progress: Callable[[float, str], None],
) -> tuple[dict[str, Any], float, float]:
    """Every variant timed beside the fp32 model with the benchmark harness; returns the sessions (kept for the
    accuracy check) and the wall-clock span of the measurement."""
    iterations, warmup, budget = timing
    configs: list[Config] = []
    sessions: dict[str, Any] = {}
    for variant in made:
        try:
            session, load_ms = timed_session(variant.path, "all", "CPUExecutionProvider", threads)
        except Exception as exc:
            if variant is made[0]:  # the original itself: nothing to compare with (its refusal says why)
                raise
            variant.error = _(UNLOADABLE).format(reason=str(exc)[:600])
            continue
        sessions[variant.key] = session
        feed = typed(session, make_inputs(specs, 1, seed))

        def run(session: Any = session, feed: dict[str, Any] = feed) -> list[Any]:
            return list(session.run(None, feed))

        configs.append(
            Config(
                label=variant.label,
                engine="ort",
                level="ALL",
                provider="CPUExecutionProvider",
                threads=threads,
                batch=1,
                run=run,
                load_ms=load_ms,
            )
        )
        variant.ops = _ops(variant.path)
    started = time.time()
    cut_short: list[Note] = []
    deadline = time.perf_counter() + budget  # the warm-up within it (a model of a second a call: 40 s of it)
    measure(configs, iterations, warmup, budget, cut_short, progress, span=(0.45, 0.8), deadline=deadline)
    notes += cut_short
    finished = time.time()
    by_label = {c.label: c for c in configs}
    base = by_label.get(made[0].label) if made else None
    for variant in (v for v in made if v.label in by_label):
        config = by_label[variant.label]
        variant.latency = result_of(config)
        if base is not None:
            ratio, low, high = speedup_interval([s / 1e6 for s in base.samples], [s / 1e6 for s in config.samples])
            variant.speedup, variant.speedup_low, variant.speedup_high = ratio, low, high
    return sessions, started, finished


def _where_it_runs(made: list[Variant], out: Path, progress: Callable[[float, str], None]) -> None:
    for k, variant in enumerate(made):
        progress(0.88 + 0.1 * k / len(made), _("Where {variant} runs").format(variant=variant.label))
        variant.runtime_ops = _runtime_ops(variant.path, out)
        variant.integer_ops = {op: n for op, n in variant.runtime_ops.items() if op in INTEGER_OPS}
        variant.providers = nodes_per_provider(variant.path, ["CPUExecutionProvider"])


def _cpu_note(cpu_flags: list[str]) -> Note:
    vnni = [f for f in cpu_flags if "vnni" in f or f.startswith("amx")]
    if vnni:
        return note(VNNI, flags=", ".join(vnni))
    return note(NO_VNNI)


SHARE = 0.25  # of the budget, what the calibration calls may take, and the held-out checks (latency: the rest)
FEWEST_HELD_OUT, FEWEST_CALIBRATION = 4, 8  # the fewest held-out inputs and generated calibration samples


def _fitted(request: QuantizeRequest, threads: int, notes: list[Note | str]) -> tuple[int, int]:
    """How many generated calibration samples and held-out inputs fit in the budget, from one call of the float32
    model: as many as asked, or as a share of the budget allows (FEWEST_… at least), a note saying so."""
    session, _load = timed_session(request.model.path, "all", "CPUExecutionProvider", threads)
    feed = typed(session, make_inputs(request.model.inputs, 1, request.seed))
    try:
        session.run(None, feed)  # the first call pays for allocations
        start = time.perf_counter()
        session.run(None, feed)
    except Exception as exc:
        said = _("The float32 model failed on the generated inputs: {error}")
        raise QuantizeError(said.format(error=ort_message(exc)[:600])) from exc
    call_s = max(time.perf_counter() - start, 1e-6)
    models = 1 + len(request.variants)
    held = min(request.held_out, max(FEWEST_HELD_OUT, int(SHARE * request.time_budget_s / (models * call_s))))
    statics = sum(VARIANTS[v].mode == "static" for v in request.variants)
    count = request.calibration_count
    if statics and not request.calibration_file:
        count = min(count, max(FEWEST_CALIBRATION, int(SHARE * request.time_budget_s / (statics * call_s))))
    call = significant(call_s * 1000)
    if held < request.held_out:
        budget = f"{request.time_budget_s:g}"
        notes.append(note(FEWER_HELD_OUT, count=held, asked=request.held_out, ms=call, models=models, budget=budget))
    if count < request.calibration_count:
        budget = f"{request.time_budget_s:g}"
        notes.append(note(FEWER_CALIBRATION, count=count, asked=request.calibration_count, ms=call, budget=budget))
    return count, held


def _silent(fraction: float, message: str) -> None:
    """Progress goes nowhere when nobody watches."""


def quantize_model(request: QuantizeRequest, progress: Callable[[float, str], None] | None = None) -> QuantizeReport:
    """Make every variant, measure and judge each against the float32 model (see QuantizeRequest), and recommend
    one that passed, if any."""
    report_progress = progress or _silent
    path, out_dir, inputs, variants = request.model.path, request.out_dir, request.model.inputs, request.variants
    calibration_count, calibration_file, held_out = (
        request.calibration_count,
        request.calibration_file,
        request.held_out,
    )
    iterations, warmup, threads, time_budget_s = (
        request.iterations,
        request.warmup,
        request.threads,
        request.time_budget_s,
    )
    seed = request.seed
    tolerance = Tolerance(min_cosine=request.min_cosine)
    _check_request(variants, calibration_count, held_out)
    source, out = Path(path), Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    large = _open_model(source, inputs)
    notes: list[Note | str] = []
    static = any(VARIANTS[v].mode == "static" for v in variants)
    threads = threads or default_threads()
    report_progress(0.02, _("Timing one call of the model"))
    calibration_count, held_out = _fitted(request, threads, notes)
    data = split_data(inputs, calibration_file, calibration_count, held_out, seed, notes, static)
    staged = stage_source(source, out, notes)
    pre = None
    if static:
        report_progress(0.03, _("Pre-processing for static quantization (shape inference, optimization)"))
        pre = _preprocessed(staged, out, large, notes)
    results = _make_all(variants, staged, pre, out, data.calibration, large, report_progress, request.keep_float32)
    made = [v for v in results if not v.error]
    if any(v.key.endswith("-entropy") for v in made):
        notes.append(note(ENTROPY, share="0.001 %"))
    report_progress(0.42, _("Creating sessions"))
    timing = (iterations, warmup, (1 - 2 * SHARE) * time_budget_s)
    sessions, started, finished = _latency(made, inputs, threads, seed, timing, notes, report_progress)
    made = [v for v in results if not v.error]
    report_progress(0.82, _("Comparing outputs on {count} held-out inputs").format(count=number(len(data.held_out))))
    reference = [outputs(sessions["fp32"], feed) for feed in data.held_out]
    for variant in made[1:]:
        variant.accuracy = accuracy(reference, [outputs(sessions[variant.key], feed) for feed in data.held_out])
    _where_it_runs(made, out, report_progress)
    unstage_source(out)
    cpu_flags = environment().cpu_flags
    if any(VARIANTS[v.key].mode != "fp16" for v in made[1:]):
        notes.append(_cpu_note(cpu_flags))
    report = QuantizeReport(
        model=source.name,
        variants=results,
        calibration=data.calibration_text,
        held_out=data.held_out_text,
        threads=threads,
        notes=notes,
        cpu_flags=cpu_flags,
        started=started,
        finished=finished,
        tolerance=tolerance.describe(),
    )
    _conclude(report, tolerance)
    return report


def _conclude(report: QuantizeReport, tolerance: Tolerance) -> None:
    """Each variant judged against the tolerance, a larger one explained, and the one recommendation."""
    judge(report.variants, tolerance)
    original = report.variants[0]
    for variant in report.variants[1:]:
        if not variant.error:
            variant.size_note = size_note(original, variant, sum(original.ops.values()))
    report.recommended, report.headline = recommend(report)
