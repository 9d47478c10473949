"""Compare: two models run on one input plan, every tensor they share measured, and the node that brings the
error in."""

from __future__ import annotations

from core.compare.engine import compare_models
from core.compare.records import (
    CompareReport,
    CompareRequest,
    CompareSide,
    Divergence,
    NodeError,
    TensorError,
    Uncompared,
)

__all__ = [
    "CompareReport",
    "CompareRequest",
    "CompareSide",
    "Divergence",
    "NodeError",
    "TensorError",
    "Uncompared",
    "compare_models",
]
