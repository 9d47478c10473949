"""What ONNX Runtime's optimizer did at each level, in words a reader takes in: rewrites grouped by kind with
counts, each level showing only what it adds over the level before (every level is measured against the model as
exported, so the earlier levels' rewrites come again), long chains of ops counted rather than spelled out, and
the fused ops ORT introduces explained."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from core.partition.records import LevelResult, Rewrite

__all__ = ["FUSIONS", "KIND_TITLES", "LevelChanges", "fusions_used", "level_changes", "rewrite_text"]

# the ops ORT's transformers put in the graph, by name without domain, one line each
FUSIONS = {
    "QuickGelu": "x·sigmoid(α·x) in one kernel; with α = 1 it is SiLU/Swish (Sigmoid + Mul), common in YOLO and "
    "EfficientNet.",
    "Gelu": "the exact GELU activation (Div + Erf + Add + Mul + Mul) in one kernel.",
    "FastGelu": "GELU by its tanh approximation in one kernel.",
    "BiasGelu": "a bias Add followed by GELU, in one kernel.",
    "FusedConv": "a Conv with its activation (Relu, Clip, Sigmoid, …) applied as it writes its output.",
    "FusedGemm": "a Gemm with its activation applied as it writes its output.",
    "FusedMatMul": "a MatMul with a transpose of an input and/or a scale folded into it.",
    "SkipLayerNormalization": "a residual Add followed by LayerNormalization, in one kernel.",
    "LayerNormalization": "the mean/variance/scale subgraph of a layer norm, as the one op.",
    "SimplifiedLayerNormalization": "RMS normalization (no mean subtracted), as used by LLaMA-like models.",
    "EmbedLayerNormalization": "BERT's word + position + segment embeddings and their layer norm, in one kernel.",
    "Attention": "the Q/K/V projections, softmax(QKᵀ/√d)·V and the mask of self-attention, in one kernel.",
    "MultiHeadAttention": "multi-head attention from given Q, K, V, in one kernel.",
    "BiasSoftmax": "a bias Add followed by Softmax.",
    "BiasDropout": "a bias Add followed by Dropout (training graphs).",
    "NhwcConv": "a Conv computed in channels-last layout.",
    "QLinearConv": "a quantized Conv (DequantizeLinear → Conv → QuantizeLinear) on int8 data.",
    "QLinearMatMul": "a quantized MatMul on int8 data.",
    "MatMulIntegerToFloat": "an int8 MatMul whose result is scaled back to float.",
    "DynamicQuantizeMatMul": "a MatMul whose input is quantized on the fly.",
    "ReorderInput": "converts a tensor into the blocked layout (NCHWc) the layout level's kernels use.",
    "ReorderOutput": "converts a tensor back from the blocked layout (NCHWc).",
}
KIND_TITLES = {
    "fused": "fused into one kernel",
    "replaced": "replaced",
    "layout": "rewritten for a blocked memory layout (NCHWc)",
    "removed": "removed",
    "added": "added",
}
_CHAIN = 4  # a rewrite of more ops than this is counted by op type, not spelled out


@dataclass(frozen=True, kw_only=True)
class LevelChanges:
    """One level: its rewrites new over the level before, by kind (KIND_TITLES' order): (text, count) each."""

    key: str
    name: str
    node_count: int
    by_kind: dict[str, list[tuple[str, int]]]
    same_as_before: int  # rewrites the level before already made


def _counted(ops: Sequence[str]) -> str:
    counts = Counter(ops)
    return ", ".join(f"{op} ×{n}" if n > 1 else op for op, n in counts.most_common())


def rewrite_text(rewrite: Rewrite) -> str:
    """The rewrite as ``Rewrite.text`` says it, a long chain of ops counted by op type (48 ops: Conv ×16, …)."""
    if len(rewrite.before) <= _CHAIN and len(rewrite.after) <= _CHAIN:
        return rewrite.text
    before = f"{len(rewrite.before)} ops ({_counted(rewrite.before)})"
    after = f"{len(rewrite.after)} ops ({_counted(rewrite.after)})"
    if rewrite.kind == "removed":
        return f"{before} removed"
    if rewrite.kind == "added":
        return f"{after} added"
    return f"{before} → {after}"


def level_changes(levels: Sequence[LevelResult]) -> list[LevelChanges]:
    """Each level's rewrites less those the level before made (as a count: two fusions of the same kind at
    one level and three at the next show one new)."""
    result = []
    before: Counter[tuple[str, str]] = Counter()
    for level in levels:
        here = Counter((r.kind, rewrite_text(r)) for r in level.rewrites)
        new = here - before
        by_kind: dict[str, list[tuple[str, int]]] = {}
        for kind in [*KIND_TITLES, *sorted({k for k, _ in new} - set(KIND_TITLES))]:
            items = [(text, n) for (k, text), n in new.items() if k == kind]
            if items:
                by_kind[kind] = sorted(items, key=lambda item: -item[1])
        same = sum((here & before).values())
        result.append(
            LevelChanges(
                key=level.key, name=level.name, node_count=level.node_count, by_kind=by_kind, same_as_before=same
            )
        )
        before = here
    return result


def fusions_used(levels: Sequence[LevelResult]) -> dict[str, str]:
    """The ops of FUSIONS the levels put in the graph ("com.microsoft:QuickGelu" as "QuickGelu"), with their
    line, in order of first appearance."""
    found: dict[str, str] = {}
    for level in levels:
        for rewrite in level.rewrites:
            for op in rewrite.after:
                name = op.rsplit(":", 1)[-1]
                if name in FUSIONS:
                    found.setdefault(name, FUSIONS[name])
    return found
