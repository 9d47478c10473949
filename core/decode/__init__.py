"""Decode: an ONNX file taken apart, from the first bytes to the whole graph.

The names are loaded on first use, so that a command that only reads a decoding (core.decode.records) does not
import the decoder's own libraries.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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
_WHERE = {
    "decode_model": "decoder",
    "summary": "decoder",
    "HEADER_BYTES": "header",
    "annotate_header": "header",
    "top_level_fields": "header",
    "DecodedModel": "records",
    "DecodeRequest": "records",
    "NodeInfo": "records",
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'core.decode' has no attribute {name!r}")
    return getattr(importlib.import_module(f"core.decode.{_WHERE[name]}"), name)
