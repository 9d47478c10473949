"""How a job that ended without a result is told to the person: stopped by us, failed inside, or died."""

from __future__ import annotations

import signal

from core.errors import (
    JobCancelled,
    JobCrashed,
    JobFailed,
    JobOutOfMemory,
    JobTimedOut,
    WorkbenchError,
    error_class,
)
from core.jobs import wire

# Processes one job may run at once (a worker needs one or two; threads are not counted). Counted from
# outside, like memory: the kernel's RLIMIT_NPROC does not hold for root, which is how containers often run.
MAX_PROCESSES = 64


def ending_error(
    name: str, kill_reason: str | None, failure: wire.Failed | None, returncode: int | None, limits: tuple[float, int]
) -> WorkbenchError:
    """The error for a job that ended without a result: stopped by us, failed inside, or died."""
    timeout_s, limit_mb = limits
    if kill_reason == "cancelled":
        return JobCancelled(f"The job '{name}' was cancelled.")
    if kill_reason == "timeout":
        return JobTimedOut(
            f"The job '{name}' ran longer than its limit of {timeout_s:g} s and was stopped. "
            "Try a smaller model or fewer iterations, or raise WORKBENCH_WORKER_TIMEOUT_S."
        )
    if kill_reason == "memory" or (failure is not None and failure.error == "MemoryError"):
        return JobOutOfMemory(
            f"The job '{name}' needed more than its memory limit of {limit_mb} MB and was stopped. "
            "Try a smaller model or batch, or raise WORKBENCH_WORKER_MEMORY_MB."
        )
    if kill_reason and kill_reason.startswith("processes:"):
        return JobFailed(
            f"The job '{name}' started {kill_reason.split(':')[1]} processes and was stopped, with all of them "
            f"(a job may run {MAX_PROCESSES} at once). A model has no reason to start processes: this one runs "
            "code that does."
        )
    if failure is not None:
        cls = error_class(failure.error)
        if cls is not None:
            return cls(failure.message)
        return JobFailed(
            f"The job '{name}' failed: {failure.exc_type or 'Error'}: {failure.message}", failure.traceback
        )
    if returncode is not None and returncode < 0:
        try:
            sig = signal.Signals(-returncode).name
        except ValueError:
            sig = f"signal {-returncode}"
        return JobCrashed(
            f"The worker running '{name}' crashed ({sig}) inside native code. The app is fine; the model "
            "or its operators may be unsupported by this version of the library that was running."
        )
    return JobFailed(f"The worker running '{name}' exited with code {returncode} without a result.")
