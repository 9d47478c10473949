"""Shapes as people type them: "1,3,224,224", "1x3x224x224" or "1×3×224×224"."""

from __future__ import annotations

import re

from core.errors import WorkbenchError, brief

__all__ = ["MAX_DIM", "parse_dims"]

MAX_DIM = 2**63 - 1  # the largest dim ONNX (int64) can write


def parse_dims(text: str, what: str = "the shape", empty: frozenset[int] = frozenset()) -> list[int]:
    """Positive whole numbers separated by commas, x or ×; a WorkbenchError that says how to write it else.
    ``empty``: the axes that may be 0 (a language model's past at prefill holds no position)."""
    parts = [p.strip() for p in re.split(r"[,x×]", text.strip()) if p.strip()]
    try:
        dims = [int(p) for p in parts]
    except ValueError:
        raise WorkbenchError(
            f"{what[:1].upper()}{what[1:]} must be whole numbers separated by commas, e.g. 1,3,224,224; "
            f"got '{brief(text)}'."
        ) from None
    if not dims or any(d < (0 if axis in empty else 1) for axis, d in enumerate(dims)):
        raise WorkbenchError(f"Give {what} as positive whole numbers, e.g. 1,3,224,224; got '{brief(text)}'.")
    if max(dims) > MAX_DIM:
        big = max(dims)
        shown = f"{big:,}" if big < 10**30 else f"{len(str(big)):,} digits"
        raise WorkbenchError(
            f"{what[:1].upper()}{what[1:]} has a dim of {shown}; no tensor can have a dim above {MAX_DIM:,} "
            "(2⁶³ - 1, what ONNX can write). Give the size you mean, e.g. 1,3,224,224."
        )
    return dims
