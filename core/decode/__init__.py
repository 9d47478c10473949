"""Decode: an ONNX file taken apart, from the first bytes to the whole graph."""

from __future__ import annotations

from core.decode.decoder import decode_model, summary
from core.decode.header import HEADER_BYTES, annotate_header, top_level_fields
from core.decode.records import DecodedModel, DecodeRequest, NodeInfo

__all__ = [
    "HEADER_BYTES",
    "DecodeRequest",
    "DecodedModel",
    "NodeInfo",
    "annotate_header",
    "decode_model",
    "summary",
    "top_level_fields",
]
