"""One job on a target of the cluster, as its caller sees it: the same handle as a local job.

A thread sends the job's files (only those the node's cache lacks, by sha256), starts the job on the target's
agent, asks it where the job stands (state, place in the queue, progress; each answer waits up to ``POLL_S``
for the job to end, so its end is heard at once), and at the end
decodes the typed result and writes the files the job made into the caller's folders. Every answer is read as
bytes and decoded into its type (core.jobs.cluster.answers): nothing from the node is unpickled. A node lost mid-job
ends the job with ``TargetLost``; an agent that died on a node that lives (its process killed) gets the job once
more, which is safe: a job reads its inputs and writes only its own fresh folders.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core import errors
from core.access import READ
from core.errors import JobCancelled, JobFailed, TargetError, TargetLost, WorkbenchError
from core.i18n import _
from core.jobs import wire
from core.jobs.cluster import answers
from core.jobs.cluster.answers import Answer, Missing, Status
from core.jobs.process import JobSpec, Progress
from core.jobs.threaded import ThreadedJob

if TYPE_CHECKING:
    from core.jobs.cluster.client import TargetBackend

__all__ = ["ClusterJob", "file_hash", "write_outputs"]

POLL_S = 0.2  # how long one question to the agent waits for the job to end (progress is this fresh)
LOST_GRACE_S = 30.0  # how long an agent that does not answer may take before its node is looked up
MAX_FOLDER_FILES = 200  # files beside a model that travel with it
PIECE_BYTES = 64 << 20  # a file travels in pieces of this size

_hashes: dict[tuple[str, int, int], str] = {}


def file_hash(path: Path) -> str:
    """The sha256 of a file, remembered by (path, size, modification time)."""
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    if key not in _hashes:
        digest = hashlib.sha256()
        with path.open("rb") as fh:
            while chunk := fh.read(1 << 20):
                digest.update(chunk)
        _hashes[key] = digest.hexdigest()
    return _hashes[key]


def _folder_files(folder: Path) -> list[Path]:
    """The plain files of a folder a job reads from: the model and what lies beside it (external data)."""
    files = sorted(p for p in folder.iterdir() if p.is_file() and not p.is_symlink())
    if len(files) > MAX_FOLDER_FILES:
        raise TargetError(
            _(
                "The folder {folder} holds {count} files; a job sent to a target takes at most "
                "{max_folder_files} (keep the model and its data files in a folder of their own)."
            ).format(folder=folder, count=len(files), max_folder_files=MAX_FOLDER_FILES)
        )
    return files


def write_outputs(outputs: list[tuple[str, str, bytes]], folders: list[str], job: str) -> None:
    """The files a job wrote on its node, into the caller's folders: only into the folders it was given, each
    under its own relative path (a node's answer is checked like a worker's)."""
    for folder, relative, data in outputs:
        parts = Path(relative).parts
        if folder not in folders or Path(relative).is_absolute() or ".." in parts or not parts:
            raise JobFailed(f"The job '{job}' sent back a file outside its folders: {relative!r} in {folder!r}")
        path = Path(folder, *parts)
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.{os.getpid()}")
        partial.write_bytes(data)
        partial.replace(path)


def _error(name: str, message: str, details: str) -> WorkbenchError:
    cls = getattr(errors, name, None)
    if isinstance(cls, type) and issubclass(cls, WorkbenchError):
        return JobFailed(message, details) if cls is JobFailed else cls(message)
    return JobFailed(message, details)


def _checked(answer: Answer) -> None:
    """Raise the error an answer carries (the agent could not do what was asked)."""
    if answer.error is not None:
        raise _error(*answer.error)


class ClusterJob(ThreadedJob):
    """A job on a target; see the module's docstring."""

    def __init__(self, backend: TargetBackend, spec: JobSpec) -> None:
        super().__init__(spec)
        self.backend = backend
        self.target = backend.target
        self.job_id = uuid.uuid4().hex
        signature = backend.registry.check_arguments(spec.name, spec.args)  # the caller's error, at once
        self._result_type = signature.result
        self._args = wire.encode(spec.args)
        paths = list(signature.paths(spec.args))
        self._reads = list(dict.fromkeys(str(Path(p).parent) for a, p in paths if a is READ))
        self._writes = list(dict.fromkeys(str(p).rstrip("/") for a, p in paths if a is not READ))
        self._cancel = threading.Event()
        self.tries = 0
        threading.Thread(target=self._run, name=f"cluster job {spec.name}", daemon=True).start()

    # -- what the caller sees (the rest of the JobHandle protocol is ThreadedJob's) ---------------------------
    @property
    def queue_position(self) -> int | None:
        return self._queue_position if self._state == "queued" else None

    @property
    def warnings(self) -> tuple[str, ...]:
        return ()  # a node sends back only the plain files its job wrote (agent.collect_outputs)

    def cancel(self) -> None:
        self._cancel.set()

    # -- inside -----------------------------------------------------------------------------------------------
    def _run(self) -> None:
        import ray

        try:
            while True:
                self.tries += 1
                try:
                    self._once()
                    break
                except ray.exceptions.RayActorError as exc:
                    if self._node_alive() and self.tries < 2 and not self._cancel.is_set():
                        self.backend.cluster.forget_agent(self.target)
                        continue  # the agent died on a node that lives: once more, from the start
                    raise self._lost(exc) from exc
        except WorkbenchError as exc:
            self._error = exc
        except ray.exceptions.RayError as exc:
            self._error = self._lost(exc)
        except Exception as exc:  # every ending becomes a message
            self._error = JobFailed(f"The job '{self.spec.name}' could not run on target '{self.target.name}': {exc}")
        finally:
            self._state = "done" if self._error is None else self._ending()
            self._finished.set()

    def _ending(self) -> str:
        return "cancelled" if isinstance(self._error, JobCancelled) else "failed"

    def _lost(self, exc: BaseException) -> TargetLost:
        return TargetLost(
            _(
                "The target '{target}' was lost while it ran '{spec}' (its node died or cannot be "
                "reached); the job did not finish. The app and the other targets keep working: run "
                "it again on another target or on this server."
            ).format(target=self.target.name, spec=self.spec.name)
        )

    def _node_alive(self) -> bool:
        import ray

        try:
            return any(n["NodeID"] == self.target.node_id and n.get("Alive") for n in ray.nodes())
        except ray.exceptions.RayError:
            return False

    def _once(self) -> None:
        agent = self.backend.cluster.agent(self.target)
        reads = self._send_files(agent)
        if self._cancel.is_set():
            raise JobCancelled(f"The job '{self.spec.name}' was cancelled.")
        limits = (self.spec.timeout_s, self.spec.memory_mb)
        policy = self.backend.policy
        submitted = agent.submit.remote(self.job_id, self.spec.name, self._args, limits, reads, self._writes, policy)
        _checked(answers.read(submitted, Answer))
        cancelled = False
        while True:
            if self._cancel.is_set() and not cancelled:
                agent.cancel.remote(self.job_id)
                cancelled = True
            status = self._poll(agent)
            if status.state == "unknown":  # the agent was started again and never heard of this job
                import ray

                raise ray.exceptions.ActorDiedError()
            self._state = status.state if status.state in ("queued", "starting", "running") else self._state
            self._queue_position = status.queue_position
            if status.progress is not None:
                self._progress = Progress(*status.progress)
            _checked(status)
            if status.result is not None:
                write_outputs(status.outputs, self._writes, self.spec.name)
                self._result = wire.decode(status.result, self._result_type)
                return

    def _poll(self, agent: Any) -> Status:
        """The agent's answer; an agent that stops answering is waited for a while, unless its node is gone."""
        import ray

        deadline = time.monotonic() + LOST_GRACE_S
        while True:
            try:
                return answers.read(agent.poll.remote(self.job_id, POLL_S), Status, timeout=5 + POLL_S)
            except (ray.exceptions.GetTimeoutError, ray.exceptions.ActorUnavailableError):
                if not self._node_alive() or time.monotonic() > deadline:
                    raise ray.exceptions.ActorDiedError() from None

    def _send_files(self, agent: Any) -> list[tuple[str, list[tuple[str, str]]]]:
        """Each folder the job reads, as (folder, [(file name, sha256)]), after sending what the node lacks."""
        reads = [(folder, [(p.name, file_hash(p)) for p in _folder_files(Path(folder))]) for folder in self._reads]
        by_hash = {sha: Path(folder) / name for folder, files in reads for name, sha in files}
        missing = answers.read(agent.missing.remote(list(by_hash)), Missing)
        _checked(missing)
        for sha in missing.hashes:
            if sha not in by_hash:
                raise TargetError(
                    _("Target '{target}' asked for a file it was not offered ({sha}…).").format(
                        target=self.target.name, sha=sha[:12]
                    )
                )
            with by_hash[sha].open("rb") as fh:
                offset, piece = 0, fh.read(PIECE_BYTES)
                while not self._cancel.is_set():
                    following = fh.read(PIECE_BYTES)
                    put = agent.put.remote(sha, offset, piece, not following, self.job_id)
                    _checked(answers.read(put, Answer))
                    if not following:
                        break
                    offset, piece = offset + len(piece), following
        return reads
