"""The local backend's worker slots: at most so many worker processes at once, the rest waiting their turn."""

from __future__ import annotations

import threading

__all__ = ["Slots"]


class Slots:
    """At most ``limit`` worker processes at once; the rest wait in arrival order (first come, first served)."""

    def __init__(self, limit: int) -> None:
        self.limit = max(1, limit)
        self.running = 0
        self.waiting: list[object] = []
        self._cond = threading.Condition()

    def acquire(self, job: object, cancelled: threading.Event) -> bool:
        """Wait for a free slot; False when the job was cancelled while waiting."""
        with self._cond:
            self.waiting.append(job)
            try:
                while self.waiting[0] is not job or self.running >= self.limit:
                    if cancelled.is_set():
                        return False
                    self._cond.wait(0.1)
                self.running += 1
                return True
            finally:
                self.waiting.remove(job)
                self._cond.notify_all()

    def release(self) -> None:
        with self._cond:
            self.running -= 1
            self._cond.notify_all()

    def position(self, job: object) -> int | None:
        """How many jobs wait ahead of ``job``, or None when it is not waiting."""
        with self._cond:
            return self.waiting.index(job) if job in self.waiting else None
