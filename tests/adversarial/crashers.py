"""A stand-in for a model that crashes the native library of the worker: the job dies by SIGSEGV."""

from __future__ import annotations

import ctypes

from core.model.records import ModelRecord
from core.settings import IntakeLimits


def segfault_describe(
    paths: list[str], name: str = "", limits: IntakeLimits | None = None, unpack_dir: str = ""
) -> ModelRecord:
    """Takes what intake.describe_files takes, and crashes."""
    ctypes.string_at(0)
    raise AssertionError("not reached")  # reads address 0: SIGSEGV in native code, as a crashing operator kernel would
