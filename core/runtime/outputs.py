"""How far one engine's outputs are from another's: the one comparison Export, Benchmark and Quantize share."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

__all__ = ["ATOL", "RTOL", "OutputDiff", "compare_outputs", "flatten_outputs", "max_abs_diff"]

ATOL, RTOL = 1e-4, 1e-3  # what "matches" means when nothing else is said: |a - b| <= ATOL + RTOL·|a|


@dataclass(kw_only=True)
class OutputDiff:
    output: str
    max_abs: float
    max_rel: float
    ok: bool  # every element within ATOL + RTOL·|reference|


def flatten_outputs(out: Any) -> list[Any]:
    """A model call's outputs (a tensor, a tuple, a list or a dict of them) as a list of numpy arrays. A
    sequence of maps (scikit-learn's ZipMap: one {class: probability} per row) becomes a [rows, classes] array."""
    if isinstance(out, dict):
        out = list(out.values())
    items = list(out) if isinstance(out, (tuple, list)) else [out]
    return [_array(t.detach().cpu().numpy() if hasattr(t, "detach") else t) for t in items]


def _array(item: Any) -> Any:
    if isinstance(item, list) and item and all(isinstance(row, dict) for row in item):
        keys = sorted(item[0], key=str)
        return [[float(row.get(k, math.nan)) for k in keys] for row in item]
    return item


def compare_outputs(
    reference: list[Any], produced: list[Any], names: list[str] | None = None, atol: float = ATOL, rtol: float = RTOL
) -> list[OutputDiff]:
    """One OutputDiff per output pair. A NaN where the reference has NaN agrees; another shape never does."""
    import numpy as np

    diffs = []
    for k, (ref, got) in enumerate(zip(flatten_outputs(reference), flatten_outputs(produced), strict=False)):
        name = names[k] if names and k < len(names) else f"output {k}"
        a, b = np.asarray(ref, dtype=np.float64), np.asarray(got, dtype=np.float64)
        if a.shape != b.shape:
            diffs.append(OutputDiff(output=name, max_abs=math.inf, max_rel=math.inf, ok=False))
            continue
        if not a.size:
            diffs.append(OutputDiff(output=name, max_abs=0.0, max_rel=0.0, ok=True))
            continue
        delta = np.where(np.isnan(a) & np.isnan(b), 0.0, np.abs(a - b))
        delta = np.where(np.isnan(delta), np.inf, delta)  # NaN on one side only: as far apart as can be
        max_rel = float((delta / np.maximum(np.abs(np.nan_to_num(a)), 1e-12)).max())
        ok = bool(np.all(delta <= atol + rtol * np.abs(np.nan_to_num(a))))
        diffs.append(OutputDiff(output=name, max_abs=float(delta.max()), max_rel=max_rel, ok=ok))
    return diffs


def max_abs_diff(reference: list[Any], produced: list[Any]) -> float:
    """The largest absolute difference over every output (0 for none, inf for a shape mismatch)."""
    return max((d.max_abs for d in compare_outputs(reference, produced)), default=0.0)
