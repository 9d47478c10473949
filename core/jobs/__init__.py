"""Jobs: named, typed work run in an isolated worker process with limits, progress, cancel and a queue.

The names below are loaded on first use, so the worker process (``python -m core.jobs.worker``, which imports
this package first) does not pay for the server's side of the protocol.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.jobs.process import Backend, JobHandle, JobSpec, ProcessBackend, Progress, TypedHandle, run, submit
    from core.jobs.registry import (
        BENCH,
        BROWSER,
        CALIBRATION,
        COMPARE,
        DECODE,
        DEPLOY,
        DIFF,
        EXPORT,
        GRAPH,
        HARDWARE,
        IMAGE_INPUT,
        INTAKE,
        JOBS,
        LOADTEST,
        LOADTEST_URL,
        NOTEBOOK,
        NPZ_INPUTS,
        OPTIMIZE,
        PARTITION,
        PROFILE,
        QUANTIZE,
        SAMPLE,
        TUNE,
        UPGRADE,
        Job,
        JobRegistry,
    )

__all__ = [
    "BENCH",
    "BROWSER",
    "CALIBRATION",
    "COMPARE",
    "DECODE",
    "DEPLOY",
    "DIFF",
    "EXPORT",
    "GRAPH",
    "HARDWARE",
    "IMAGE_INPUT",
    "INTAKE",
    "JOBS",
    "LOADTEST",
    "LOADTEST_URL",
    "NOTEBOOK",
    "NPZ_INPUTS",
    "OPTIMIZE",
    "PARTITION",
    "PROFILE",
    "QUANTIZE",
    "SAMPLE",
    "TUNE",
    "UPGRADE",
    "Backend",
    "Job",
    "JobHandle",
    "JobRegistry",
    "JobSpec",
    "ProcessBackend",
    "Progress",
    "TypedHandle",
    "run",
    "submit",
]

_PROCESS = {"Backend", "JobHandle", "JobSpec", "ProcessBackend", "Progress", "TypedHandle", "run", "submit"}
_WHERE = {name: "process" if name in _PROCESS else "registry" for name in __all__}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'core.jobs' has no attribute {name!r}")
    return getattr(importlib.import_module(f"core.jobs.{_WHERE[name]}"), name)
