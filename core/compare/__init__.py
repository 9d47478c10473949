"""Compare: two models run on one input plan, every tensor they share measured, and the node that brings the
error in."""

from __future__ import annotations

from core.compare import records as _records
from core.compare.engine import compare_models
from core.compare.records import *  # noqa: F403 (the records' names, listed once: core.compare.records.__all__)

__all__ = [*_records.__all__, "compare_models"]
