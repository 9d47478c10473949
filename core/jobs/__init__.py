"""Jobs: named, typed work run in an isolated worker process with limits, progress, cancel and a queue.

The names below are loaded on first use, so the worker process (``python -m core.jobs.worker``, which imports
this package first) does not pay for the server's side of the protocol.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.jobs.process import Backend, JobHandle, JobSpec, ProcessBackend, Progress, run_job, submit
    from core.jobs.registry import JOBS, Job, JobRegistry

__all__ = [
    "JOBS",
    "Backend",
    "Job",
    "JobHandle",
    "JobRegistry",
    "JobSpec",
    "ProcessBackend",
    "Progress",
    "run_job",
    "submit",
]

_WHERE = {
    **dict.fromkeys(("Backend", "JobHandle", "JobSpec", "ProcessBackend", "Progress", "run_job", "submit"), "process"),
    **dict.fromkeys(("JOBS", "Job", "JobRegistry"), "registry"),
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'core.jobs' has no attribute {name!r}")
    return getattr(importlib.import_module(f"core.jobs.{_WHERE[name]}"), name)
