"""A stand-in for a model that crashes the native library of the worker: the job dies by SIGSEGV."""

from __future__ import annotations

import ctypes
from typing import Any


def segfault_describe(**_: Any) -> None:
    ctypes.string_at(0)  # reads address 0: SIGSEGV in native code, as a crashing operator kernel would
