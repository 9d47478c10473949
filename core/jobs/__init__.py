"""Jobs: named, typed work run in an isolated worker process with limits, progress, cancel and a queue.

The job table's names are core.jobs.registry's; the backend's are loaded on first use, so the worker process
(``python -m core.jobs.worker``, which imports this package first) does not pay for the server's side of the protocol.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from core.jobs import registry as _registry
from core.jobs.registry import *  # noqa: F403 (the job table's names, listed once: core.jobs.registry.__all__)

if TYPE_CHECKING:
    from core.jobs.process import Backend, JobHandle, JobSpec, ProcessBackend, Progress, TypedHandle, run, submit

__all__ = ["Backend", "JobHandle", "JobSpec", "ProcessBackend", "Progress", "TypedHandle", "run", "submit"]
_PROCESS = frozenset(__all__)
__all__ += _registry.__all__


def __getattr__(name: str) -> Any:
    if name not in _PROCESS:
        raise AttributeError(f"module 'core.jobs' has no attribute {name!r}")
    return getattr(importlib.import_module("core.jobs.process"), name)
