"""Export: a PyTorch model to ONNX with a chosen exporter, opset and dynamic axes, verified every time."""

from __future__ import annotations

from core.export.code import reproduce_code
from core.export.exporter import export_model
from core.export.messages import plain_warnings
from core.export.options import (
    DEFAULT_OPSET,
    EXPORTERS,
    Check,
    ExportOptions,
    ExportReport,
    ExportRequest,
    ShapeTrial,
    choose_exporter,
    default_options,
)

__all__ = [
    "DEFAULT_OPSET",
    "EXPORTERS",
    "Check",
    "ExportOptions",
    "ExportReport",
    "ExportRequest",
    "ShapeTrial",
    "choose_exporter",
    "default_options",
    "export_model",
    "plain_warnings",
    "reproduce_code",
]
