"""Which variants are good enough: each one checked against a stated accuracy tolerance on held-out inputs, and
the one recommendation the page and the command line give (only ever a variant that passed)."""

from __future__ import annotations

from dataclasses import dataclass

from core.i18n import N_
from core.notes import Note, clauses, note
from core.quantize.records import Accuracy, QuantizeReport, Variant

__all__ = ["Tolerance", "failed_note", "judge", "recommend", "size_note"]


# what Quantize says of a variant, said where shown (core.notes)
RULE = N_(
    "cosine similarity ≥ {cosine} with the float32 outputs, mean error ≤ {error} of their mean magnitude, and for "
    "classifier-shaped outputs the same top class on ≥ {top1} of inputs"
)
LOW_COSINE = N_("cosine {value} < {least}")
HIGH_ERROR = N_("mean error {value} of the outputs' magnitude > {most}")
LOW_TOP1 = N_("top-1 agreement {value} < {least}")
_FAILED = "{failures}"  # the failures as clauses of one sentence ("; ", "；" in Chinese)
WEIGHTS_GREW = N_("its weights take {bytes} bytes against {original}")
WEIGHTS_SHRANK = N_("its weights shrank ({bytes} bytes against {original})")
LARGER = N_(
    "Larger than the original: {weights}, and the graph has {nodes} nodes against {original}. Each quantized tensor "
    "brings its scale and zero point and a QuantizeLinear/DequantizeLinear pair or a Cast; on a model whose weights "
    "are small (or mostly integer), that costs more than 8-bit weights save."
)
NONE_MADE = N_("No variant could be made and measured; the float32 model stays the one to use.")
NONE_WITHIN = N_(
    "No variant stayed within the accuracy tolerance: keep the float32 model (static INT8 with real calibration data "
    "may do better)."
)
FASTER = N_(
    "Recommended: {variant}, {speedup}× the float32 speed (95 % CI {low}–{high}) at {smaller}× smaller, within the "
    "accuracy tolerance."
)
SIZE_ONLY = N_(
    "Recommended for size only: {variant}, {smaller}× smaller within the accuracy tolerance, but {slower}× slower "
    "than float32 on this machine (95 % CI {low}–{high}×); keep float32 where speed matters more than size."
)
SIZE = N_(
    "Recommended for size: {variant}, {smaller}× smaller within the accuracy tolerance; no variant within it is surely "
    "faster on this machine."
)
KEEP_FP32 = N_("No variant within the accuracy tolerance is faster or smaller here; keep the float32 model.")


@dataclass
class Tolerance:
    """What a variant must keep of the float32 model's outputs on held-out inputs."""

    min_cosine: float = 0.99  # of the outputs, flattened, against float32's
    min_top1: float = 0.95  # for classifier-shaped outputs: the same top class
    max_relative_error: float = 0.1  # mean absolute error against the outputs' mean absolute value

    def describe(self) -> Note:
        """The rule, as a note."""
        return note(
            RULE, cosine=f"{self.min_cosine:g}", error=f"{self.max_relative_error:.0%}", top1=f"{self.min_top1:.0%}"
        )

    def failures(self, accuracy: Accuracy) -> list[Note]:
        """Why ``accuracy`` is out of tolerance (empty when it is within)."""
        failed = []
        if not accuracy.cosine_similarity >= self.min_cosine:  # NaN fails too
            failed.append(note(LOW_COSINE, value=f"{accuracy.cosine_similarity:.4f}", least=f"{self.min_cosine:g}"))
        if not accuracy.relative_error <= self.max_relative_error:
            failed.append(
                note(HIGH_ERROR, value=f"{accuracy.relative_error:.0%}", most=f"{self.max_relative_error:.0%}")
            )
        if accuracy.top1_agreement is not None and accuracy.top1_agreement < self.min_top1:
            failed.append(note(LOW_TOP1, value=f"{accuracy.top1_agreement:.0%}", least=f"{self.min_top1:.0%}"))
        return failed


def judge(variants: list[Variant], tolerance: Tolerance) -> None:
    """Mark every measured variant as within tolerance or not, with the reason."""
    for variant in variants[1:]:
        if variant.accuracy is None:
            continue
        failed = tolerance.failures(variant.accuracy)
        variant.accuracy_ok = not failed
        variant.accuracy_note = failed_note(failed)


def failed_note(failed: list[Note]) -> Note | str:
    """Why a variant is out of tolerance, its failures as clauses of one sentence; "" when it is within."""
    return note(_FAILED, failures=clauses(failed)) if failed else ""


def size_note(original: Variant, variant: Variant, original_nodes: int) -> Note | str:
    """Why a variant came out larger than the original, from what changed in it; "" when it did not."""
    if not variant.size_bytes or variant.size_bytes <= original.size_bytes:
        return ""
    nodes = sum(variant.ops.values())
    grew = WEIGHTS_GREW if variant.weight_bytes > original.weight_bytes else WEIGHTS_SHRANK
    weights = note(grew, bytes=variant.weight_bytes, original=original.weight_bytes)
    return note(LARGER, weights=weights, nodes=nodes, original=original_nodes)


def recommend(report: QuantizeReport) -> tuple[str | None, Note]:
    """(the recommended variant's key or None, the headline that says why)."""
    fp32 = report.variants[0]
    measured = [v for v in report.variants[1:] if not v.error and v.latency is not None]
    if not measured:
        return None, note(NONE_MADE)
    passing = [v for v in measured if v.accuracy_ok]
    if not passing:
        return None, note(NONE_WITHIN)
    faster = [v for v in passing if v.speedup_low is not None and v.speedup_low > 1.0]
    if faster:
        best = max(faster, key=lambda v: v.speedup or 0.0)
        smaller = fp32.size_bytes / max(best.size_bytes, 1)
        return best.key, note(
            FASTER,
            variant=best.label,
            speedup=f"{best.speedup:.2f}",
            low=f"{best.speedup_low:.2f}",
            high=f"{best.speedup_high:.2f}",
            smaller=f"{smaller:.1f}",
        )
    # the smallest, or the fastest of those within 5 % of its size (two INT8 variants are about as small; a
    # dynamic one that quantizes every activation on each call can be several times slower than a static one)
    smallest = min(v.size_bytes for v in passing)
    small = max((v for v in passing if v.size_bytes <= smallest * 1.05), key=lambda v: v.speedup or 0.0)
    if small.size_bytes < fp32.size_bytes:
        times = f"{fp32.size_bytes / max(small.size_bytes, 1):.1f}"
        if small.speedup is not None and small.speedup_high is not None and small.speedup_high < 1.0:
            return small.key, note(
                SIZE_ONLY,
                variant=small.label,
                smaller=times,
                slower=f"{1 / small.speedup:.1f}",
                low=f"{1 / small.speedup_high:.1f}",
                high=f"{1 / (small.speedup_low or small.speedup):.1f}",
            )
        return small.key, note(SIZE, variant=small.label, smaller=times)
    return None, note(KEEP_FP32)
