"""A worker started ahead of its one job: a command that knows the files its job will read and write starts that
job's worker first, so that the worker starts Python and imports its own modules while the command imports what
builds, sends and prints the job (issue #51: a command's two interpreters side by side, not one after the other).

The sandbox's walls are fixed when a worker starts, so this worker is started with the paths the command names.
When the job comes (core.jobs.process), it takes this worker only if the paths its own signature marks
(core.access) are exactly these, under the same settings, on the default runtime, without the network; else the
worker is stopped and the job starts one of its own. Nothing else differs from any worker's start: the same
sandbox, resource limits and environment (core.jobs.sandbox.start_worker), then the same watch on its time and
memory and the same endings once its job is sent. Until then it has read nothing: it waits for its request.

This module imports only the sandbox's (no msgspec, no job table, no records): its point is to start early.
"""

from __future__ import annotations

import atexit
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

from core.access import READ, WRITE
from core.errors import JobError
from core.jobs import sandbox
from core.jobs.sandbox import Confinement
from core.settings import Settings, load_settings

if TYPE_CHECKING:
    from core.runtime.runtimes import Runtime

__all__ = ["Ahead", "start", "stop", "take"]


@dataclass(kw_only=True)
class Ahead:
    """A worker waiting for its job: the paths its sandbox shows, under which settings, and its private folder."""

    proc: subprocess.Popen[bytes]
    scratch: str
    stderr: IO[bytes]
    confinement: Confinement
    settings: Settings
    sandboxed: bool
    started_at: float  # the wall clock when it started


_waiting: list[Ahead] = []  # at most one: a command's


def start(reads: Iterable[str | Path], writes: Iterable[str | Path] = (), imports: tuple[str, ...] = ()) -> None:
    """Start a worker whose sandbox shows ``reads`` (read-only, as a job's ReadPath arguments are shown) and
    ``writes``, for the job that will name exactly these; it imports ``imports`` (the job's modules, the libraries
    they import) while the command builds the request. Nothing is started when a path to read is missing or the
    sandbox would refuse these paths or cannot be had: the job then starts its worker as usual, and says why."""
    stop()
    read, written = [Path(p) for p in reads], [Path(p) for p in writes]
    try:
        if not all(p.exists() for p in read):
            return
    except (OSError, ValueError):  # a name too long for the system, a NUL in it: the job says what is wrong
        return
    settings = load_settings()
    confinement = Confinement.of([*((READ, str(p)) for p in read), *((WRITE, str(p)) for p in written)])
    # Whether bubblewrap can build a sandbox here is probed by the job (sandbox.require_sandbox), while this worker
    # starts: a worker started in a sandbox the probe then finds unusable is not taken (its bubblewrap has failed).
    sandboxed = settings.sandbox and shutil.which("bwrap") is not None
    if not sandboxed and settings.require_sandbox:  # the job will refuse to run without one: none starts here either
        return
    try:
        if sandboxed:
            sandbox.refuse_wide_folders(confinement, settings)
    except JobError:
        return
    scratch, stderr = "", None
    try:
        for folder in confinement.writes:
            Path(folder).mkdir(parents=True, exist_ok=True)
        scratch = sandbox.new_scratch(settings, "job-")
        stderr = tempfile.TemporaryFile()  # noqa: SIM115 - handed to the job, which closes it
        began = time.time()
        proc = sandbox.start_worker(confinement, settings, scratch, sandboxed, stderr, imports=imports)
    except OSError:  # no process or folder to be had now: the job starts its own worker, and says why it cannot
        if stderr is not None:
            stderr.close()
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)
        return
    if not _waiting:
        atexit.register(stop)
    started = Ahead(
        proc=proc,
        scratch=scratch,
        stderr=stderr,
        confinement=confinement,
        settings=settings,
        sandboxed=sandboxed,
        started_at=began,
    )
    _waiting.append(started)


def take(
    confinement: Confinement, settings: Settings, sandboxed: bool, runtime: Runtime | None, network: bool
) -> Ahead | None:
    """The worker started ahead, when a job that would start its own worker with these walls can have it (then it
    is the job's, to send its request to); else None, and a worker started for other paths is stopped."""
    try:
        ahead = _waiting.pop()  # one step: the command's own thread may be stopping it at the same moment
    except IndexError:
        return None
    python = runtime.python if runtime is not None else sys.executable
    fits = (
        ahead.confinement == confinement
        and ahead.settings == settings
        and ahead.sandboxed == sandboxed
        and (runtime is None or not runtime.root)
        and python == sys.executable
        and not network
        and ahead.proc.poll() is None
    )
    if fits:
        return ahead
    _discard(ahead)
    return None


def stop() -> None:
    """Stop a worker started ahead that no job took (its command ended first, or gave up)."""
    while True:
        try:
            ahead = _waiting.pop()
        except IndexError:
            return
        _discard(ahead)


def _discard(ahead: Ahead) -> None:
    sandbox.discard_worker(ahead.proc, ahead.scratch, ahead.stderr)
