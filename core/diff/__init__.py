"""Diff: what differs between two ONNX models, node by node (matched by name, through a quantizer's renames,
and by position in the graph), with the weights' changes as statistics, the subgraphs, the inputs and outputs,
the opsets and the metadata."""

from __future__ import annotations

from core.diff.records import (
    CHANGE_WORDS,
    KIND_WORDS,
    Change,
    DiffReport,
    DiffRequest,
    ModelChange,
    NodeDiff,
    WeightChange,
)

__all__ = [
    "CHANGE_WORDS",
    "KIND_WORDS",
    "Change",
    "DiffReport",
    "DiffRequest",
    "ModelChange",
    "NodeDiff",
    "WeightChange",
]
