"""What a failure on the plan's inputs says of the sizes the plan guessed: which open dims were guessed, where to
set them, and the one most likely wrong, with why it got its size (a text recogniser's height, an audio clip's
length, a sequence's), so that the hint fits the model instead of naming one kind of model for every failure."""

from __future__ import annotations

from core.model.dims import BOTH, CHARACTER, IMGSZ, ITS_NAME, RATE_METADATA
from core.model.inputs import PYTORCH_EXAMPLE, BenchInput, FreeDim, dim_label

__all__ = ["guess_hint"]

_FROM_MODEL = (IMGSZ, CHARACTER, RATE_METADATA, PYTORCH_EXAMPLE)  # guesses the model itself backs
_NAMED = (ITS_NAME, BOTH)  # guesses a dim's name backs


def guess_hint(specs: list[BenchInput]) -> str:
    """For a model that failed on the plan's inputs: which open dims were guessed, where to set them, and the one
    most likely wrong (the guess that rests on the least: the kind of input alone, before a dim's name, before
    metadata; the first of those) with why it got its size ("" when none was guessed: then the sizes are not the
    cause). English, as the error it ends."""
    guessed = [(s, d) for s in specs for d in s.free if d.axis != s.batch_axis and d.guessed]
    if not guessed:
        return ""
    listed = ", ".join(f"'{s.name}' axis {d.axis} = {d.value}" for s, d in guessed[:6])
    spec, dim = min(guessed, key=lambda pair: _trust(pair[1]))
    option = f"--dim {dim.symbol}=N" if dim.symbol != "?" else f"--input {spec.name}=SHAPE"
    return (
        f" The model left some sizes open and they were guessed ({listed}); set them in the input plan if it needs "
        f"others (on the command line with --dim or --input). The likeliest wrong is {dim_label(spec, dim)} = "
        f"{dim.value} ({dim.why.english()}, from {dim.source.english()}): try {option}."
    )


def _trust(dim: FreeDim) -> int:
    """How much a guessed size rests on: 2 for the model's metadata or a PyTorch example, 1 for the dim's name, 0
    for the kind of input alone."""
    if dim.source.key in _FROM_MODEL:
        return 2
    return 1 if dim.source.key in _NAMED else 0
