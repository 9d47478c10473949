"""Jobs: named, typed work run in an isolated worker process with limits, progress, cancel and a queue."""

from __future__ import annotations

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
