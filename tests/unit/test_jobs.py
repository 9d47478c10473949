"""The worker: every way a job can end becomes its own error, and the caller always survives."""

from __future__ import annotations

import dataclasses
import itertools
import math
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
from core.jobs import JOBS, Job, JobSpec, ProcessBackend
from core.jobs.process import submit_spec
from core.settings import load_settings
from tests.unit.jobs_for_tests import Echoed, Point, progress_seen, run_spec

T = "tests.unit.jobs_for_tests"
TEST_JOBS = JOBS.with_jobs(
    *(
        Job(name=f"test.{name}", target=f"{T}:{name}")
        for name in (
            "echo",
            "segfault",
            "sleep",
            "allocate",
            "huge_allocation",
            "raise_value_error",
            "raise_intake_error",
            "raise_user_error",
            "with_progress",
            "noisy",
            "span",
            "whoami",
            "midpoint",
            "wrong_result",
            "limits_seen",
            "leave_links",
        )
    ),
    Job(name="test.exclusive_span", target=f"{T}:exclusive_span", exclusive=True),
)


def _backend(tmp_path: Path, **changes: object) -> ProcessBackend:
    settings = dataclasses.replace(load_settings(environ={}), data_dir=str(tmp_path / "data"), **changes)
    return ProcessBackend(settings, TEST_JOBS)


@pytest.fixture
def backend(tmp_path: Path) -> ProcessBackend:
    return _backend(tmp_path)


def test_typed_arguments_and_result_cross_the_boundary(backend: ProcessBackend) -> None:
    result = run_spec("test.midpoint", {"a": Point(0.0, 2.0, "a"), "b": Point(4.0, float("nan"), "b")}, backend)
    assert isinstance(result, Point)
    assert result.x == 2.0 and math.isnan(result.y) and result.label == "a-b"


def test_plain_values_come_back_as_sent(backend: ProcessBackend) -> None:
    echoed = run_spec("test.echo", {"value": [1, "two", {"three": 3.0}]}, backend)
    assert echoed == Echoed(value=[1, "two", {"three": 3.0}])


def test_an_argument_of_the_wrong_type_is_refused_with_its_name(backend: ProcessBackend) -> None:
    with pytest.raises(JobFailed, match=r"a\.x"):
        run_spec("test.midpoint", {"a": {"x": "not a number", "y": 0, "label": ""}, "b": Point(0, 0, "")}, backend)


def test_unknown_or_missing_arguments_are_refused_before_a_worker_starts(backend: ProcessBackend) -> None:
    with pytest.raises(JobError, match=r"unknown \['colour'\].*no \['b'\].*it takes a, b"):
        submit_spec(JobSpec(name="test.midpoint", args={"a": Point(0, 0, ""), "colour": "red"}), backend)


def test_a_result_that_is_not_what_the_function_declares_is_a_failure(backend: ProcessBackend) -> None:
    with pytest.raises(JobFailed, match="returned a result that does not fit Point"):
        run_spec("test.wrong_result", backend=backend)


def test_jobs_get_the_intake_limits_of_the_backends_settings(tmp_path: Path) -> None:
    hosted = _backend(tmp_path, max_nodes=123, allow_code_archives=False)
    assert run_spec("test.limits_seen", backend=hosted) == [123, False]


def test_segfault_in_native_code_is_a_crash_and_the_caller_survives(backend: ProcessBackend) -> None:
    with pytest.raises(JobCrashed, match="SIGSEGV"):
        run_spec("test.segfault", backend=backend)
    assert run_spec("test.echo", {"value": 1}, backend) == Echoed(1)


@pytest.mark.quiet  # how long a job waited
def test_job_past_its_wall_clock_limit_is_stopped(backend: ProcessBackend) -> None:
    started = time.monotonic()
    with pytest.raises(JobTimedOut, match="limit of 1 s"):
        submit_spec(JobSpec(name="test.sleep", args={"seconds": 30}, timeout_s=1), backend).result()
    assert time.monotonic() - started < 15


def test_job_past_its_memory_limit_is_stopped(backend: ProcessBackend) -> None:
    handle = submit_spec(JobSpec(name="test.allocate", args={"megabytes": 4096}, memory_mb=300), backend)
    with pytest.raises(JobOutOfMemory, match="memory limit of 300 MB"):
        handle.result(timeout=60)


def test_allocation_the_os_refuses_is_reported_as_out_of_memory(backend: ProcessBackend) -> None:
    with pytest.raises(JobOutOfMemory):
        run_spec("test.huge_allocation", backend=backend)


def test_unexpected_exception_is_a_failure_with_details(backend: ProcessBackend) -> None:
    with pytest.raises(JobFailed, match="ValueError: this is a bug in the job") as info:
        run_spec("test.raise_value_error", backend=backend)
    assert "raise_value_error" in info.value.details


def test_user_facing_errors_keep_their_class_across_the_process_boundary(backend: ProcessBackend) -> None:
    with pytest.raises(IntakeError, match="the file is not a model"):
        run_spec("test.raise_intake_error", backend=backend)


def test_every_error_a_job_may_raise_comes_back_as_itself() -> None:
    """Compare's and Tune's own errors came back as "The job 'compare.run' failed: Error: …", a failure with a
    traceback, not the sentence the person can act on: every user-facing class is known by name (the Job* ones
    are the backend's, and a sign-in refusal is the server's)."""
    import core.errors
    from core.errors import WorkbenchError, error_class

    def subclasses(cls: type) -> list[type]:
        return [c for s in cls.__subclasses__() for c in (s, *subclasses(s))]

    backend_own = {"JobError", "JobFailed", "JobCrashed", "JobTimedOut", "JobOutOfMemory", "JobCancelled"}
    server_own = {"IdentityRefused", "TargetLost"}
    for cls in subclasses(WorkbenchError):
        if cls.__module__ == core.errors.__name__ and cls.__name__ not in backend_own | server_own:
            assert error_class(cls.__name__) is cls, cls.__name__


def test_a_compare_error_in_a_worker_is_a_compare_error(backend: ProcessBackend) -> None:
    from core.errors import CompareError

    with pytest.raises(CompareError, match=r"^a CompareError the person can act on$"):
        run_spec("test.raise_user_error", {"name": "CompareError"}, backend=backend)


def test_progress_is_reported_while_running(backend: ProcessBackend) -> None:
    handle = submit_spec(JobSpec(name="test.with_progress", args={"steps": 20}), backend)
    seen = progress_seen(handle)
    assert handle.result() == 20
    assert len(seen) >= 3 and "step 20 of 20" in seen


def test_cancel_stops_the_worker(backend: ProcessBackend) -> None:
    handle = submit_spec(JobSpec(name="test.sleep", args={"seconds": 60}), backend)
    assert not handle.wait(0.5)  # waits, and says the job goes on
    handle.cancel()
    assert handle.wait(10) and handle.done()  # the page's loop wakes as soon as the job has ended
    with pytest.raises(JobCancelled):
        handle.result(timeout=10)
    assert handle.state == "cancelled"


def test_printing_jobs_do_not_corrupt_the_protocol(backend: ProcessBackend) -> None:
    assert run_spec("test.noisy", backend=backend) == "clean"


def test_unknown_job_names_list_the_known_ones(backend: ProcessBackend) -> None:
    with pytest.raises(JobError, match=r"registered jobs are: .*intake\.describe_files"):
        run_spec("no.such.job", backend=backend)


def test_the_apps_table_holds_no_test_jobs() -> None:
    assert not [name for name in JOBS.names() if name.startswith("test.")]
    assert "test.echo" in TEST_JOBS.names()


@pytest.mark.quiet  # how long a job waited
def test_exclusive_jobs_queue_and_never_overlap(backend: ProcessBackend, tmp_path: Path) -> None:
    logs = str(tmp_path / "logs")
    log = tmp_path / "logs" / "spans.txt"
    handles = [
        submit_spec(JobSpec(name="test.exclusive_span", args={"log": logs, "seconds": 0.6}), backend) for _ in range(3)
    ]
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


@pytest.mark.quiet  # how long a job waited
def test_cancelling_a_queued_job_lets_the_next_one_run(backend: ProcessBackend, tmp_path: Path) -> None:
    logs = str(tmp_path / "logs")
    log = tmp_path / "logs" / "spans.txt"
    first = submit_spec(JobSpec(name="test.exclusive_span", args={"log": logs, "seconds": 1.0}), backend)
    time.sleep(0.3)
    second = submit_spec(JobSpec(name="test.exclusive_span", args={"log": logs, "seconds": 0.1}), backend)
    third = submit_spec(JobSpec(name="test.exclusive_span", args={"log": logs, "seconds": 0.1}), backend)
    time.sleep(0.5)
    second.cancel()
    assert len(third.result(timeout=30)) == 2
    first.result()
    with pytest.raises(JobCancelled):
        second.result()
    assert len(log.read_text().splitlines()) == 2


def test_worker_runs_in_its_own_process(backend: ProcessBackend) -> None:
    worker_pid, visible = run_spec("test.whoami", backend=backend)
    assert worker_pid != os.getpid() and os.getpid() not in visible


@pytest.mark.quiet  # how long a job waited
def test_worker_processes_are_capped_and_the_rest_wait_in_order(tmp_path: Path) -> None:
    logs = str(tmp_path / "logs")
    backend = _backend(tmp_path, max_workers=1)
    log = tmp_path / "logs" / "spans.txt"
    handles = [submit_spec(JobSpec(name="test.span", args={"log": logs, "seconds": 0.4}), backend) for _ in range(3)]
    assert handles[1].state == "queued" and handles[2].queue_position in (0, 1)
    positions = {handles[2].queue_position}
    cancelled = submit_spec(JobSpec(name="test.span", args={"log": logs, "seconds": 0.4}), backend)
    cancelled.cancel()  # cancelled while waiting: it never starts and frees its place
    with pytest.raises(JobCancelled):
        cancelled.result(5)
    results = [h.result(30) for h in handles]
    spans = sorted(results)
    for (_, end), (start, _) in itertools.pairwise(spans):
        assert start >= end, "two jobs ran at once although one worker is allowed"
    assert positions <= {0, 1} and len(log.read_text().splitlines()) == 3
    assert backend.slots.running == 0 and backend.slots.waiting == []


@pytest.mark.quiet  # how long a job waited
def test_exclusive_jobs_do_not_take_worker_slots(tmp_path: Path) -> None:
    """A queue of benchmarks waits for the machine without starving everyone's quick jobs."""
    logs = str(tmp_path / "logs")
    backend = _backend(tmp_path, max_workers=1)
    long = [
        submit_spec(JobSpec(name="test.exclusive_span", args={"log": logs, "seconds": 1.0}), backend) for _ in range(2)
    ]
    started = time.monotonic()
    assert submit_spec(JobSpec(name="test.echo", args={"value": 1}), backend).result(30) == Echoed(1)
    assert time.monotonic() - started < 1.8  # did not wait for both benchmarks
    for handle in long:
        handle.result(30)


def test_a_job_that_cannot_start_ends_with_a_message_instead_of_waiting_for_ever(tmp_path: Path) -> None:
    logs = str(tmp_path / "logs")
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the data folder should be")
    settings = dataclasses.replace(load_settings(environ={}), data_dir=str(blocker))
    handle = submit_spec(
        JobSpec(name="test.exclusive_span", args={"log": logs, "seconds": 0.1}),
        ProcessBackend(settings, TEST_JOBS),
    )
    with pytest.raises(JobFailed, match="could not start"):
        handle.result(timeout=30)


def test_links_a_job_leaves_among_its_results_are_dropped_and_the_caller_is_told(
    backend: ProcessBackend, tmp_path: Path
) -> None:
    out = tmp_path / "data" / "results"
    handle = submit_spec(JobSpec(name="test.leave_links", args={"out": str(out)}), backend)
    named = handle.result(timeout=60)
    assert [p.name for p in out.iterdir()] == ["result.txt"]
    assert named == str(out / "model.onnx") and not os.path.lexists(named)
    (warning,) = handle.warnings  # pages show it (st.warning), core.jobs.run logs it for the command line
    assert "left 3 link(s) or special file(s)" in warning and "(folder, model.onnx, pipe)" in warning
