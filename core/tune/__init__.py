"""Tune: the fastest ONNX Runtime session configuration that is surely faster than the defaults."""

from __future__ import annotations

from core.runtime.session_config import SessionConfig
from core.tune.records import Candidate, TuneReport, TuneRequest
from core.tune.tuner import run_tune

__all__ = ["Candidate", "SessionConfig", "TuneReport", "TuneRequest", "run_tune"]
