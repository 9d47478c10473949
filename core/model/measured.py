"""The model a measuring job runs: its ONNX file, its input plan and, when there is one, its PyTorch original.

Benchmark, Profile and Quantize all take one; the app and the command line each build it in one place.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.access import ReadPath
from core.model.inputs import BenchInput
from core.model.torchload import TorchSource

__all__ = ["MeasuredModel"]


@dataclass(frozen=True, kw_only=True)
class MeasuredModel:
    """An ONNX model as a measuring job takes it."""

    path: ReadPath  # the ONNX file (its external data lies beside it)
    inputs: list[BenchInput]  # the input plan (core.model.inputs.plan_inputs)
    name: str = ""  # as reports and the history name it; else the file's name
    id: str = ""  # its sha256, the history's key for it
    torch_source: TorchSource | None = None  # the PyTorch original, for eager runs and layer matching
    torch_id: str = ""  # the PyTorch original's sha256: the version eager runs measure, whatever the ONNX one
