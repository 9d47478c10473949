"""Shapes as people type them: "1,3,224,224", "1x3x224x224" or "1×3×224×224"."""

from __future__ import annotations

import re

from core.errors import WorkbenchError

__all__ = ["parse_dims"]


def parse_dims(text: str, what: str = "the shape") -> list[int]:
    """Positive whole numbers separated by commas, x or ×; a WorkbenchError that says how to write it else."""
    parts = [p.strip() for p in re.split(r"[,x×]", text.strip()) if p.strip()]
    try:
        dims = [int(p) for p in parts]
    except ValueError:
        raise WorkbenchError(
            f"{what[:1].upper()}{what[1:]} must be whole numbers separated by commas, e.g. 1,3,224,224; got {text!r}."
        ) from None
    if not dims or min(dims) < 1:
        raise WorkbenchError(f"Give {what} as positive whole numbers, e.g. 1,3,224,224; got {text!r}.")
    return dims
