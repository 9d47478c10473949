"""INT8 and FP16 variants of an ONNX model, compared with the fp32 original: size, latency, accuracy, and
where the integer ops ran. Runs in the worker, under the machine-wide lock (it benchmarks).

Variants are made with ONNX Runtime's own tools: ``quantize_dynamic`` (weights to int8, activations
quantized on the fly), ``quantize_static`` (weights and activations, scales from calibration data, in QDQ or
QOperator format) after ORT's pre-processing (``quant_pre_process``: shape inference and optimization), and
``convert_float_to_float16``. Latency uses the benchmark harness (core.bench); accuracy compares each
variant's outputs with the fp32 model's on held-out inputs.
"""

from __future__ import annotations

import math
import os
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.bench import BenchInput, BenchResult, Config, make_inputs, measure, result_of, timed_session
from core.errors import QuantizeError
from core.stats import speedup_interval

__all__ = [
    "INTEGER_OPS",
    "VARIANTS",
    "Accuracy",
    "QuantizeReport",
    "Variant",
    "check_calibration",
    "quantize_model",
]

# key -> (label, mode, options); the keys are what the page and the command line offer
VARIANTS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "dynamic-qint8": ("Dynamic INT8 (QInt8 weights)", "dynamic", {"weight_type": "qint8"}),
    "dynamic-quint8": ("Dynamic INT8 (QUInt8 weights)", "dynamic", {"weight_type": "quint8"}),
    **{
        f"static-{fmt}-{method}": (
            f"Static INT8, {fmt_label}, {method_label}",
            "static",
            {"format": fmt, "method": method},
        )
        for fmt, fmt_label in (("qdq", "QDQ"), ("qoperator", "QOperator"))
        for method, method_label in (("minmax", "MinMax"), ("entropy", "Entropy"), ("percentile", "Percentile"))
    },
    "fp16": ("FP16 (float32 inputs and outputs kept)", "fp16", {"keep_io_types": True}),
    "fp16-all": ("FP16 (inputs and outputs in float16 too)", "fp16", {"keep_io_types": False}),
}

INTEGER_OPS = {
    "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "ConvInteger", "MatMulInteger", "QLinearConv",
    "QLinearMatMul", "QLinearAdd", "QLinearMul", "QLinearAveragePool", "QLinearGlobalAveragePool", "QLinearConcat",
    "QLinearLeakyRelu", "QLinearSigmoid", "QGemm", "MatMulIntegerToFloat", "DynamicQuantizeMatMul", "QAttention",
    "QLinearSoftmax", "QLinearReduceMean", "QLinearWhere",
}  # fmt: skip
_FLOAT_TYPES = {1, 10, 11, 16}  # FLOAT, FLOAT16, DOUBLE, BFLOAT16 (TensorProto data types)


@dataclass
class Accuracy:
    samples: int
    max_abs_error: float
    mean_abs_error: float
    cosine_similarity: float
    top1_agreement: float | None = None  # for classifier-shaped outputs ([batch, classes])


@dataclass
class Variant:
    key: str  # "fp32" for the original
    label: str
    path: str = ""
    size_bytes: int = 0  # the file(s) on disk
    weight_bytes: int = 0  # bytes of the weights alone (initializers and Constant values)
    seconds: float = 0.0  # time to make it
    latency: BenchResult | None = None
    speedup: float | None = None  # fp32 median / this median
    speedup_low: float | None = None
    speedup_high: float | None = None
    accuracy: Accuracy | None = None
    ops: dict[str, int] = field(default_factory=dict)  # op counts of the saved variant
    runtime_ops: dict[str, int] = field(default_factory=dict)  # what ORT runs after its optimizer (level ALL)
    integer_ops: dict[str, int] = field(default_factory=dict)  # integer and quantization ops ORT runs
    providers: dict[str, int] = field(default_factory=dict)  # provider -> nodes, from the partition core
    error: str = ""  # why this variant could not be made; the others still are


@dataclass
class QuantizeReport:
    model: str
    variants: list[Variant]
    calibration: str  # where the calibration data came from
    held_out: str  # the inputs accuracy is measured on
    threads: int
    notes: list[str]
    cpu_flags: list[str]
    started: float = 0.0
    finished: float = 0.0


# -- inputs ---------------------------------------------------------------------------------------------------
def _samples_from_npz(path: str, specs: list[BenchInput]) -> list[dict[str, Any]]:
    """Split an .npz of calibration data into model inputs, after checking names, dtypes and shapes.

    Each array is named after an input and holds N samples along its first axis: the model's batch axis
    (one sample per call) or, for a fixed batch b, N/b calls of b samples.
    """
    import numpy as np

    try:
        with np.load(path, allow_pickle=False) as archive:  # pickled (object) arrays are refused, never loaded
            arrays = {name: archive[name] for name in archive.files}
    except Exception as exc:
        raise QuantizeError(f"The calibration file is not a readable .npz archive of arrays: {exc}") from exc
    names = [s.name for s in specs]
    problems = []
    missing = [n for n in names if n not in arrays]
    extra = [n for n in arrays if n not in names]
    if missing:
        problems.append(f"no array for input(s) {', '.join(missing)}")
    if extra:
        problems.append(f"array(s) {', '.join(extra)} match no input (the inputs are: {', '.join(names)})")
    counts = set()
    for spec in specs:
        array = arrays.get(spec.name)
        if array is None:
            continue
        if array.dtype != np.dtype(spec.dtype):
            problems.append(
                f"'{spec.name}' is {array.dtype}, the model takes {spec.dtype} (convert with .astype(np.{spec.dtype}))"
            )
        per_call = 1 if spec.batch_axis is not None else spec.shape[0] if spec.shape else 1
        expected = spec.shape[1:] if spec.shape else []
        if array.ndim != len(spec.shape) or list(array.shape[1:]) != expected:
            problems.append(
                f"'{spec.name}' has shape {list(array.shape)}; expected [N, {', '.join(map(str, expected))}] "
                "(N samples along the first axis)"
            )
        elif array.shape[0] % per_call:
            problems.append(f"'{spec.name}' holds {array.shape[0]} samples, not a multiple of the batch {per_call}")
        else:
            counts.add(array.shape[0] // per_call)
    if len(counts) > 1:
        problems.append(f"the arrays hold different numbers of samples ({sorted(counts)})")
    if problems:
        raise QuantizeError("The calibration data does not fit the model: " + "; ".join(problems) + ".")
    calls = counts.pop() if counts else 0
    if calls == 0:
        raise QuantizeError("The calibration file holds no samples.")
    samples = []
    for i in range(calls):
        feed = {}
        for spec in specs:
            per_call = 1 if spec.batch_axis is not None else spec.shape[0]
            feed[spec.name] = arrays[spec.name][i * per_call : (i + 1) * per_call]
        samples.append(feed)
    return samples


def check_calibration(path: str, inputs: list[dict[str, Any]]) -> int:
    """The number of calibration calls in an .npz file, or a QuantizeError saying why it does not fit."""
    from core.records import from_jsonable

    return len(_samples_from_npz(path, [from_jsonable(BenchInput, i) for i in inputs]))


def _generated(specs: list[BenchInput], count: int, seed: int) -> list[dict[str, Any]]:
    return [make_inputs(specs, 1, seed + i) for i in range(count)]


class _Reader:
    """ORT's CalibrationDataReader protocol over a list of feeds."""

    def __init__(self, samples: list[dict[str, Any]]) -> None:
        self._samples = samples
        self._iter: Iterator[dict[str, Any]] = iter(samples)

    def get_next(self) -> dict[str, Any] | None:
        return next(self._iter, None)

    def rewind(self) -> None:
        self._iter = iter(self._samples)


# -- checks ---------------------------------------------------------------------------------------------------
def _refuse_unquantizable(model: Any) -> None:
    from core.intake import iter_tensors, tensor_elements

    quantized = sorted({n.op_type for n in model.graph.node if n.op_type in INTEGER_OPS})
    if quantized:
        raise QuantizeError(
            f"The model is already quantized: it has {', '.join(quantized)} nodes. Quantize the float model instead."
        )
    float_weights = [t for _, t in iter_tensors(model) if t.data_type in _FLOAT_TYPES and tensor_elements(t) > 1]
    if not float_weights:
        raise QuantizeError("The model has no float weights, so there is nothing to quantize or convert.")


def _size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.parent.glob(path.name + "*") if f.is_file())


def _weight_bytes(path: Path) -> int:
    import onnx

    from core.intake import iter_tensors, tensor_nbytes

    return sum(tensor_nbytes(t) for _, t in iter_tensors(onnx.load_model(str(path), load_external_data=False)))


# -- making the variants ----------------------------------------------------------------------------------------
def _make(
    key: str, source: Path, pre: Path | None, out: Path, calibration: list[dict[str, Any]], large: bool
) -> tuple[Path, list[str]]:
    import onnx
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_dynamic, quantize_static

    label, mode, options = VARIANTS[key]
    target = out / f"{source.stem}.{key}.onnx"
    notes: list[str] = []
    if mode == "dynamic":
        weight = QuantType.QInt8 if options["weight_type"] == "qint8" else QuantType.QUInt8
        quantize_dynamic(str(source), str(target), weight_type=weight, use_external_data_format=large)
    elif mode == "static":
        assert pre is not None
        method = {"minmax": CalibrationMethod.MinMax, "entropy": CalibrationMethod.Entropy,
                  "percentile": CalibrationMethod.Percentile}[options["method"]]  # fmt: skip
        fmt = QuantFormat.QDQ if options["format"] == "qdq" else QuantFormat.QOperator
        quantize_static(
            str(pre), str(target), _Reader(calibration), quant_format=fmt, calibrate_method=method,
            activation_type=QuantType.QUInt8 if fmt == QuantFormat.QOperator else QuantType.QInt8,
            weight_type=QuantType.QInt8, use_external_data_format=large,
        )  # fmt: skip
    else:
        from onnxruntime.transformers.float16 import convert_float_to_float16

        model = onnx.load_model(str(source))
        if not any(t.data_type == 1 for t in model.graph.initializer) and not any(
            n.op_type == "Constant" for n in model.graph.node
        ):
            raise QuantizeError("The model has no float32 weights to convert; it may already be in float16.")
        from onnxruntime.transformers.onnx_model import OnnxModel

        converted = OnnxModel(convert_float_to_float16(model, keep_io_types=options["keep_io_types"]))
        converted.topological_sort()  # the converter appends its input Casts at the end; the checker wants order
        onnx.save_model(converted.model, str(target), save_as_external_data=large)
    changed = _changed_ops(source, target)
    if mode != "fp16" and not changed:
        raise QuantizeError(
            f"{label}: no node was quantized. ONNX Runtime quantizes Conv, MatMul, Gemm, Attention and a few "
            "others; this model has none it could take."
        )
    return target, notes


def _changed_ops(before: Path, after: Path) -> dict[str, int]:
    import onnx

    old = Counter(n.op_type for n in onnx.load_model(str(before), load_external_data=False).graph.node)
    new = Counter(n.op_type for n in onnx.load_model(str(after), load_external_data=False).graph.node)
    return {op: n for op, n in new.items() if op in INTEGER_OPS and n > old.get(op, 0)}


# -- measuring --------------------------------------------------------------------------------------------------
def _flat(outputs: list[Any]) -> Any:
    import numpy as np

    return np.concatenate([np.asarray(o, dtype=np.float64).ravel() for o in outputs]) if outputs else np.zeros(0)


def _accuracy(reference: list[list[Any]], produced: list[list[Any]]) -> Accuracy:
    import numpy as np

    errors, dots, top1 = [], [], []
    for ref, got in zip(reference, produced, strict=True):
        a, b = _flat(ref), _flat(got)
        if a.shape != b.shape:
            raise QuantizeError("The variant's outputs have other shapes than the original's.")
        errors.append(np.abs(a - b))
        norm = float(np.linalg.norm(a) * np.linalg.norm(b))
        dots.append(float(a @ b) / norm if norm > 0 else float(np.array_equal(a, b)))
        first_ref, first_got = np.asarray(ref[0]), np.asarray(got[0])
        if first_ref.ndim == 2 and first_ref.shape[1] > 1:  # classifier-shaped: [batch, classes]
            top1.extend((first_ref.argmax(axis=1) == first_got.argmax(axis=1)).tolist())
    error = np.concatenate(errors) if errors else np.zeros(0)
    finite = error[np.isfinite(error)]
    return Accuracy(
        samples=len(reference),
        max_abs_error=float(error.max()) if error.size else 0.0,
        mean_abs_error=float(finite.mean()) if finite.size else math.nan,
        cosine_similarity=float(np.mean(dots)) if dots else math.nan,
        top1_agreement=float(np.mean(top1)) if top1 else None,
    )


def _ops(path: str) -> dict[str, int]:
    import onnx

    model = onnx.load_model(path, load_external_data=False)
    return dict(Counter(n.op_type for n in model.graph.node).most_common())


def _runtime_ops(path: str, out: Path) -> dict[str, int]:
    """Op counts of the graph ORT runs (level ALL), e.g. QDQ pairs fused into QLinearConv."""
    import onnxruntime as ort

    from core.partition import session_options

    options = session_options("all")
    options.log_severity_level = 3  # not the warning that a saved LAYOUT graph is machine-specific: known
    options.optimized_model_filepath = str(out / (Path(path).stem + ".runtime.onnx"))
    ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    return _ops(options.optimized_model_filepath)


def quantize_model(
    path: str,
    out_dir: str,
    inputs: list[dict[str, Any]],
    variants: list[str],
    calibration_count: int = 32,
    calibration_file: str = "",
    held_out: int = 32,
    iterations: int = 100,
    warmup: int = 10,
    threads: int = 0,
    time_budget_s: float = 60.0,
    seed: int = 0,
    progress: Callable[[float, str], None] | None = None,
) -> QuantizeReport:
    """Make every variant, then measure size, latency, accuracy and integer ops against the fp32 model."""
    import onnx

    from core.bench import environment
    from core.partition import partition_model
    from core.records import from_jsonable

    report_progress = progress or (lambda fraction, message: None)
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown or not variants:
        raise QuantizeError(f"Unknown variant {', '.join(unknown) or '(none)'}; choose from {', '.join(VARIANTS)}.")
    if not 1 <= calibration_count <= 10_000 or not 1 <= held_out <= 10_000:
        raise QuantizeError("Calibration and held-out sample counts must be between 1 and 10,000.")
    specs = [from_jsonable(BenchInput, i) for i in inputs]
    source = Path(path)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model = onnx.load_model(str(source), load_external_data=False)
    _refuse_unquantizable(model)
    initializers = {t.name for t in model.graph.initializer}
    graph_inputs = [i.name for i in model.graph.input if i.name not in initializers]
    if sorted(graph_inputs) != sorted(s.name for s in specs):
        raise QuantizeError(
            f"The inputs given ({', '.join(s.name for s in specs)}) are not the model's ({', '.join(graph_inputs)})."
        )
    large = source.stat().st_size > 1 << 30 or any(
        t.data_location == onnx.TensorProto.EXTERNAL for t in model.graph.initializer
    )
    notes: list[str] = []

    # calibration data, and held-out inputs the calibration never saw
    if calibration_file:
        samples = _samples_from_npz(calibration_file, specs)
        if len(samples) >= 8:
            cut = max(1, len(samples) // 4)
            calibration, checks = samples[:-cut], samples[-cut:]
            calibration_text = f"{len(calibration)} samples from the uploaded .npz"
            held_text = f"the last {cut} samples of the uploaded .npz (kept out of calibration)"
        else:
            calibration, checks = samples, _generated(specs, held_out, seed + 100_000)
            calibration_text = f"{len(samples)} samples from the uploaded .npz"
            held_text = f"{held_out} generated inputs (seed {seed + 100_000}); the .npz is too small to split"
    else:
        calibration = _generated(specs, calibration_count, seed)
        checks = _generated(specs, held_out, seed + 100_000)
        calibration_text = f"{calibration_count} generated inputs (seed {seed})"
        held_text = f"{held_out} generated inputs (seed {seed + 100_000})"
        notes.append(
            "Calibration used generated inputs: static quantization's scales are only as good as the data they "
            "were measured on. Upload an .npz of real inputs for scales (and accuracy) you can trust."
        )

    pre: Path | None = None
    if any(VARIANTS[v][1] == "static" for v in variants):
        report_progress(0.03, "Pre-processing for static quantization (shape inference, optimization)")
        from onnxruntime.quantization.shape_inference import quant_pre_process

        pre = out / f"{source.stem}.preprocessed.onnx"
        try:
            quant_pre_process(str(source), str(pre), save_as_external_data=large)
        except Exception as exc:
            notes.append(f"ORT's pre-processing failed ({str(exc)[:300]}); static variants use the model as it is.")
            pre = source

    results = [Variant("fp32", "FP32 (original)", str(source), _size(source), _weight_bytes(source))]
    for n, key in enumerate(variants):
        label = VARIANTS[key][0]
        report_progress(0.05 + 0.35 * n / len(variants), f"Making {label}")
        started = time.perf_counter()
        variant = Variant(key, label)
        try:
            target, made_notes = _make(key, source, pre, out, calibration, large)
            notes.extend(made_notes)
            variant.path, variant.size_bytes, variant.weight_bytes = str(target), _size(target), _weight_bytes(target)
        except QuantizeError as exc:
            variant.error = str(exc)
        except Exception as exc:  # ORT's quantizer raises plain errors on graphs it cannot handle
            variant.error = f"ONNX Runtime could not make this variant: {str(exc)[:600]}"
        variant.seconds = time.perf_counter() - started
        results.append(variant)
    made = [v for v in results if not v.error]
    if any(v.key.endswith("-entropy") for v in made):
        notes.append(
            "ONNX Runtime's quantize_static builds the Entropy histogram with 128 bins for 128 levels, which leaves "
            "nothing to clip, so Entropy usually gives the same ranges as MinMax. Percentile clips the rarest "
            "0.001 % of values."
        )

    # latency: the benchmark harness, every variant interleaved with the fp32 model
    threads = threads or (os.cpu_count() or 1)
    report_progress(0.42, "Creating sessions")
    configs: list[Config] = []
    sessions: dict[str, Any] = {}  # kept for the accuracy check below
    for variant in made:
        try:
            session, load_ms = timed_session(variant.path, "all", "CPUExecutionProvider", threads)
        except Exception as exc:
            variant.error = f"ONNX Runtime cannot load this variant: {str(exc)[:600]}"
            continue
        sessions[variant.key] = session
        feed = _typed(session, make_inputs(specs, 1, seed))

        def run(session: Any = session, feed: dict[str, Any] = feed) -> list[Any]:
            return list(session.run(None, feed))

        configs.append(Config(variant.label, "ort", "ALL", "CPUExecutionProvider", threads, 1, run, load_ms))
        variant.ops = _ops(variant.path)
    made = [v for v in results if not v.error]
    started_wall = time.time()
    measure(configs, iterations, warmup, time_budget_s, notes, report_progress, span=(0.45, 0.8))
    finished_wall = time.time()
    by_label = {c.label: c for c in configs}
    base = by_label.get(results[0].label)
    for variant in made:
        config = by_label[variant.label]
        variant.latency = result_of(config)
        if base is not None:
            ratio, low, high = speedup_interval([s / 1e6 for s in base.samples], [s / 1e6 for s in config.samples])
            variant.speedup, variant.speedup_low, variant.speedup_high = ratio, low, high

    # accuracy against fp32 on held-out inputs, then what ORT runs and where
    report_progress(0.82, f"Comparing outputs on {len(checks)} held-out inputs")
    reference = [_run(sessions["fp32"], feed) for feed in checks]
    for variant in made:
        if variant.key != "fp32":
            variant.accuracy = _accuracy(reference, [_run(sessions[variant.key], feed) for feed in checks])
    for k, variant in enumerate(made):
        report_progress(0.88 + 0.1 * k / len(made), f"Where {variant.label} runs")
        variant.runtime_ops = _runtime_ops(variant.path, out)
        variant.integer_ops = {op: n for op, n in variant.runtime_ops.items() if op in INTEGER_OPS}
        partition = partition_model(variant.path, ["CPUExecutionProvider"], with_layout=False)
        variant.providers = partition.reports[0].providers
    env = environment()
    if any(VARIANTS[v.key][1] != "fp16" for v in made if v.key != "fp32"):
        vnni = [f for f in env.cpu_flags if "vnni" in f or f.startswith("amx")]
        notes.append(
            "This CPU has " + (", ".join(vnni) if vnni else "no VNNI or AMX instructions")
            + ": " + ("int8 dot products run in one instruction." if vnni else
                      "int8 arithmetic is emulated with wider instructions, so int8 may be slower than float32.")
        )  # fmt: skip
    return QuantizeReport(
        model=source.name,
        variants=results,
        calibration=calibration_text,
        held_out=held_text,
        threads=threads,
        notes=notes,
        cpu_flags=env.cpu_flags,
        started=started_wall,
        finished=finished_wall,
    )


_ORT_TYPES = {
    "tensor(float)": "float32", "tensor(float16)": "float16", "tensor(double)": "float64", "tensor(int64)": "int64",
    "tensor(int32)": "int32", "tensor(int8)": "int8", "tensor(uint8)": "uint8", "tensor(bool)": "bool",
}  # fmt: skip


def _typed(session: Any, feed: dict[str, Any]) -> dict[str, Any]:
    """The feed cast to what this session's inputs take (an fp16 variant may take float16)."""
    return {
        i.name: feed[i.name].astype(_ORT_TYPES[i.type]) if i.type in _ORT_TYPES else feed[i.name]
        for i in session.get_inputs()
    }


def _run(session: Any, feed: dict[str, Any]) -> list[Any]:
    return list(session.run(None, _typed(session, feed)))
