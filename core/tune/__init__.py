"""Tune: the fastest ONNX Runtime session configuration that is surely faster than the defaults."""

from __future__ import annotations

from core.tune.config import SessionConfig

__all__ = ["SessionConfig"]
