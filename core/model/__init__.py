"""The model library: its record, the sample zoo, safe intake of uploads, ONNX-proto helpers, inputs."""

from __future__ import annotations

from core.model.records import FORMAT_LABELS, ArchitectureMatch, ModelRecord, TensorSpec, format_shape

__all__ = ["FORMAT_LABELS", "ArchitectureMatch", "ModelRecord", "TensorSpec", "format_shape"]
