"""Diff: what differs between two ONNX models, node by node (matched by name, through a quantizer's renames,
and by position in the graph), with the weights' changes as statistics, the subgraphs, the inputs and outputs,
the opsets and the metadata."""

from __future__ import annotations

from core.diff import records as _records
from core.diff.records import *  # noqa: F403 (the records' names, listed once: core.diff.records.__all__)

__all__ = list(_records.__all__)
