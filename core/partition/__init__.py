"""Partition: which execution provider runs each node (ONNX Runtime's own assignment, and simulated ones for
providers this machine lacks), and what the graph optimizer does at each level."""

from __future__ import annotations

from core.partition import records as _records
from core.partition.explain import FUSIONS, KIND_TITLES, LevelChanges, fusions_used, level_changes, rewrite_text
from core.partition.optimize import optimize_levels
from core.partition.partitioner import KERNEL_PROVIDERS, SIMULATED, partition_model
from core.partition.records import *  # noqa: F403 (the records' names, listed once: core.partition.records.__all__)

__all__ = [
    "FUSIONS",
    "KERNEL_PROVIDERS",
    "KIND_TITLES",
    "SIMULATED",
    "LevelChanges",
    "fusions_used",
    "level_changes",
    "optimize_levels",
    "partition_model",
    "rewrite_text",
    *_records.__all__,
]
