"""Quantize: INT8 and FP16 variants of an ONNX model beside the float32 original."""

from __future__ import annotations

from core.quantize.calibration import check_calibration
from core.quantize.quantizer import quantize_model
from core.quantize.records import INTEGER_OPS, VARIANTS, Accuracy, QuantizeReport, Variant

__all__ = ["INTEGER_OPS", "VARIANTS", "Accuracy", "QuantizeReport", "Variant", "check_calibration", "quantize_model"]
