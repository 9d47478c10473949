"""A job run by a thread of its own, as its caller sees it on every backend (the local worker's, a cluster's)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.errors import WorkbenchError
    from core.jobs.process import JobSpec, Progress

__all__ = ["ThreadedJob"]


class ThreadedJob:
    """The part of the JobHandle protocol every such job shows alike: its thread sets ``_state`` and ``_progress``
    as the job goes, then ``_result`` or ``_error``, and ``_finished`` last."""

    def __init__(self, spec: JobSpec) -> None:
        self.spec = spec
        self._finished = threading.Event()
        self._state = "queued"
        self._queue_position: int | None = None
        self._progress: Progress | None = None
        self._result: Any = None
        self._error: WorkbenchError | None = None

    @property
    def state(self) -> str:
        return self._state

    @property
    def progress(self) -> Progress | None:
        return self._progress

    def done(self) -> bool:
        return self._finished.is_set()

    def wait(self, timeout: float | None) -> bool:
        return self._finished.wait(timeout)

    def result(self, timeout: float | None = None) -> Any:
        if not self._finished.wait(timeout):
            raise TimeoutError(f"job {self.spec.name} is still {self._state}")
        if self._error is not None:
            raise self._error
        return self._result
