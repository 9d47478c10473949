"""How the warm pool (core.jobs.warm) starts its workers: side by side up to its limit, and a job that finds none
ready takes one still starting. Each test holds the workers' "ready" back until it lets them go, so what it sees
while they start does not depend on how fast this machine starts them."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from core.jobs import JobSpec, ProcessBackend, refill, warm
from core.jobs.process import submit_spec
from core.jobs.warm import WarmPool
from core.settings import load_settings
from tests.unit.test_warm import JOBS, SANDBOX


@pytest.fixture
def gate(monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Event]:
    """Until set, no started worker of a pool is seen to be ready (its start is watched as usual once it is)."""
    opened = threading.Event()
    watch = WarmPool._await_ready

    def held(pool: WarmPool, starting: warm._Starting) -> None:
        opened.wait(120)
        watch(pool, starting)

    monkeypatch.setattr(WarmPool, "_await_ready", held)
    yield opened
    opened.set()


def _backend(data: Path, max_workers: int = 0) -> tuple[ProcessBackend, WarmPool]:
    settings = load_settings(environ={})
    settings = dataclasses.replace(settings, data_dir=str(data), sandbox=SANDBOX, max_workers=max_workers)
    backend = ProcessBackend(settings, JOBS, warm=1)
    assert backend.pool is not None
    return backend, backend.pool


def _until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 60
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def _starting(pool: WarmPool) -> int:
    return pool.starting_count(False) + pool.starting_count(True)


def _all_ready(pool: WarmPool) -> bool:
    return pool.ready_count(False) == 3 and pool.ready_count(True) == 1


def test_replacements_start_side_by_side_up_to_the_server_worker_limit(tmp_path: Path, gate: threading.Event) -> None:
    """The pool keeps three workers without torch: all three start at once, unless the server's max_workers allows
    fewer, and the rest start as the first get ready; the one with torch starts once they are ready (it would slow
    the ones a page's next job waits for)."""
    _, pool = _backend(tmp_path / "wide")
    _, narrow = _backend(tmp_path / "narrow", max_workers=2)
    try:
        assert pool.start_limit() == 4 and narrow.start_limit() == 2
        _until(lambda: pool.starting_count(False) == 3, "the three workers did not start side by side")
        _until(lambda: narrow.starting_count(False) == 2, "two workers did not start side by side")
        time.sleep(0.3)
        assert _starting(narrow) == 2 and narrow.ready_count() == 0  # never a third while two start
        assert pool.starting_count(True) == 0 and pool.ready_count(True) == 0
        gate.set()
        _until(lambda: _all_ready(pool) and _all_ready(narrow), "not all got ready")
        assert _starting(pool) == _starting(narrow) == 0
    finally:
        pool.close()
        narrow.close()


def test_a_job_that_finds_none_ready_takes_one_still_starting(tmp_path: Path, gate: threading.Event) -> None:
    backend, pool = _backend(tmp_path / "data")
    try:
        _until(lambda: pool.starting_count(False) == 3, "the workers did not start")
        assert pool.ready_count(False) == 0
        handle = submit_spec(JobSpec(name="test.calls"), backend)
        _until(lambda: pool.starting_count(False) == 2, "the job did not take a starting worker")
        gate.set()
        assert handle.result(timeout=120) == 1
        assert handle.started_warm  # type: ignore[attr-defined]
    finally:
        pool.close()


def test_a_job_stops_waiting_for_a_start_that_stalls(
    tmp_path: Path, gate: threading.Event, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past its wait the job starts a worker of its own; the one it took is stopped then, and what it left removed."""
    monkeypatch.setattr(warm, "MIN_WAIT_S", 0.5)
    backend, pool = _backend(tmp_path / "data")
    try:
        _until(lambda: pool.starting_count(False) == 3, "the workers did not start")
        pool._start_s = {False: 0.01, True: 0.01}
        before = list(pool._starting)
        handle = submit_spec(JobSpec(name="test.calls"), backend)
        assert handle.result(timeout=120) == 1
        assert not handle.started_warm  # type: ignore[attr-defined]
        [taken] = [s for s in before if s.claimed]
        assert taken.abandoned  # no job's any more: stopped at once, not left to finish a start that may never end
        _until(lambda: taken.spare.proc.poll() is not None, "the worker the job left was not stopped")
        gate.set()  # the thread that watches its start reads its end: what it left is removed
        _until(lambda: not Path(taken.spare.scratch).exists(), "the stopped worker's folder was left")
        _until(lambda: pool.ready_count(False) == 3, "the pool did not get its three workers back")
    finally:
        pool.close()


def test_a_job_waiting_for_a_starting_worker_is_cancelled_at_once_and_the_worker_kept_for_the_next(
    tmp_path: Path, gate: threading.Event, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page that reruns cancels its job; the cancel took the job's lock, which the job held while it waited for
    the worker it had claimed (up to three starts' time): the page froze with it."""
    monkeypatch.setattr(warm, "MIN_WAIT_S", 60.0)
    backend, pool = _backend(tmp_path / "data")
    try:
        _until(lambda: pool.starting_count(False) == 3, "the workers did not start")
        handle = submit_spec(JobSpec(name="test.calls"), backend)
        _until(lambda: pool.starting_count(False) == 2, "the job did not take a starting worker")
        began = time.monotonic()
        handle.cancel()
        assert time.monotonic() - began < 2.0, "the cancel waited for the worker the job had claimed"
        gate.set()
        with pytest.raises(Exception, match=r"(?i)cancel"):
            handle.result(timeout=120)
        _until(lambda: pool.ready_count(False) == 3, "the claimed worker was not kept for the next job")
    finally:
        pool.close()


def test_a_used_workers_replacement_waits_until_the_pages_are_quiet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A replacement imports for 0.4 CPU-seconds: while pages run (the browser drawing the job's result) it waits,
    and starts once they have been quiet a moment; pages that never stop running hold it back for a bounded time."""
    monkeypatch.setattr(refill, "REFILL_QUIET_S", 0.5)
    monkeypatch.setattr(refill, "REFILL_MAX_WAIT_S", 2.5)
    backend, pool = _backend(tmp_path / "data")

    def replaced() -> bool:
        return pool.ready_count(False) + pool.starting_count(False) == 3

    try:
        _until(lambda: _all_ready(pool), "the pool did not fill")
        for pages_stop in (True, False):
            backend.page_runs()
            assert submit_spec(JobSpec(name="test.calls"), backend).result(timeout=120) == 1
            ended = time.monotonic()
            while time.monotonic() - ended < (1.0 if pages_stop else 4.0) and not replaced():
                backend.page_runs()  # a page runs every 0.1 s
                time.sleep(0.1)
            waited = time.monotonic() - ended
            if pages_stop:
                assert not replaced(), "the replacement started while pages ran"
                _until(replaced, "the replacement did not start once the pages were quiet")
            else:
                assert replaced() and 2.0 < waited < 4.0, f"replaced after {waited:.1f} s of pages running"
            _until(lambda: _all_ready(pool), "the replacement did not get ready")
        # a page that waits on a job (the levels of a large model: both cores for seconds) holds it back past the
        # bound, and lets it start once the wait is over and the page quiet
        with backend.page_waits():
            assert submit_spec(JobSpec(name="test.calls"), backend).result(timeout=120) == 1
            time.sleep(3.5)  # past REFILL_MAX_WAIT_S
            assert not replaced(), "the replacement started while a page waited on a job"
        time.sleep(0.4)  # the page that shows the job's result is drawn: the time waited did not count
        assert not replaced(), "the replacement started as soon as the page stopped waiting"
        _until(replaced, "the replacement did not start once the page stopped waiting")
    finally:
        pool.close()
