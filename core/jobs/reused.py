"""Jobs answered from what an earlier one made (``Job.reuse``): the same request, the same result, no worker.

The job's ``reuse`` module says whether a request was answered before (``earlier(request, cache_dir)``, which
also copies its files where the request wants them) and keeps a result for the next one (``keep(request, result,
cache_dir)``); core.export.reuse does it for the samples' exports. The cache folder is the backend's settings'.
"""

from __future__ import annotations

import importlib
from typing import Any

from core.jobs.process import Backend, JobHandle, JobSpec, Progress, TypedHandle, submit_spec
from core.jobs.registry import Job, Request, Result
from core.settings import load_settings

__all__ = ["Answered", "submit_reusing"]


def submit_reusing(job: Job[Request, Result], request: Request, backend: Backend | None) -> TypedHandle[Result]:
    """A handle on the earlier result of the same request, else on a new job whose result is kept once read."""
    reuse = importlib.import_module(job.reuse)
    settings = getattr(backend, "settings", None) or load_settings()
    earlier = reuse.earlier(request, settings.cache_dir)
    if earlier is not None:
        return TypedHandle(Answered(job.name, earlier))
    handle = submit_spec(JobSpec(name=job.name, args={"request": request}), backend)
    return _Keeping(handle, reuse.keep, request, settings.cache_dir)


class Answered:
    """A job answered without a worker (``Job.reuse``: from what an earlier one made): done before anyone asks."""

    def __init__(self, name: str, result: Any) -> None:
        self.spec = JobSpec(name=name)
        self._result = result

    state = "done"
    queue_position = None
    progress = Progress(1.0, "")
    warnings: tuple[str, ...] = ()

    def done(self) -> bool:
        return True

    def wait(self, timeout: float | None) -> bool:
        return True

    def cancel(self) -> None:
        pass

    def result(self, timeout: float | None = None) -> Any:
        return self._result


class _Keeping(TypedHandle[Result]):
    """A handle that hands its job's result to ``keep`` (``Job.reuse``) the first time it is read."""

    def __init__(self, handle: JobHandle, keep: Any, request: Any, cache_dir: str) -> None:
        super().__init__(handle)
        self._keep: Any = (keep, request, cache_dir)

    def result(self, timeout: float | None = None) -> Result:
        value = super().result(timeout)
        if self._keep is not None:
            keep, request, cache_dir = self._keep
            self._keep = None
            keep(request, value, cache_dir)
        return value
