"""A stand-in for a model that crashes the native library of the worker: the job dies by SIGSEGV."""

from __future__ import annotations

import ctypes

from core.model.intake import IntakeRequest
from core.model.records import ModelRecord
from core.settings import IntakeLimits


def segfault_describe(request: IntakeRequest, limits: IntakeLimits | None = None) -> ModelRecord:
    """Takes what intake.describe_files takes, and crashes."""
    ctypes.string_at(0)
    raise AssertionError("not reached")  # reads address 0: SIGSEGV in native code, as a crashing operator kernel would
