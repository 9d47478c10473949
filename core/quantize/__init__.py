"""Quantize: INT8 and FP16 variants of an ONNX model beside the float32 original."""

from __future__ import annotations

from core.quantize.calibration import CalibrationRequest, check_calibration
from core.quantize.quantizer import quantize_model
from core.quantize.records import INTEGER_OPS, VARIANTS, Accuracy, QuantizeReport, QuantizeRequest, Variant

__all__ = [
    "INTEGER_OPS",
    "VARIANTS",
    "Accuracy",
    "CalibrationRequest",
    "QuantizeReport",
    "QuantizeRequest",
    "Variant",
    "check_calibration",
    "quantize_model",
]
