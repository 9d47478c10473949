"""The actor that runs jobs on one node of the cluster (one per client and node, started by the client).

It runs each job exactly as the app's own server does, with a ``ProcessBackend`` on its node: a fresh worker
process in the sandbox, the same time and memory limits, the same errors; benchmarks wait for the node's own
machine-wide lock, so they are exclusive per target whichever client sent them. Files a job reads arrive once, by
content hash, into the node's cache (``<data_dir>/cluster-cache``, shared by every agent of the node) and are
linked into the job's folder; folders it writes are empty folders there, whose files go back to the client with
the result. Every method answers in bytes (core.jobs.cluster.answers: MessagePack, errors as their class name and
message), which the client reads without unpickling anything.

Each client starts its own agents, unnamed, and they die with it: a client never takes a handle to an actor
someone else made, because Ray builds such a handle by unpickling that actor's class from the cluster.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import os
import shutil
import threading
import time
import traceback
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, ParamSpec

import msgspec

from core.access import READ, Access, map_paths
from core.errors import WorkbenchError
from core.i18n import _
from core.jobs import wire
from core.jobs.cluster.answers import Answer, Missing, Status, encode
from core.jobs.machine import pid_alive
from core.jobs.process import JobHandle, JobSpec, ProcessBackend
from core.settings import load_settings

__all__ = ["CACHE_FOLDER", "JOBS_FOLDER", "TargetAgent", "collect_outputs", "relocate", "with_target"]

_P = ParamSpec("_P")

CACHE_FOLDER = "cluster-cache"
JOBS_FOLDER = "cluster-jobs"
MAX_OUTPUT_FILES = 2000  # what a job may write and send back
# the app's settings a job brings to the node, so a hosted app's tighter limits hold wherever its jobs run
POLICY = ("worker_timeout_s", "worker_memory_mb", "max_nodes", "max_initializer_mb", "allow_code_archives")
UNHEARD_S = 300.0  # a job whose client has not asked about it this long is cancelled and forgotten


def relocate(value: Any, moves: dict[str, str]) -> Any:
    """``value`` with every string that is a path under one of ``moves``' folders moved to the folder it maps
    to (a result names the files of its job's folders on the node; the client has them elsewhere)."""
    if isinstance(value, str):
        for old, new in moves.items():
            if value == old or value.startswith(old + "/"):
                return new + value[len(old) :]
        return value
    if isinstance(value, list):
        return [relocate(v, moves) for v in value]
    if isinstance(value, tuple):
        return tuple(relocate(v, moves) for v in value)
    if isinstance(value, dict):
        return {relocate(k, moves): relocate(v, moves) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changed = {f.name: relocate(getattr(value, f.name), moves) for f in dataclasses.fields(value)}
        return dataclasses.replace(value, **{k: v for k, v in changed.items() if v is not getattr(value, k)})
    return value


def with_target(value: Any, target: str) -> Any:
    """A result that carries the environment it ran in (core.runtime.machine.Environment), marked with the
    target it ran on."""
    env: Any = getattr(value, "environment", None)
    result: Any = value
    if not dataclasses.is_dataclass(env) or isinstance(env, type):
        return value
    if not dataclasses.is_dataclass(result) or isinstance(result, type):
        return value
    if "target" not in {f.name for f in dataclasses.fields(env)}:
        return value
    return dataclasses.replace(result, environment=dataclasses.replace(env, target=target))


@dataclasses.dataclass
class _NodeJob:
    handle: JobHandle
    folder: Path
    moves: dict[str, str]  # the job's folders here -> the client's
    writes: list[tuple[Path, str]]  # (folder here, the client's folder)
    heard: float = dataclasses.field(default_factory=time.monotonic)  # when its client last asked about it


def collect_outputs(writes: list[tuple[Path, str]]) -> list[tuple[str, str, bytes]]:
    """(the client's folder, relative path, bytes) of each plain file the job wrote; links and odd files stay
    behind (the worker is untrusted: what comes back is only what it wrote into its own folders)."""
    found: list[tuple[str, str, bytes]] = []
    for here, theirs in writes:
        for root, _dirs, files in os.walk(here):
            for name in files:
                path = Path(root) / name
                if path.is_symlink() or not path.is_file():
                    continue
                if len(found) >= MAX_OUTPUT_FILES:
                    raise WorkbenchError(
                        _("The job wrote more than {max_output_files} files; none were sent back.").format(
                            max_output_files=MAX_OUTPUT_FILES
                        )
                    )
                found.append((theirs, path.relative_to(here).as_posix(), path.read_bytes()))
    return found


def _sweep(jobs: Path) -> None:
    """Remove the job folders of agents that are gone (died with their client or their node): each agent's
    folder is named after its process."""
    for folder in jobs.iterdir() if jobs.is_dir() else ():
        pid = folder.name.split("-")[0]
        if not (pid.isdigit() and pid_alive(int(pid))):
            shutil.rmtree(folder, ignore_errors=True)


def _answer(work: Callable[[], Answer]) -> bytes:
    """``work``'s answer as bytes; an error becomes an answer that carries it (class name, message, details):
    a WorkbenchError as itself, anything else as JobFailed."""
    try:
        return encode(work())
    except WorkbenchError as exc:
        return encode(Answer(error=(type(exc).__name__, str(exc), str(getattr(exc, "details", "")))))
    except Exception as exc:  # the agent's own failure: told as a message, never as a pickled exception
        message = f"The node's agent failed: {type(exc).__name__}: {exc}"
        return encode(Answer(error=("JobFailed", message, traceback.format_exc())))


def _answered(method: Callable[_P, Answer]) -> Callable[_P, bytes]:
    """``method``, answering in bytes (``_answer``): what it returns, or the error it raised."""

    @functools.wraps(method)
    def answered(*args: _P.args, **kwargs: _P.kwargs) -> bytes:
        return _answer(lambda: method(*args, **kwargs))

    return answered


class TargetAgent:
    """Runs one client's jobs on its node; its methods are called concurrently (a threaded actor), and each
    answers in bytes (core.jobs.cluster.answers)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.settings = load_settings()
        self.backend = ProcessBackend(self.settings)
        self._backends: dict[tuple[Any, ...], ProcessBackend] = {}  # one per policy jobs came with
        data = Path(self.settings.data_dir)
        self.cache = data / CACHE_FOLDER
        self.cache.mkdir(parents=True, exist_ok=True)
        _sweep(data / JOBS_FOLDER)
        self.jobs_root = data / JOBS_FOLDER / f"{os.getpid()}-{uuid.uuid4().hex[:8]}"  # this agent's own
        self.jobs_root.mkdir(parents=True)
        self.jobs: dict[str, _NodeJob] = {}
        self._lock = threading.Lock()

    @_answered
    def missing(self, hashes: list[str]) -> Answer:
        """Which of these files (by sha256) the node's cache lacks (a ``Missing``)."""
        return Missing(hashes=[h for h in hashes if not (self.cache / h).is_file()])

    @_answered
    def put(self, sha256: str, offset: int, data: bytes, last: bool, sender: str) -> Answer:
        """Write a piece of a file at ``offset``; with the ``last`` piece the whole file is checked against its
        sha256 and kept in the cache under it (pieces keep a large model from needing its size in the object
        store at once)."""
        partial = self.cache / f".{sha256}.{sender}.partial"  # two clients may send the same file at once
        with partial.open("r+b" if offset else "wb") as fh:
            fh.seek(offset)
            fh.write(data)
        if not last:
            return Answer()
        digest = hashlib.sha256()
        with partial.open("rb") as fh:
            while chunk := fh.read(1 << 20):
                digest.update(chunk)
        if digest.hexdigest() != sha256:
            partial.unlink(missing_ok=True)
            raise WorkbenchError(
                _("A file sent to target '{name}' arrived damaged (its sha256 differs).").format(name=self.name)
            )
        partial.replace(self.cache / sha256)
        return Answer()

    @_answered
    def submit(
        self,
        job_id: str,
        name: str,
        args: bytes,
        limits: tuple[float | None, int | None],
        reads: list[tuple[str, list[tuple[str, str]]]],
        writes: list[str],
        policy: dict[str, Any] | None = None,
    ) -> Answer:
        """Start job ``job_id``: ``reads`` are (the client's folder, [(file name, sha256)]) of files already in
        the cache, ``writes`` the client's folders the job writes into, ``policy`` the caller's settings named in
        ``POLICY`` (its limits; a caller that requires the sandbox gets it or an error, never a job without)."""
        self._forget_unheard()
        folder = self.jobs_root / job_id
        moves: dict[str, str] = {}
        for k, (theirs, files) in enumerate(reads):
            here = folder / "in" / str(k)
            here.mkdir(parents=True)
            for file_name, sha256 in files:
                os.link(self.cache / sha256, here / Path(file_name).name)
            moves[theirs] = str(here)
        out = []
        for k, theirs in enumerate(writes):
            here = folder / "out" / str(k)
            here.mkdir(parents=True)
            moves[theirs] = str(here)
            out.append((here, theirs))
        try:
            typed = self._typed_args(name, args, moves)
            handle = self._backend(policy or {}).submit(
                JobSpec(name=name, args=typed, timeout_s=limits[0], memory_mb=limits[1])
            )
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        with self._lock:
            self.jobs[job_id] = _NodeJob(handle, folder, {v: k for k, v in moves.items()}, out)
        return Answer()

    def _backend(self, policy: dict[str, Any]) -> ProcessBackend:
        """The node's backend under the caller's limits (the node's own settings for the rest: its folders)."""
        changes = {k: v for k, v in policy.items() if k in POLICY}
        if policy.get("require_sandbox"):
            changes["require_sandbox"] = True
        key = tuple(sorted(changes.items()))
        with self._lock:
            if key not in self._backends:
                self._backends[key] = (
                    ProcessBackend(dataclasses.replace(self.settings, **changes)) if key else self.backend
                )
            return self._backends[key]

    def _typed_args(self, name: str, args: bytes, moves: dict[str, str]) -> dict[str, Any]:
        raw: dict[str, msgspec.Raw] = wire.decode(args, dict[str, msgspec.Raw])
        signature = self.backend.registry.check_arguments(name, raw)

        def here(access: Access, path: str) -> str:
            if access is READ:
                parent, _, base = path.rpartition("/")
                return f"{moves[parent]}/{base}" if parent in moves else path
            return moves.get(path.rstrip("/"), path)

        return {
            key: map_paths(wire.decode(value, signature.parameters[key]), signature.marked[key], here)
            for key, value in raw.items()
        }

    @_answered
    def poll(self, job_id: str, wait_s: float = 0.0) -> Status:
        """Where the job stands (a ``Status``), after waiting up to ``wait_s`` for it to end (so the caller hears
        of the end at once, without polling fast); once it has ended, its result (or error) and the files it
        wrote, after which the node forgets it."""
        with self._lock:
            job = self.jobs.get(job_id)
        if job is None:
            return Status(state="unknown")
        job.heard = time.monotonic()
        handle = job.handle
        with contextlib.suppress(TimeoutError, WorkbenchError):  # its ending is read below
            handle.result(timeout=wait_s)
        progress = handle.progress
        status = Status(
            state=handle.state,
            queue_position=handle.queue_position,
            progress=(progress.fraction, progress.message) if progress else None,
        )
        if not handle.done():
            return status
        try:
            value = with_target(relocate(handle.result(), job.moves), self.name)
            ended = Status(state=handle.state, result=wire.encode(value), outputs=collect_outputs(job.writes))
        except WorkbenchError as exc:
            error = (type(exc).__name__, str(exc), str(getattr(exc, "details", "")))
            ended = Status(state=handle.state, error=error)
        finally:
            with self._lock:
                self.jobs.pop(job_id, None)
            shutil.rmtree(job.folder, ignore_errors=True)
        return ended

    def cancel(self, job_id: str) -> bytes:
        with self._lock:
            job = self.jobs.get(job_id)
        if job is not None:
            job.handle.cancel()
        return encode(Answer())

    def _forget_unheard(self) -> None:
        """Jobs whose client has gone (the app or command line that sent them died): cancelled and forgotten, so
        their folders and results do not pile up on the node."""
        now = time.monotonic()
        with self._lock:
            gone = [job_id for job_id, job in self.jobs.items() if now - job.heard > UNHEARD_S]
        for job_id in gone:
            self.forget(job_id)

    def forget(self, job_id: str) -> None:
        """Cancel a job and drop it at once, with its folder."""
        with self._lock:
            job = self.jobs.pop(job_id, None)
        if job is not None:
            job.handle.cancel()
            with contextlib.suppress(TimeoutError, WorkbenchError):
                job.handle.result(timeout=10)
            shutil.rmtree(job.folder, ignore_errors=True)
