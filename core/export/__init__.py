"""Export: a PyTorch model to ONNX with a chosen exporter, opset and dynamic axes, verified every time."""

from __future__ import annotations

from core.export import options as _options
from core.export.code import reproduce_code
from core.export.exporter import export_model
from core.export.messages import plain_warnings
from core.export.options import *  # noqa: F403 (the options' names, listed once: core.export.options.__all__)

__all__ = [*_options.__all__, "export_model", "plain_warnings", "reproduce_code"]
