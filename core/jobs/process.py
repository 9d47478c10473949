"""Run heavy or untrusted work in an isolated worker process, with limits, progress, cancel and a queue.

A job is a registered name (core.jobs.registry), typed arguments and a typed result. ``submit`` hands it to
a backend; the default backend starts a fresh Python process per job (core.jobs.worker), watches its
wall-clock time and memory from the outside, and turns every way a job can end into its own error. A cluster
backend (Ray) can implement the same ``Backend`` protocol: ``submit(spec) -> JobHandle``.

A request's ``runtime`` (core.runtime.runtimes) starts its worker from that runtime's Python and warm pool, in the same
sandbox and limits; on a cluster target, the node's own runtimes (its agent reads the same field).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Generic, Protocol

import msgspec

from core import i18n
from core.errors import JobCancelled, JobError, JobFailed, WorkbenchError
from core.jobs import ahead, outputs, sandbox, wire
from core.jobs.endings import MAX_PROCESSES, ending_error
from core.jobs.machine import MachineLock
from core.jobs.registry import JOBS, Job, JobRegistry, JobSignature, Request, Result
from core.jobs.sandbox import Confinement
from core.jobs.slots import Slots
from core.jobs.threaded import ThreadedJob
from core.runtime.runtimes import Runtime, asked_runtime, runtime_named
from core.settings import Settings, load_settings

if TYPE_CHECKING:  # loaded with the first warm pool (a command's one-off backend keeps none)
    from core.jobs.warm import RuntimePools, Spare, Staging, WarmPool

__all__ = [
    "Backend",
    "JobHandle",
    "JobSpec",
    "ProcessBackend",
    "Progress",
    "TypedHandle",
    "run",
    "submit",
    "submit_spec",
]

_POLL_S = 0.05


@dataclass(frozen=True, kw_only=True)
class JobSpec:
    """What to run (a registered name and its typed arguments) and under which limits; ``None`` limits come
    from the backend's settings."""

    name: str
    args: dict[str, Any] = field(default_factory=dict)
    timeout_s: float | None = None
    memory_mb: int | None = None


@dataclass(frozen=True)
class Progress:
    fraction: float
    message: str


class JobHandle(Protocol):
    """A submitted job, as the caller sees it."""

    @property
    def state(self) -> str:
        """One of queued, starting, running, done, failed, cancelled."""

    @property
    def queue_position(self) -> int | None:
        """How many jobs are ahead of this one while it waits, else None."""

    @property
    def progress(self) -> Progress | None: ...

    @property
    def warnings(self) -> tuple[str, ...]:
        """What the caller should be told beside the result, once the job has ended: the links and other special
        files the job left among its results, which were dropped (core.jobs.outputs)."""

    def done(self) -> bool: ...

    def wait(self, timeout: float | None) -> bool:
        """Whether the job has ended, waiting at most ``timeout`` seconds (None: as long as it runs) for it to (a
        page's progress loop wakes the moment its job ends rather than at its next tick)."""

    def cancel(self) -> None: ...

    def result(self, timeout: float | None = None) -> Any:
        """The job's result, of the type its function declares; raises the job's error (a WorkbenchError)."""


class Backend(Protocol):
    def submit(self, spec: JobSpec) -> JobHandle: ...


class _ProcessJob(ThreadedJob):
    """One job: a thread that waits for its turn (a worker slot, or the machine for exclusive jobs), starts the
    worker, reads its messages and cleans up; a second thread watches its time and memory. The worker is
    started by the job's own thread and dies with it, so it dies with the server or command line too."""

    def __init__(
        self,
        spec: JobSpec,
        job: Job,
        signature: JobSignature,
        settings: Settings,
        slots: Slots,
        pool: WarmPool | None = None,
        runtime: Runtime | None = None,
    ) -> None:
        super().__init__(spec)
        self._runtime = runtime  # whose Python the worker starts from (None: the app's own)
        self._settings = settings
        self._result_type = signature.result
        self._timeout_s = spec.timeout_s if spec.timeout_s is not None else settings.worker_timeout_s
        self._memory_bytes = (spec.memory_mb if spec.memory_mb is not None else settings.worker_memory_mb) << 20
        self._lock = threading.Lock()
        self._kill_reason: str | None = None
        self._started_at: float | None = None
        self._cancel_requested = threading.Event()
        self._proc: subprocess.Popen[bytes] | None = None
        # Exclusive jobs wait for the machine without taking a slot: a queue of benchmarks must not starve
        # everyone else's quick jobs.
        self._exclusive = job.exclusive
        self._slots = slots
        self.peak_rss_bytes = 0
        # Encoded here, in the caller's thread: an argument that cannot be sent is the caller's error, at once.
        self._request = wire.Request(
            target=job.target,
            args=msgspec.Raw(wire.encode(spec.args)),
            limits=msgspec.Raw(wire.encode(settings.intake_limits)),
            language=i18n.language(),  # the caller's run's: its errors come back in the reader's language
        )
        self._pool = pool if job.warm else None
        self._torch = job.torch  # which kind of pre-started worker it takes
        self._staged: tuple[Spare, Staging] | None = None
        self._spawned_at = 0.0  # the wall clock when its worker started, a second early
        self._dropped: list[str] = []  # what the job left among its results that is not a plain file or folder
        self._counted = False  # told the pool it started (so that it is told it ended)
        self._confinement = Confinement.of(signature.paths(spec.args))
        self._sandboxed = sandbox.require_sandbox(settings)
        if job.network and settings.hosted:
            raise JobError(
                f"The job {job.name} reaches other machines over the network, which this hosted instance never lets "
                "a job do; run it from a local instance (mode = local)."
            )
        self._network = job.network
        if self._sandboxed:
            sandbox.refuse_wide_folders(self._confinement, settings)
        self._stderr: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 - closed in _finish
        threading.Thread(target=self._run, name=f"job {spec.name}", daemon=True).start()

    def _wait_for_turn(self) -> Any:
        """(True, the machine lock or None) once the job may start; (False, None) when cancelled first."""
        if self._exclusive:
            held = MachineLock(self._settings.lock_dir).acquire(self._cancel_requested, self._queued_at)
            return held is not None, held
        return self._slots.acquire(self, self._cancel_requested), None

    def _queued_at(self, position: int) -> None:
        self._queue_position = position

    def _run(self) -> None:
        turn, machine = False, None
        scratch: str | None = None
        final: wire.Finished | wire.Failed | None = None
        try:
            turn, machine = self._wait_for_turn()
            # a pre-started worker is taken outside the lock: taking one still starting waits for it, and a cancel
            # (which takes the lock) must not wait with it
            taken = self._take_warm() if turn and self._kill_reason is None else None
            with self._lock:
                if turn and self._kill_reason is None:  # not cancelled while waiting, or just as its turn came
                    self._state = "starting"
                    scratch = self._start(taken)
                elif taken is not None:  # cancelled while its worker got ready: ready for the next job instead
                    self._give_back(taken)
            if self._proc is not None:
                threading.Thread(target=self._watch, daemon=True).start()
                final = self._read_messages()
        except BaseException as exc:  # a worker that could not even start
            self._error = JobFailed(f"The worker for '{self.spec.name}' could not start: {exc}")
            if self._proc is not None and self._proc.poll() is None:
                sandbox.kill_worker(self._proc)
                self._proc.wait()
        finally:
            if self._proc is not None:
                self._bring_back()
            # everything is given back before the caller hears that the job has ended
            if turn and not self._exclusive:
                self._slots.release()
            MachineLock.release(machine)
            if self._pool is not None and self._counted:
                self._pool.job_ended(self._exclusive)
            if scratch is not None:
                shutil.rmtree(scratch, ignore_errors=True)
            self._finish(final)

    def _bring_back(self) -> None:
        """Once the worker has ended: what it wrote, as the caller may read it. Links and other special files it
        left are dropped (core.jobs.outputs); a pre-started worker's files are moved into their real folders."""
        try:
            dropped: list[str] = []
            if self._staged is not None:
                from core.jobs import warm  # loaded already, with the pool whose worker took the job

                dropped = warm.collect_outputs(*self._staged)
            # and in the real folders (a job not staged, such as any without the sandbox, wrote there itself)
            since = self._spawned_at
            self._dropped = dropped + [d for w in self._confinement.writes for d in outputs.drop_links(Path(w), since)]
        except OSError as exc:
            self._error = self._error or JobFailed(f"The results of '{self.spec.name}' could not be kept: {exc}")

    def _take_warm(self) -> tuple[Spare, Staging] | None:
        """A pre-started worker for this job and where its paths go in it (core.jobs.warm's take), or None."""
        if self._pool is None:
            return None
        return self._pool.take(self._confinement, self._memory_bytes, self._torch)

    def _give_back(self, taken: tuple[Spare, Staging]) -> None:
        assert self._pool is not None
        self._pool.keep(taken[0], self._torch)

    def _start(self, taken: tuple[Spare, Staging] | None) -> str:
        """Hand the job to the pre-started worker ``taken`` (ready, its paths can be staged there), else start a
        worker of its own; the worker's private folder, removed when the job ends."""
        for folder in self._confinement.writes:
            Path(folder).mkdir(parents=True, exist_ok=True)
        self._spawned_at = time.time() - 1.0  # what the job makes in its folders is newer (ctime, coarse clock)
        if self._pool is not None:
            self._pool.job_started(self._exclusive)
            self._counted = True
        if taken is None:
            return self._started_ahead() or self._spawn(sandbox.new_scratch(self._settings, "job-"))
        from core.jobs import warm  # loaded already, with the pool

        spare, staging = taken
        self._staged = taken
        self._stderr.close()
        self._stderr = spare.stderr
        self._proc = spare.proc
        warm.stage(spare, staging)
        request = msgspec.structs.replace(self._request, links=staging.links())
        assert self._proc.stdin is not None
        self._proc.stdin.write(wire.encode(request))
        self._proc.stdin.close()
        return spare.scratch

    def _spawn(self, scratch: str) -> str:
        """Start the worker (in its sandbox when there is one), with ``scratch`` as its private folder."""
        network, runtime = self._network, self._runtime
        self._proc = sandbox.start_worker(
            self._confinement, self._settings, scratch, self._sandboxed, self._stderr, network=network, runtime=runtime
        )
        self._send()
        return scratch

    def _started_ahead(self) -> str | None:
        """The worker a command started ahead for this very job (core.jobs.ahead), when its walls are this job's:
        its private folder; None when there is none."""
        started = ahead.take(self._confinement, self._settings, self._sandboxed, self._runtime, self._network)
        if started is None:
            return None
        self._spawned_at = min(self._spawned_at, started.started_at - 1.0)
        self._stderr.close()
        self._stderr, self._proc = started.stderr, started.proc
        self._send()
        return started.scratch

    def _send(self) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        self._proc.stdin.write(wire.encode(self._request))
        self._proc.stdin.close()

    # -- what the caller sees (the rest is ThreadedJob's) ----------------------------------------------
    @property
    def started_warm(self) -> bool:
        """Whether the job went to a worker started before it came (core.jobs.warm)."""
        return self._staged is not None

    @property
    def queue_position(self) -> int | None:
        if self._state != "queued":
            return None
        return self._queue_position if self._exclusive else self._slots.position(self)

    @property
    def warnings(self) -> tuple[str, ...]:
        return (outputs.dropped_warning(self.spec.name, self._dropped),) if self._dropped else ()

    def cancel(self) -> None:
        self._kill("cancelled")

    # -- inside ---------------------------------------------------------------------------------------
    def _kill(self, reason: str) -> None:
        with self._lock:
            if self._finished.is_set() or self._kill_reason is not None:
                return
            self._kill_reason = reason
            self._cancel_requested.set()
            proc = self._proc
        if proc is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)

    def _read_messages(self) -> wire.Finished | wire.Failed | None:
        assert self._proc is not None and self._proc.stdout is not None
        final: wire.Finished | wire.Failed | None = None
        while (payload := wire.read_frame(self._proc.stdout)) is not None:
            message = wire.decode_message(payload)
            if isinstance(message, wire.Started):
                self._started_at = time.monotonic()
                self._state = "running"
            elif isinstance(message, wire.ProgressReport):
                self._progress = Progress(message.fraction, message.message)
            elif isinstance(message, (wire.Finished, wire.Failed)):
                final = message
        self._proc.stdout.close()
        self._proc.wait()
        return final

    def _watch(self) -> None:
        assert self._proc is not None
        pid = self._proc.pid
        while not self._finished.is_set() and self._proc.poll() is None:
            if self._started_at is not None and time.monotonic() - self._started_at > self._timeout_s:
                self._kill("timeout")
                return
            rss, processes = sandbox.tree_usage(pid)
            self.peak_rss_bytes = max(self.peak_rss_bytes, rss)
            # a fork bomb: too many processes, or many copies whose memory (shared pages counted in each) passes
            # the limit before there are too many
            if processes > MAX_PROCESSES or (rss > self._memory_bytes and processes > 8):
                self._kill(f"processes:{processes}")
                return
            if rss > self._memory_bytes:
                self._kill("memory")
                return
            time.sleep(_POLL_S)

    def _stderr_tail(self, limit: int = 4000) -> str:
        self._stderr.seek(0, os.SEEK_END)
        size = self._stderr.tell()
        self._stderr.seek(max(0, size - limit))
        return self._stderr.read().decode(errors="replace")

    def _decoded(self, final: wire.Finished) -> tuple[Any, WorkbenchError | None]:
        try:
            return wire.decode(final.value, self._result_type), None
        except wire.WireError as exc:
            return None, JobFailed(f"The job '{self.spec.name}' returned a result that {exc}.")

    def _finish(self, final: wire.Finished | wire.Failed | None) -> None:
        error: WorkbenchError | None = self._error  # set when the worker could not start
        if error is None and isinstance(final, wire.Finished) and self._kill_reason is None:
            self._result, error = self._decoded(final)
        elif error is None:
            code = self._proc.returncode if self._proc is not None else None
            if self._sandboxed and code is not None and code > 128:  # bubblewrap exits 128 + the signal's number
                code = 128 - code
            failure = final if isinstance(final, wire.Failed) else None
            error = ending_error(
                self.spec.name, self._kill_reason, failure, code, (self._timeout_s, self._memory_bytes >> 20)
            )
            if isinstance(error, JobFailed) and not error.details:
                error.details = self._stderr_tail()
        self._error = error
        self._state = "done" if error is None else ("cancelled" if isinstance(error, JobCancelled) else "failed")
        self._stderr.close()
        self._finished.set()


class ProcessBackend:
    """Runs each job in a fresh local Python process, at most ``settings.max_workers`` at once."""

    def __init__(self, settings: Settings | None = None, registry: JobRegistry = JOBS, *, warm: int = 0) -> None:
        """``warm``: how many workers to keep started ahead (core.jobs.warm); a server's backend keeps
        ``settings.warm_workers``, a one-off command none."""
        self.settings = settings or load_settings()
        self.registry = registry
        self.slots = Slots(self.settings.worker_limit)
        self._pools: RuntimePools | None = None
        if warm > 0:
            from core.jobs.warm import RuntimePools  # a command's one-off backend keeps no pool: not loaded there

            self._pools = RuntimePools(self.settings, sandbox.require_sandbox(self.settings), warm)
        self.pool = self._pools.default if self._pools is not None else None  # the default runtime's

    def pool_for(self, runtime: Runtime) -> WarmPool | None:
        """The warm pool of ``runtime`` (core.jobs.warm.RuntimePools); None when this backend keeps none."""
        return self._pools.pool_for(runtime) if self._pools is not None else None

    def page_runs(self) -> None:
        """A page of this server runs now: the warm pools start replacements once the pages are quiet
        (core.jobs.refill.Foreground)."""
        if self._pools is not None:
            self._pools.foreground.touch()

    def page_waits(self) -> contextlib.AbstractContextManager[None]:
        """A page waits on a job of this machine's in the block: the warm pools start no replacement meanwhile
        (core.jobs.refill.Foreground)."""
        return self._pools.foreground.waiting() if self._pools is not None else contextlib.nullcontext()

    def submit(self, spec: JobSpec) -> JobHandle:
        job = self.registry.get(spec.name)
        signature = self.registry.check_arguments(spec.name, spec.args)
        runtime = runtime_named(asked_runtime(spec.args.get("request")))  # one this machine lacks: refused at once
        pool = self.pool_for(runtime)
        return _ProcessJob(spec, job, signature, self.settings, self.slots, pool, runtime)


def submit_spec(spec: JobSpec, backend: Backend | None = None) -> JobHandle:
    """Start a job by its name in the job table (the backends' own protocol) and return its handle at once."""
    return (backend or ProcessBackend()).submit(spec)


class TypedHandle(Generic[Result]):
    """A handle whose ``result`` has the type its job declares (what ``submit`` gives a caller)."""

    def __init__(self, handle: JobHandle) -> None:
        self.handle = handle

    @property
    def state(self) -> str:
        return self.handle.state

    @property
    def queue_position(self) -> int | None:
        return self.handle.queue_position

    @property
    def progress(self) -> Progress | None:
        return self.handle.progress

    @property
    def warnings(self) -> tuple[str, ...]:
        return self.handle.warnings

    def done(self) -> bool:
        return self.handle.done()

    def wait(self, timeout: float | None) -> bool:
        return self.handle.wait(timeout)

    def cancel(self) -> None:
        self.handle.cancel()

    def result(self, timeout: float | None = None) -> Result:
        value: Result = self.handle.result(timeout)
        return value


def submit(job: Job[Request, Result], request: Request, backend: Backend | None = None) -> TypedHandle[Result]:
    """Start ``job`` on ``request`` (on a local worker process by default) and return its handle at once; a job
    that reuses results (``Job.reuse``) is answered at once when the same request was answered before."""
    if job.reuse:
        from core.jobs.reused import submit_reusing

        return submit_reusing(job, request, backend)
    return TypedHandle(submit_spec(JobSpec(name=job.name, args={"request": request}), backend))


def run(job: Job[Request, Result], request: Request, backend: Backend | None = None) -> Result:
    """Run ``job`` on ``request`` to the end and return its typed result, raising its error; its warnings are
    logged (on the command line, they are printed to stderr)."""
    handle = submit(job, request, backend)
    result = handle.result()
    if handle.warnings:
        import logging

        for warning in handle.warnings:
            logging.getLogger(__name__).warning(warning)
    return result
