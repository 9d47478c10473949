"""When a warm pool (core.jobs.warm) starts its workers: never while a benchmark runs (``ExclusiveJobs``), and a
used worker's replacement once the server's pages leave the cores to it (``Foreground``)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["REFILL_MAX_HELD_S", "REFILL_MAX_WAIT_S", "REFILL_QUIET_S", "ExclusiveJobs", "Foreground"]

REFILL_QUIET_S = 1.0  # a used worker's replacement starts once no page has run for this long (Foreground)...
REFILL_MAX_WAIT_S = 5.0  # ...at the latest this long after its job ended or a page's wait on a job did,
REFILL_MAX_HELD_S = 60.0  # ...or this long while one does (that job takes the cores a replacement would)


class ExclusiveJobs:
    """How many jobs that must have the machine to themselves (benchmarks) run now, counted once for every pool of
    a backend: while one runs, no pool starts a worker, whichever runtime the benchmark runs on."""

    def __init__(self) -> None:
        self._running = 0
        self._lock = threading.Lock()

    @property
    def running(self) -> int:
        return self._running

    def change(self, by: int) -> None:
        with self._lock:
            self._running += by


class Foreground:
    """When a page of this server last ran, and whether one waits on a job now, shared by a backend's pools. A used
    worker's replacement imports for 0.4 CPU-seconds: started as its job ended, it took a core from the browser
    drawing the page that shows the job's result (on two cores, the sample's Decode and Partition pages answered a
    fifth later), or from the next job the page waits on (the levels of a 30,000-node model: both cores for 12 s).
    So it waits until no page waits on a job and none has run for ``REFILL_QUIET_S`` (a person reading); at most
    ``REFILL_MAX_WAIT_S`` after its job ended or the last wait on a job did (a page that reruns all the time), or
    ``REFILL_MAX_HELD_S`` while a page waits (a busy server, whose pages always wait on something). A pool's first
    workers, and a server no page touches (a command's, a test's), start at once."""

    def __init__(self) -> None:
        self._last = float("-inf")
        self._waiting = 0  # pages waiting on a job now
        self.waited_until = float("-inf")  # when the last wait ended
        self._lock = threading.Lock()

    def touch(self) -> None:
        """A page runs now."""
        self._last = time.monotonic()

    @contextmanager
    def waiting(self) -> Iterator[None]:
        """A page waits on a job of this machine's in the block; it has run until the block ends."""
        with self._lock:
            self._waiting += 1
        try:
            yield
        finally:
            with self._lock:
                self._waiting -= 1
            self.waited_until = time.monotonic()
            self.touch()

    @property
    def waited_on(self) -> bool:
        """Whether a page waits on a job now."""
        return self._waiting > 0

    def held_for(self, since: float) -> float:
        """Seconds a replacement for a job that ended at ``since`` waits still (0: start now)."""
        # once no page waits, the time one waited is not counted: the page that shows the job's result comes after
        waited = since + REFILL_MAX_HELD_S if self.waited_on else max(since, self.waited_until) + REFILL_MAX_WAIT_S
        return min(self.quiet_in(), waited - time.monotonic())

    def quiet_in(self) -> float:
        """Seconds until no page will have run for ``REFILL_QUIET_S`` (0: quiet now); while a page waits on a job,
        that long at least (asked again then)."""
        if self._waiting:
            return REFILL_QUIET_S
        return max(0.0, self._last + REFILL_QUIET_S - time.monotonic())
