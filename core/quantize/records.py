"""What Quantize gives: each variant beside the float32 original, measured the same way."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from core.access import ReadPath, WritePath
from core.i18n import N_, _
from core.model.measured import MeasuredModel
from core.notes import Note
from core.runtime.harness import BenchResult

__all__ = [
    "INTEGER_OPS",
    "NO_FLOAT32",
    "UNLOADABLE",
    "VARIANTS",
    "Accuracy",
    "QuantizeReport",
    "QuantizeRequest",
    "Variant",
    "VariantKind",
    "variant_label",
]


class VariantKind(NamedTuple):
    """A variant Quantize can make."""

    label: str
    mode: str  # dynamic, static or fp16
    options: dict[str, Any]  # what ORT's tool is called with


_STATIC = N_("Static INT8, {format}, {method}")  # the format and calibration method stay ORT's names

# key -> the variant; the keys are what the page and the command line offer; the labels are English (a model's name
# in the library is made from one), translated where shown with variant_label()
VARIANTS: dict[str, VariantKind] = {
    "dynamic-qint8": VariantKind(N_("Dynamic INT8 (QInt8 weights)"), "dynamic", {"weight_type": "qint8"}),
    "dynamic-quint8": VariantKind(N_("Dynamic INT8 (QUInt8 weights)"), "dynamic", {"weight_type": "quint8"}),
    **{
        f"static-{fmt}-{method}": VariantKind(
            _STATIC.format(format=fmt_label, method=method_label),
            "static",
            {"format": fmt, "method": method, "format_label": fmt_label, "method_label": method_label},
        )
        for fmt, fmt_label in (("qdq", "QDQ"), ("qoperator", "QOperator"))
        for method, method_label in (("minmax", "MinMax"), ("entropy", "Entropy"), ("percentile", "Percentile"))
    },
    "fp16": VariantKind(N_("FP16 (float32 inputs and outputs kept)"), "fp16", {"keep_io_types": True}),
    "fp16-all": VariantKind(N_("FP16 (inputs and outputs in float16 too)"), "fp16", {"keep_io_types": False}),
}
_ORIGINAL = N_("FP32 (original)")
# refusals a variant of either kind of model meets (core.quantize.variants, core.quantize.lm_variants)
NO_FLOAT32 = N_("The model has no float32 weights to convert; it may already be in float16.")
UNLOADABLE = N_("ONNX Runtime cannot load this variant: {reason}")


def variant_label(key: str) -> str:
    """The label of variant ``key`` (or "fp32", the original) in the current language."""
    if key == "fp32":
        return _(_ORIGINAL)
    kind = VARIANTS[key]
    if kind.mode == "static":
        return _(_STATIC).format(format=kind.options["format_label"], method=kind.options["method_label"])
    return _(kind.label)


INTEGER_OPS = {
    "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "ConvInteger", "MatMulInteger", "QLinearConv",
    "QLinearMatMul", "QLinearAdd", "QLinearMul", "QLinearAveragePool", "QLinearGlobalAveragePool", "QLinearConcat",
    "QLinearLeakyRelu", "QLinearSigmoid", "QGemm", "MatMulIntegerToFloat", "DynamicQuantizeMatMul", "QAttention",
    "QLinearSoftmax", "QLinearReduceMean", "QLinearWhere",
}  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class QuantizeRequest:
    """Make each of ``variants`` (keys of VARIANTS) into ``out_dir``, then measure size, latency, accuracy and
    integer ops against the float32 model and judge each against the accuracy tolerance (``min_cosine``).
    Calibration data: ``calibration_file`` (an .npz), else ``calibration_count`` inputs made from the plan."""

    model: MeasuredModel
    out_dir: WritePath
    variants: list[str]
    calibration_count: int = 32
    calibration_file: ReadPath = ""
    held_out: int = 32
    iterations: int = 100
    warmup: int = 10
    threads: int = 0  # 0: every core but one
    time_budget_s: float = 60.0
    seed: int = 0
    min_cosine: float = 0.99
    keep_float32: list[str] = field(default_factory=list)  # nodes left out: not quantized, or kept in float32 (FP16)


@dataclass(kw_only=True)
class Accuracy:
    samples: int
    max_abs_error: float
    mean_abs_error: float
    cosine_similarity: float
    top1_agreement: float | None = None  # for classifier-shaped outputs ([batch, classes])
    reference_mean_abs: float = 0.0  # the float32 outputs' mean absolute value: what the errors compare with

    @property
    def relative_error(self) -> float:
        """Mean absolute error against the float32 outputs' mean absolute value."""
        return self.mean_abs_error / self.reference_mean_abs if self.reference_mean_abs > 0 else 0.0


@dataclass(kw_only=True)
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
    accuracy_ok: bool | None = None  # within the report's tolerance on held-out inputs (None: not measured)
    accuracy_note: Note | str = ""  # why not (a note; str: an earlier version's sentence, "" when within)
    # FP16: the nodes kept in float32 and why, notes ("Div 'shrink' (as asked)"; str: an earlier version's)
    kept_float32: list[Note | str] = field(default_factory=list)
    size_note: Note | str = ""  # why it is larger than the original, when it is (as accuracy_note)


@dataclass(kw_only=True)
class QuantizeReport:
    model: str
    variants: list[Variant]
    # where the calibration data came from ("" when no variant was calibrated: no static one), and the inputs accuracy
    # is measured on: notes said where shown (str: an earlier version's sentence)
    calibration: Note | str
    held_out: Note | str
    threads: int
    notes: list[Note | str]
    cpu_flags: list[str]
    started: float = 0.0
    finished: float = 0.0
    tolerance: Note | str = ""  # what a variant must keep of the float32 outputs
    recommended: str | None = None  # a variant's key; only ever one within the tolerance
    headline: Note | str = ""
