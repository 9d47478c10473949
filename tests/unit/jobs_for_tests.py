"""Jobs that misbehave on purpose, run by the worker in tests/unit/test_jobs.py."""

from __future__ import annotations

import ctypes
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.access import ReadPath, WritePath
from core.errors import IntakeError
from core.jobs.process import Backend, JobHandle, JobSpec, submit_spec
from core.settings import IntakeLimits


def run_spec(name: str, args: dict[str, Any] | None = None, backend: Backend | None = None) -> Any:
    """Run job ``name`` to the end through the backends' own protocol (free-form arguments, as the test jobs
    below take them) and return its result, raising its error."""
    return submit_spec(JobSpec(name=name, args=args or {}), backend).result()


def progress_seen(handle: JobHandle) -> set[str]:
    """The progress messages a running job's handle showed, read until the job ended."""
    seen = set()
    while True:
        done = handle.done()  # read before the progress: the last step may land just before the job ends
        if handle.progress is not None:
            seen.add(handle.progress.message)
        if done:
            return seen
        time.sleep(0.01)


@dataclass
class Echoed:
    value: Any


@dataclass
class Point:
    x: float
    y: float
    label: str


def echo(value: Any) -> Echoed:
    return Echoed(value)


def midpoint(a: Point, b: Point) -> Point:
    return Point((a.x + b.x) / 2, (a.y + b.y) / 2, f"{a.label}-{b.label}")


def wrong_result() -> Point:
    return {"x": "one"}  # type: ignore[return-value]  # on purpose: not what the signature promises


def whoami() -> tuple[int, list[int]]:
    """This process's id and every process id it can see."""
    return os.getpid(), sorted(int(p) for p in os.listdir("/proc") if p.isdigit())


def collection_seen() -> tuple[bool, int]:
    """Whether the cyclic garbage collector is on while the job runs, and how many objects it leaves out (frozen)."""
    import gc

    return gc.isenabled(), gc.get_freeze_count()


def limits_seen(limits: IntakeLimits | None = None) -> list[Any]:
    assert limits is not None
    return [limits.max_nodes, limits.allow_code_archives]


def segfault() -> None:
    ctypes.string_at(0)  # reads address 0: SIGSEGV in native code


def sleep(seconds: float) -> str:
    time.sleep(seconds)
    return "woke up"


def allocate(megabytes: int) -> int:
    blocks = []
    for _ in range(megabytes // 64):
        blocks.append(b"\x01" * (64 << 20))  # written, so the pages are really resident
        time.sleep(0.02)
    return len(blocks)


def huge_allocation() -> int:
    return len(bytearray(1 << 46))  # 64 TB: refused by the OS at once


def raise_value_error() -> None:
    raise ValueError("this is a bug in the job")


def raise_intake_error() -> None:
    raise IntakeError("the file is not a model")


def raise_user_error(name: str) -> None:
    """Raise the user-facing error class ``name`` (core.errors), as a job of the app would."""
    import core.errors

    raise getattr(core.errors, name)(f"a {name} the person can act on")


def with_progress(steps: int, progress: Callable[[float, str], None]) -> int:
    for i in range(steps):
        progress((i + 1) / steps, f"step {i + 1} of {steps}")
        time.sleep(0.05)
    return steps


def noisy() -> str:
    print("libraries print things; the protocol must survive them")
    return "clean"


def exclusive_span(log: WritePath, seconds: float) -> list[float]:
    """Append this job's start and end time to spans.txt in ``log``; overlapping spans would mean the lock failed."""
    start = time.time()
    time.sleep(seconds)
    end = time.time()
    with (Path(log) / "spans.txt").open("a") as fh:
        fh.write(f"{start} {end}\n")
    return [start, end]


def span(log: WritePath, seconds: float) -> list[float]:
    """Like exclusive_span, for ordinary jobs (which share the worker slots)."""
    return exclusive_span(log, seconds)


_CALLS = [0]


def calls() -> int:
    """How many jobs this process has run: 1 in a fresh worker, more in one that was used again."""
    _CALLS[0] += 1
    return _CALLS[0]


def probe(model: ReadPath, out: WritePath, data_dir: str) -> dict[str, str]:
    """What a job can do with the paths it was given, and see of the data folder around them."""
    seen: dict[str, str] = {"read": Path(model).read_text()}
    try:
        with open(model, "a") as fh:
            fh.write("tampered")
        seen["write_model"] = "written"
    except OSError as exc:
        seen["write_model"] = type(exc).__name__
    (Path(out) / "result.txt").write_text("from the job")
    (Path(out) / "nested").mkdir()
    (Path(out) / "nested" / "deep.txt").write_text("deep")
    found = sorted(str(p.relative_to(data_dir)) for p in Path(data_dir).rglob("*") if p.is_file())
    seen["data_files"] = " ".join(found)
    return seen


def leave_links(out: WritePath) -> str:
    """A plain result, and beside it a link to a file outside, a link to a folder and a named pipe."""
    (Path(out) / "result.txt").write_text("plain")
    os.symlink("/etc/hostname", Path(out) / "model.onnx")
    os.symlink("/etc", Path(out) / "folder")
    os.mkfifo(Path(out) / "pipe")
    return str(Path(out) / "model.onnx")


def torch_imported() -> bool:
    """Whether the worker had imported torch when its job came (nothing here imports it)."""
    import sys

    return "torch" in sys.modules
