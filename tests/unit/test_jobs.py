"""The worker: every way a job can end becomes its own error, and the caller always survives."""

from __future__ import annotations

import dataclasses
import itertools
import os
import time
from pathlib import Path

import pytest

from core.errors import (
    IntakeError,
    JobCancelled,
    JobCrashed,
    JobError,
    JobFailed,
    JobOutOfMemory,
    JobTimedOut,
)
from core.jobs import JobSpec, ProcessBackend, register_job, run_job, submit
from core.settings import load_settings

T = "tests.unit.jobs_for_tests"
for _name in (
    "echo",
    "segfault",
    "sleep",
    "allocate",
    "huge_allocation",
    "raise_value_error",
    "raise_intake_error",
    "with_progress",
    "noisy",
):
    register_job(f"test.{_name}", f"{T}:{_name}")
register_job("test.exclusive_span", f"{T}:exclusive_span", exclusive=True)
register_job("test.span", f"{T}:span")


@pytest.fixture
def backend(tmp_path: Path) -> ProcessBackend:
    settings = dataclasses.replace(load_settings(environ={}), data_dir=str(tmp_path / "data"))
    return ProcessBackend(settings)


def test_result_comes_back_as_json(backend: ProcessBackend) -> None:
    assert run_job("test.echo", {"value": [1, "two", {"three": 3.0}]}, backend) == {"value": [1, "two", {"three": 3.0}]}


def test_segfault_in_native_code_is_a_crash_and_the_caller_survives(backend: ProcessBackend) -> None:
    with pytest.raises(JobCrashed, match="SIGSEGV"):
        run_job("test.segfault", backend=backend)
    assert run_job("test.echo", {"value": 1}, backend) == {"value": 1}


def test_job_past_its_wall_clock_limit_is_stopped(backend: ProcessBackend) -> None:
    started = time.monotonic()
    with pytest.raises(JobTimedOut, match="limit of 1 s"):
        submit(JobSpec("test.sleep", {"seconds": 30}, timeout_s=1), backend).result()
    assert time.monotonic() - started < 15


def test_job_past_its_memory_limit_is_stopped(backend: ProcessBackend) -> None:
    handle = submit(JobSpec("test.allocate", {"megabytes": 4096}, memory_mb=300), backend)
    with pytest.raises(JobOutOfMemory, match="memory limit of 300 MB"):
        handle.result(timeout=60)


def test_allocation_the_os_refuses_is_reported_as_out_of_memory(backend: ProcessBackend) -> None:
    with pytest.raises(JobOutOfMemory):
        run_job("test.huge_allocation", backend=backend)


def test_unexpected_exception_is_a_failure_with_details(backend: ProcessBackend) -> None:
    with pytest.raises(JobFailed, match="ValueError: this is a bug in the job") as info:
        run_job("test.raise_value_error", backend=backend)
    assert "raise_value_error" in info.value.details


def test_user_facing_errors_keep_their_class_across_the_process_boundary(backend: ProcessBackend) -> None:
    with pytest.raises(IntakeError, match="the file is not a model"):
        run_job("test.raise_intake_error", backend=backend)


def test_each_ending_is_a_distinct_error_class() -> None:
    classes = {JobCrashed, JobTimedOut, JobOutOfMemory, JobFailed, JobCancelled}
    assert all(issubclass(c, JobError) for c in classes)
    assert len({c.__name__ for c in classes}) == 5


def test_progress_is_reported_while_running(backend: ProcessBackend) -> None:
    handle = submit(JobSpec("test.with_progress", {"steps": 20}), backend)
    seen = set()
    while not handle.done():
        if handle.progress is not None:
            seen.add(handle.progress.message)
        time.sleep(0.01)
    assert handle.result() == 20
    assert len(seen) >= 3 and "step 20 of 20" in seen


def test_cancel_stops_the_worker(backend: ProcessBackend) -> None:
    handle = submit(JobSpec("test.sleep", {"seconds": 60}), backend)
    time.sleep(0.5)
    handle.cancel()
    with pytest.raises(JobCancelled):
        handle.result(timeout=10)
    assert handle.state == "cancelled"


def test_printing_jobs_do_not_corrupt_the_protocol(backend: ProcessBackend) -> None:
    assert run_job("test.noisy", backend=backend) == "clean"


def test_unknown_job_names_list_the_known_ones(backend: ProcessBackend) -> None:
    with pytest.raises(JobError, match=r"registered jobs are: .*intake\.describe_files"):
        run_job("no.such.job", backend=backend)


def test_exclusive_jobs_queue_and_never_overlap(backend: ProcessBackend, tmp_path: Path) -> None:
    log = tmp_path / "spans.txt"
    handles = [submit(JobSpec("test.exclusive_span", {"log": str(log), "seconds": 0.6}), backend) for _ in range(3)]
    positions = set()
    while not all(h.done() for h in handles):
        for h in handles:
            if h.queue_position is not None:
                positions.add(h.queue_position)
        time.sleep(0.02)
    for h in handles:
        h.result()
    spans = sorted(tuple(map(float, line.split())) for line in log.read_text().splitlines())
    assert len(spans) == 3
    for (_, end), (start, _) in itertools.pairwise(spans):
        assert start >= end, "two exclusive jobs ran at the same time"
    assert positions & {1, 2}, "a waiting job should see how many are ahead of it"


def test_cancelling_a_queued_job_lets_the_next_one_run(backend: ProcessBackend, tmp_path: Path) -> None:
    log = tmp_path / "spans.txt"
    first = submit(JobSpec("test.exclusive_span", {"log": str(log), "seconds": 1.0}), backend)
    time.sleep(0.3)
    second = submit(JobSpec("test.exclusive_span", {"log": str(log), "seconds": 0.1}), backend)
    third = submit(JobSpec("test.exclusive_span", {"log": str(log), "seconds": 0.1}), backend)
    time.sleep(0.5)
    second.cancel()
    assert len(third.result(timeout=30)) == 2
    first.result()
    with pytest.raises(JobCancelled):
        second.result()
    assert len(log.read_text().splitlines()) == 2


def test_worker_runs_in_its_own_process(backend: ProcessBackend) -> None:
    handle = submit(JobSpec("test.echo", {"value": os.getpid()}), backend)
    assert handle.result()["value"] == os.getpid()


def test_worker_processes_are_capped_and_the_rest_wait_in_order(tmp_path: Path) -> None:
    settings = dataclasses.replace(load_settings(environ={}), data_dir=str(tmp_path / "data"), max_workers=1)
    backend = ProcessBackend(settings)
    log = tmp_path / "spans.txt"
    handles = [submit(JobSpec("test.span", {"log": str(log), "seconds": 0.4}), backend) for _ in range(3)]
    assert handles[1].state == "queued" and handles[2].queue_position in (0, 1)
    positions = {handles[2].queue_position}
    cancelled = submit(JobSpec("test.span", {"log": str(log), "seconds": 0.4}), backend)
    cancelled.cancel()  # cancelled while waiting: it never starts and frees its place
    with pytest.raises(JobCancelled):
        cancelled.result(5)
    results = [h.result(30) for h in handles]
    spans = sorted(results)
    for (_, end), (start, _) in itertools.pairwise(spans):
        assert start >= end, "two jobs ran at once although one worker is allowed"
    assert positions <= {0, 1} and len(log.read_text().splitlines()) == 3
    assert backend.slots.running == 0 and backend.slots.waiting == []


def test_exclusive_jobs_do_not_take_worker_slots(tmp_path: Path) -> None:
    """A queue of benchmarks waits for the machine without starving everyone's quick jobs."""
    settings = dataclasses.replace(load_settings(environ={}), data_dir=str(tmp_path / "data"), max_workers=1)
    backend = ProcessBackend(settings)
    log = tmp_path / "spans.txt"
    long = [submit(JobSpec("test.exclusive_span", {"log": str(log), "seconds": 1.0}), backend) for _ in range(2)]
    started = time.monotonic()
    assert submit(JobSpec("test.echo", {"value": 1}), backend).result(30) == {"value": 1}
    assert time.monotonic() - started < 1.8  # did not wait for both benchmarks
    for handle in long:
        handle.result(30)
