"""The input plan in the reader's language: the plan keeps why each size and value is what it is as notes
(core.model.dims, core.model.inputs, core.model.values write them), said here with ``say``."""

from __future__ import annotations

from core.i18n import _
from core.model.inputs import BenchInput, FreeDim, describe_values
from core.notes import say

__all__ = ["said_dim", "said_values"]


def said_dim(spec: BenchInput, dim: FreeDim) -> str:
    """An open dim in a sentence: 'image_width' (input 'x', axis 3), or input 'x', axis 3 when it has no name (the
    English as core.model.inputs.dim_label writes it)."""
    where = _("input '{name}', axis {axis}").format(name=spec.name[:80], axis=dim.axis)
    return _("'{symbol}' ({where})").format(symbol=dim.symbol[:80], where=where) if dim.symbol != "?" else where


def said_values(spec: BenchInput) -> str:
    """How an input's values are made, in a few words (core.model.inputs.describe_values)."""
    return say(describe_values(spec))
