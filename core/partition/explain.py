"""What ONNX Runtime's optimizer did at each level, in words a reader takes in: rewrites grouped by kind with
counts, each level showing only what it adds over the level before (every level is measured against the model as
exported, so the earlier levels' rewrites come again), long chains of ops counted rather than spelled out, and
the fused ops ORT introduces explained."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from core.i18n import N_, _
from core.partition.records import LevelResult, Rewrite

__all__ = ["FUSIONS", "KIND_TITLES", "LevelChanges", "fusions_used", "level_changes", "rewrite_text"]

# the ops ORT's transformers put in the graph, by name without domain, one line each
FUSIONS = {
    "QuickGelu": N_(
        "x·sigmoid(α·x) in one kernel; with α = 1 it is SiLU/Swish (Sigmoid + Mul), common in YOLO and EfficientNet."
    ),
    "Gelu": N_("the exact GELU activation (Div + Erf + Add + Mul + Mul) in one kernel."),
    "FastGelu": N_("GELU by its tanh approximation in one kernel."),
    "BiasGelu": N_("a bias Add followed by GELU, in one kernel."),
    "FusedConv": N_("a Conv with its activation (Relu, Clip, Sigmoid, …) applied as it writes its output."),
    "FusedGemm": N_("a Gemm with its activation applied as it writes its output."),
    "FusedMatMul": N_("a MatMul with a transpose of an input and/or a scale folded into it."),
    "SkipLayerNormalization": N_("a residual Add followed by LayerNormalization, in one kernel."),
    "LayerNormalization": N_("the mean/variance/scale subgraph of a layer norm, as the one op."),
    "SimplifiedLayerNormalization": N_("RMS normalization (no mean subtracted), as used by LLaMA-like models."),
    "EmbedLayerNormalization": N_("BERT's word + position + segment embeddings and their layer norm, in one kernel."),
    "Attention": N_("the Q/K/V projections, softmax(QKᵀ/√d)·V and the mask of self-attention, in one kernel."),
    "MultiHeadAttention": N_("multi-head attention from given Q, K, V, in one kernel."),
    "BiasSoftmax": N_("a bias Add followed by Softmax."),
    "BiasDropout": N_("a bias Add followed by Dropout (training graphs)."),
    "NhwcConv": N_("a Conv computed in channels-last layout."),
    "QLinearConv": N_("a quantized Conv (DequantizeLinear → Conv → QuantizeLinear) on int8 data."),
    "QLinearMatMul": N_("a quantized MatMul on int8 data."),
    "MatMulIntegerToFloat": N_("an int8 MatMul whose result is scaled back to float."),
    "DynamicQuantizeMatMul": N_("a MatMul whose input is quantized on the fly."),
    "ReorderInput": N_("converts a tensor into the blocked layout (NCHWc) the layout level's kernels use."),
    "ReorderOutput": N_("converts a tensor back from the blocked layout (NCHWc)."),
}
KIND_TITLES = {
    "fused": N_("fused into one kernel"),
    "replaced": N_("replaced"),
    "layout": N_("rewritten for a blocked memory layout (NCHWc)"),
    "removed": N_("removed"),
    "added": N_("added"),
}
_CHAIN = 4  # a rewrite of more ops than this is counted by op type, not spelled out


@dataclass(frozen=True, kw_only=True)
class LevelChanges:
    """One level: its rewrites new over the level before, by kind (KIND_TITLES' order): (text, count) each."""

    key: str
    name: str
    node_count: int
    by_kind: dict[str, list[tuple[str, int]]]
    same_as_before: int  # rewrites the level before already made, that this one makes too
    before_total: int = 0  # every rewrite the level before made (a level may undo one: a Constant folded, not removed)


def _counted(ops: Sequence[str]) -> str:
    counts = Counter(ops)
    return ", ".join(f"{op} ×{n}" if n > 1 else op for op, n in counts.most_common())


def rewrite_text(rewrite: Rewrite) -> str:
    """The rewrite as ``Rewrite.text`` says it, a long chain of ops counted by op type (48 ops: Conv ×16, …), in
    the current language."""
    if len(rewrite.before) <= _CHAIN and len(rewrite.after) <= _CHAIN:
        return rewrite.text
    ops = _("{count} ops ({ops})")
    before = ops.format(count=len(rewrite.before), ops=_counted(rewrite.before))
    after = ops.format(count=len(rewrite.after), ops=_counted(rewrite.after))
    if rewrite.kind == "removed":
        return _("{ops} removed").format(ops=before)
    if rewrite.kind == "added":
        return _("{ops} added").format(ops=after)
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
        for kind in [*KIND_TITLES, *sorted({k for k, _text in new} - set(KIND_TITLES))]:
            items = [(text, n) for (k, text), n in new.items() if k == kind]
            if items:
                by_kind[kind] = sorted(items, key=lambda item: -item[1])
        same = sum((here & before).values())
        result.append(
            LevelChanges(
                key=level.key, name=level.name, node_count=level.node_count, by_kind=by_kind, same_as_before=same,
                before_total=sum(before.values()),
            )
        )  # fmt: skip
        before = here
    return result


def fusions_used(levels: Sequence[LevelResult]) -> dict[str, str]:
    """The ops of FUSIONS the levels put in the graph ("com.microsoft:QuickGelu" as "QuickGelu"), with their
    line (in English: translated where shown), in order of first appearance."""
    found: dict[str, str] = {}
    for level in levels:
        for rewrite in level.rewrites:
            for op in rewrite.after:
                name = op.rsplit(":", 1)[-1]
                if name in FUSIONS:
                    found.setdefault(name, FUSIONS[name])
    return found
