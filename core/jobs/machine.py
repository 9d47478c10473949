"""The machine-wide queue for jobs that must run alone (they measure time): tickets in arrival order, and a
``flock`` held by the process that started the job, never by the job's own (untrusted) worker.

The lock lives as long as the file descriptor in the starting process (the server or the command line): if that
process dies, even by ``kill -9``, the kernel releases the lock, and its worker dies with it. Tickets of dead
processes are swept by whoever waits next, so a crash never leaves a queue that waits for ever.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import IO

__all__ = ["MachineLock", "pid_alive"]

_POLL_S = 0.1


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (another user's, which we may not signal, runs as far as we know)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class MachineLock:
    """The lock of one machine (one lock folder), shared by every process that runs exclusive jobs."""

    def __init__(self, lock_dir: Path) -> None:
        self.queue = lock_dir / "queue"
        self.path = lock_dir / "exclusive.lock"

    def acquire(self, cancelled: threading.Event, on_position: Callable[[int], None]) -> IO[str] | None:
        """Wait in line; the open, locked file once it is our turn, or None when cancelled while waiting.
        ``on_position`` hears how many jobs are ahead whenever that changes."""
        self.queue.mkdir(parents=True, exist_ok=True)
        ticket = self.queue / f"{time.time_ns():020d}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        ticket.touch()
        handle = open(self.path, "a+")  # noqa: SIM115 - the caller holds it for the job's life
        last = -1
        try:
            while not cancelled.is_set():
                ahead = self._ahead_of(ticket.name)
                if ahead == 0:
                    try:
                        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        return handle
                    except BlockingIOError:
                        pass  # the running job has left the queue but still holds the lock
                if ahead != last:
                    on_position(ahead)
                    last = ahead
                time.sleep(_POLL_S)
            handle.close()
            return None
        except BaseException:
            handle.close()
            raise
        finally:
            ticket.unlink(missing_ok=True)

    def _ahead_of(self, name: str) -> int:
        ahead = 0
        for other in sorted(self.queue.iterdir()):
            if other.name >= name:
                break
            try:
                pid = int(other.name.split("-")[1])
            except (IndexError, ValueError):
                continue
            if pid_alive(pid):
                ahead += 1
            else:
                other.unlink(missing_ok=True)  # a waiter whose process died without cleaning up
        return ahead

    @staticmethod
    def release(handle: IO[str] | None) -> None:
        if handle is not None:
            handle.close()  # closing the descriptor releases the flock
