"""The worker process: reads one job request on stdin, runs it, writes JSON lines on its own channel.

Started by core.jobs, never imported by the app. The protocol channel is a private copy of stdout; the real
stdout is pointed at stderr so that whatever the job's libraries print cannot corrupt the messages.
"""

from __future__ import annotations

import fcntl
import importlib
import inspect
import json
import os
import resource
import sys
import time
import traceback
from pathlib import Path
from typing import IO, Any

__all__ = ["main"]


class _Channel:
    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream

    def send(self, **message: Any) -> None:
        self._stream.write(json.dumps(message, allow_nan=False) + "\n")
        self._stream.flush()


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _wait_for_machine(lock_dir: Path, channel: _Channel) -> Any:
    """Queue for the machine-wide lock in arrival order; report our place in the queue while waiting."""
    queue = lock_dir / "queue"
    queue.mkdir(parents=True, exist_ok=True)
    ticket = queue / f"{time.time_ns():020d}-{os.getpid()}"
    ticket.touch()
    lock_file = open(lock_dir / "exclusive.lock", "a+")  # noqa: SIM115 - held until the process exits
    last_position = -1
    while True:
        ahead = 0
        for other in sorted(queue.iterdir()):
            if other.name >= ticket.name:
                break
            try:
                pid = int(other.name.rsplit("-", 1)[1])
            except (IndexError, ValueError):
                continue
            if _pid_alive(pid):
                ahead += 1
            else:
                other.unlink(missing_ok=True)  # a waiter that died without cleaning up
        if ahead == 0:
            try:
                fcntl.flock(lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
                ticket.unlink(missing_ok=True)
                return lock_file
            except BlockingIOError:
                ahead = 0  # the running job has left the queue but still holds the lock
        if ahead != last_position:
            channel.send(type="queued", position=ahead)
            last_position = ahead
        time.sleep(0.1)


def main() -> int:
    protocol = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    channel = _Channel(protocol)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a crash must not litter the disk with core files

    request = json.loads(sys.stdin.read())
    machine_lock = None  # held (open and locked) until this process exits
    if request.get("exclusive"):
        machine_lock = _wait_for_machine(Path(request["lock_dir"]), channel)
    channel.send(type="started", pid=os.getpid())

    def progress(fraction: float, message: str = "") -> None:
        channel.send(type="progress", fraction=max(0.0, min(1.0, float(fraction))), message=message)

    try:
        module_name, func_name = request["target"].split(":")
        func = getattr(importlib.import_module(module_name), func_name)
        args = dict(request.get("args") or {})
        if "progress" in inspect.signature(func).parameters:
            args["progress"] = progress
        from core.records import to_jsonable

        channel.send(type="result", value=to_jsonable(func(**args)))
    except MemoryError:
        channel.send(type="error", error="MemoryError", message="out of memory")
    except Exception as exc:  # every error goes back to the caller as a message, never a dead pipe
        from core.errors import WorkbenchError

        if isinstance(exc, WorkbenchError):
            channel.send(type="error", error=type(exc).__name__, message=str(exc))
        else:
            channel.send(
                type="error",
                error="JobFailed",
                exc_type=type(exc).__name__,
                message=str(exc)[:2000],
                traceback=traceback.format_exc()[-8000:],
            )
    del machine_lock
    return 0


if __name__ == "__main__":
    sys.exit(main())
