"""The figures the tutorial this app grew from measured on its small CNN (the seeds' article on why a ``.pt``
exports to ONNX and why ONNX Runtime is faster), each with what was measured, on what, and why a user's own
figure differs: shown beside the user's on the Benchmark, Export and Model pages and on the classroom's board.

The article names its software (torch 2.10.0+cu128, onnx 1.21.0, onnxruntime 1.26.0) and that it timed on the
CPU (CPUExecutionProvider), but not the processor or the thread count."""

from __future__ import annotations

from dataclasses import dataclass

from core.i18n import N_, _, number

__all__ = [
    "FIGURES",
    "GRAPH_OPTIMIZATIONS",
    "LARGEST_DIFFERENCE",
    "PARAMETERS",
    "SAMPLE",
    "SPEEDUP",
    "TUTORIAL_MODEL",
    "WRITTEN_PARAMETERS",
    "Figure",
    "comparison",
    "figure",
    "is_tutorials",
    "parameters_as_written",
    "setup",
]

SAMPLE = "tinycnn"  # the app's sample with the tutorial's layers (core.model.zoo)
TUTORIAL_MODEL = f"sample:{SAMPLE}"  # how a classroom's setting names the tutorial's model (core.classroom)

# the article's own code: conv 3→16, BatchNorm, conv 16→32, BatchNorm, and a Linear head from 32·28·28 to 10
WRITTEN_PARAMETERS = (3 * 16 * 9 + 16) + 2 * 16 + (16 * 32 * 9 + 32) + 2 * 32 + (32 * 28 * 28 * 10 + 10)


def parameters_as_written(side: int = 112) -> int:
    """The tutorial's layers counted for square inputs of ``side`` pixels (two 2×2 pools shrink it by four)."""
    flat = 32 * (side // 4) * (side // 4)
    return (3 * 16 * 9 + 16) + 2 * 16 + (16 * 32 * 9 + 32) + 2 * 32 + (flat * 10 + 10)


@dataclass(frozen=True, kw_only=True)
class Figure:
    """One figure of the tutorial. ``text`` words are marked for the catalog and translated where shown."""

    key: str
    value: float
    unit: str  # "×", "ms", "" (a count or an error)
    what: str  # what was measured, in words
    details: str  # the numbers behind it, as the tutorial gave them
    reasons: tuple[str, ...]  # why a user's figure differs


_SETUP = N_(
    "the tutorial's small CNN (two conv blocks and a linear head), one 1×3×112×112 input (batch 1), on the CPU of "
    "the author's machine (not named; torch 2.10.0, onnxruntime 1.26.0, default threads), the mean of 200 calls "
    "after a warm-up"
)
_MACHINE = N_("Another machine: its processor, its cores and what else it runs change every latency.")
_THREADS = N_(
    "Threads: the tutorial kept ONNX Runtime's default (one per core); this app leaves one core free and measures "
    "with the threads you chose."
)
_STATISTIC = N_(
    "The statistic: the tutorial took the mean of 200 calls; this app gives the median with its confidence "
    "interval, which one slow call does not move."
)
_SIZE = N_(
    "Input size and batch: the tutorial timed one 112×112 image; a larger batch or input gives the work more "
    "weight and the per-call overhead less, and the ratio shrinks."
)
_MODEL = N_(
    "The model: the tutorial's CNN has few, small ops, where PyTorch's per-op overhead weighs most; a model of "
    "a few large matrix multiplications gains much less."
)

SPEEDUP = Figure(
    key="speedup",
    value=5.11,
    unit="×",
    what=N_("PyTorch eager against ONNX Runtime"),
    details=N_("PyTorch eager 0.877 ms, ONNX Runtime 0.172 ms"),
    reasons=(_MACHINE, _THREADS, _SIZE, _MODEL, _STATISTIC),
)
GRAPH_OPTIMIZATIONS = Figure(
    key="graph_optimizations",
    value=17.9,
    unit="×",
    what=N_("ONNX Runtime with graph optimizations (ALL) against without (DISABLE_ALL)"),
    details=N_("ALL 0.111 ms, DISABLE_ALL 1.993 ms"),
    reasons=(
        _MACHINE,
        _THREADS,
        N_(
            "Fusions: how much ALL gains depends on how many of the model's ops fuse (Conv with BatchNorm and "
            "Relu here); the exporter may already have folded some of them before ONNX Runtime sees the graph."
        ),
        _STATISTIC,
    ),
)
LARGEST_DIFFERENCE = Figure(
    key="largest_difference",
    value=1.45e-7,
    unit="",
    what=N_("the largest absolute difference between PyTorch's outputs and ONNX Runtime's after export"),
    details=N_("one random input, the ten logits of random (untrained) weights"),
    reasons=(
        N_(
            "The weights and the input: both are random, and a difference scales with the size of the outputs; "
            "any value near 1e-7 to 1e-5 for float32 means the two agree."
        ),
        N_(
            "Kernels: another processor or thread count sums in another order, and float32 rounding differs in "
            "the last digits."
        ),
    ),
)
PARAMETERS = Figure(
    key="parameters",
    value=87_114,
    unit="",
    what=N_("the parameter count the tutorial printed"),
    details=N_("printed by its export script, beside a model with a Linear head from 32·28·28 to 10"),
    reasons=(
        N_(
            "The model as written has as many parameters as the card counts: its Linear head from 32·28·28 to 10 "
            "alone has {head}. The printed {printed} is what the same layers count with a head from 32·16·16 (for "
            "64×64 inputs), so the figure was most likely printed by an earlier version of the script."
        ),
    ),
)
FIGURES: dict[str, Figure] = {f.key: f for f in (SPEEDUP, GRAPH_OPTIMIZATIONS, LARGEST_DIFFERENCE, PARAMETERS)}


def setup() -> str:
    """What the tutorial measured on, in the current language."""
    return _(_SETUP)


def is_tutorials(model: str) -> bool:
    """Whether a room's model (``sample:NAME``, ``library:ID:KEY``) is the tutorial's CNN: its figures are shown
    beside that model's only (beside another's, 5.11× reads as a target the model missed)."""
    return model == TUTORIAL_MODEL


def figure(key: str) -> Figure:
    """The tutorial's figure ``key`` (``speedup``, ``graph_optimizations``, ``largest_difference``, ``parameters``)."""
    return FIGURES[key]


def _shown(fig: Figure, value: float) -> str:
    if fig.unit == "×":
        return _("{value}×").format(value=number(value, 2 if value < 10 else 1))
    if fig is LARGEST_DIFFERENCE:
        return f"{value:.2e}"
    return number(value)


def comparison(key: str, yours: float) -> tuple[str, list[str]]:
    """A sentence putting ``yours`` beside the tutorial's figure ``key``, and why they differ (translated). The
    parameter count is on the model's card just above, so its sentence does not repeat it."""
    fig = FIGURES[key]
    if fig is PARAMETERS:
        sentence = _(
            "The tutorial printed {theirs} parameters for its small CNN; the card above counts the same layers as "
            "written."
        ).format(theirs=_shown(fig, fig.value))
        return sentence, _reasons(fig)
    sentence = _("The tutorial measured {theirs} for {what} ({details}); you measured {yours}.").format(
        theirs=_shown(fig, fig.value), what=_(fig.what), details=_(fig.details), yours=_shown(fig, yours)
    )
    return sentence, _reasons(fig)


def _reasons(fig: Figure) -> list[str]:
    return [_(r).format(head=number(32 * 28 * 28 * 10 + 10), printed=number(fig.value)) for r in fig.reasons]
