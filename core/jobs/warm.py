"""Pre-started workers: one process per job still, but started before the job comes, its imports done.

A job's worker spends most of a small job importing its libraries (torch alone takes 1.5 s). A ``WarmPool``
keeps a few workers of each kind started ahead (``python -m core.jobs.worker --warm``): each imports numpy,
onnx and onnxruntime, says it is ready, and waits for its one job; those of the other kind (``--torch``) import
torch too (~3 CPU-s more), for the jobs marked ``torch`` in the job table, so that the other jobs' workers are
replaced at a sixth of the cost. A used worker is never used again, and a new one of its kind is started once its
job has ended, no page waits on a job and the pages have been quiet a moment (``core.jobs.refill.Foreground``: the
job and the browser drawing its result first), never while this server runs a benchmark, which must have the machine
to itself.

The used workers' replacements start side by side, not one after the other (a page's two jobs use two; started in
turn, the second was ready seconds later, and the next page's job started a worker of its own): at most as many
at once as the pool keeps (``warm_workers``: three without torch, then the one with it), and never more than the
server's ``max_workers``. A job that finds none of its kind ready but one starting takes that one and waits for it: it
started before the job came and imports the same modules, so it is ready sooner than a fresh worker would be (the
wait is bounded: a worker whose start stalls is left, and the job starts its own).

The sandbox's walls are fixed when a worker starts, before its job's paths are known. So a pre-started worker
is started with nothing of the data folder shown, and the job's files are staged into its private folder when
the job comes:

- each folder the job reads is mirrored, by hard links (copies across file systems), into ``scratch/in/K``,
  which the sandbox shows read-only at ``/tmp/in/K``: the worker cannot write to a user's file through it;
- each folder the job writes is ``scratch/out/K``, writable at ``/tmp/out/K``; once the worker has exited its
  plain files and folders are moved into the real folder (links it left there are dropped);
- the worker first makes links at the job's own paths, in its private (empty) view of the data folder, to
  where they lie in the sandbox, so the job runs on exactly the arguments it was given.

A job whose paths cannot be staged that way (a path outside the data folder, nested folders, thousands of
files, a folder to write that is not empty) starts a worker of its own as before.

Each runtime (core.runtime.runtimes) has a pool of its own, whose workers start from its Python: a job on the
OpenVINO runtime cannot use a worker that imported the app's onnxruntime. The process backend starts the default
runtime's pool with the server and another runtime's with that runtime's first job (which starts cold, or takes
that pool's first worker if it is already starting), so a server whose users never pick another runtime keeps no
worker of it. Benchmarks hold every pool back alike.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from core.jobs import outputs, sandbox, wire
from core.jobs.refill import ExclusiveJobs, Foreground
from core.jobs.sandbox import Confinement
from core.runtime.runtimes import Runtime
from core.settings import Settings

__all__ = [
    "MAX_STAGED_FILES",
    "RuntimePools",
    "Spare",
    "Staging",
    "WarmPool",
    "collect_outputs",
    "plan_staging",
]

MAX_STAGED_FILES = 2000  # beyond this, staging by links costs more than a fresh worker saves
MIN_WAIT_S = 5.0  # a job waits at least this long (from its start) for a starting worker it took, at most 3 starts


@dataclass
class Spare:
    """A started worker waiting for its job, with its private folder and its stderr file."""

    proc: subprocess.Popen[bytes]
    scratch: str
    stderr: IO[bytes]


@dataclass(eq=False, kw_only=True)
class _Starting:
    """A worker started for the pool that has not yet said it is ready: the job that claims it waits for it."""

    spare: Spare
    torch: bool
    started_at: float  # time.monotonic() at its start
    done: threading.Event = field(default_factory=threading.Event)
    ready: bool = False  # it said it is ready (set with ``done``)
    claimed: bool = False  # a job took it while it started
    abandoned: bool = False  # that job stopped waiting: it is stopped then, and removed once its start ends


@dataclass(frozen=True)
class Staging:
    """Where a job's folders lie in a pre-started worker's sandbox: (real folder, name under the scratch)."""

    reads: tuple[tuple[Path, str], ...] = ()
    writes: tuple[tuple[Path, str], ...] = ()

    def links(self) -> list[tuple[str, str]]:
        return [(str(real), f"/tmp/{name}") for real, name in (*self.reads, *self.writes)]


def _count_files(folder: Path, limit: int) -> int:
    count = 0
    for _root, _dirs, files in os.walk(folder):
        count += len(files)
        if count > limit:
            break
    return count


def plan_staging(confinement: Confinement, settings: Settings) -> Staging | None:
    """How a sandboxed job's paths can be staged into a pre-started worker, or None when they cannot."""
    data = Path(settings.data_dir).resolve()
    shown = sorted({p for r in confinement.reads for p in sandbox.shown_for(Path(r), sandbox.hidden_folders(settings))})
    writes = [Path(w) for w in confinement.writes]
    every = [*shown, *writes]
    for path in every:
        if path == data or not path.is_relative_to(data) or path.is_relative_to(settings.scratch_root):
            return None
        if path.is_symlink() or not path.is_dir():
            return None
    if any(a != b and a.is_relative_to(b) for a in every for b in every) or len(set(every)) < len(every):
        return None
    if any(any(w.iterdir()) for w in writes):
        return None
    if sum(_count_files(folder, MAX_STAGED_FILES) for folder in shown) > MAX_STAGED_FILES:
        return None
    return Staging(
        reads=tuple((p, f"in/{k}") for k, p in enumerate(shown)),
        writes=tuple((p, f"out/{k}") for k, p in enumerate(writes)),
    )


def _mirror(source: Path, target: Path) -> None:
    """``source``'s plain files and folders under ``target``, as hard links (copies where links cannot be)."""
    for root, dirs, files in os.walk(source):
        here = target / Path(root).relative_to(source)
        here.mkdir(parents=True, exist_ok=True)
        dirs[:] = [d for d in dirs if not (Path(root) / d).is_symlink()]
        for name in files:
            src = Path(root) / name
            if src.is_symlink() or not src.is_file():
                continue
            try:
                os.link(src, here / name)
            except OSError:
                shutil.copy2(src, here / name)


def stage(spare: Spare, staging: Staging) -> None:
    """The job's folders, put in place in the spare's private folder before it is sent the job."""
    for real, name in staging.reads:
        _mirror(real, Path(spare.scratch) / name)
    for _real, name in staging.writes:
        (Path(spare.scratch) / name).mkdir(parents=True)


def collect_outputs(spare: Spare, staging: Staging) -> list[str]:
    """Move what the job wrote into its real folders (after the worker has exited): its plain files and folders.
    Links and other special files it left there are dropped (core.jobs.outputs), never moved into the real
    folder; returns what was dropped, relative to the folders the job was given."""
    dropped: list[str] = []
    for real, name in staging.writes:
        written = Path(spare.scratch) / name
        if written.is_symlink() or not written.is_dir():
            if os.path.lexists(written):  # the job put something else in its folder's place
                dropped.append(f"{real.name} itself")
            continue
        dropped += outputs.drop_links(written)
        for entry in os.scandir(written):
            try:
                os.rename(entry.path, real / entry.name)
            except OSError:
                shutil.move(entry.path, real / entry.name)
    return dropped


@dataclass(kw_only=True)
class WarmPool:
    """Keeps ``size`` workers with torch imported, and three times as many without, started ahead for a backend's
    jobs (a page often runs two small jobs at once, Decode its decoding and its graph's layout, and the next page
    its own a moment later: their replacements, 0.8-2 s to get ready on a busy machine, were not ready in time, and
    with two spares the next page's job started cold or waited for one).
    Its own thread starts them and lives as long as the server, so the workers die with the server (their
    parent-death signal is tied to that thread)."""

    settings: Settings
    sandboxed: bool
    size: int = 1
    runtime: Runtime | None = None  # whose Python its workers start from (None: the app's own)
    exclusive: ExclusiveJobs = field(default_factory=ExclusiveJobs)  # shared by a backend's pools
    foreground: Foreground = field(default_factory=Foreground)  # likewise
    _ready: dict[bool, list[Spare]] = field(default_factory=lambda: {False: [], True: []})  # torch imported?
    _starting: list[_Starting] = field(default_factory=list)  # started, not ready, not claimed by a job
    _in_flight: int = 0  # workers started and not yet ready (claimed by a job or not)
    _start_s: dict[bool, float] = field(default_factory=lambda: {False: 1.0, True: 1.0})  # the last start, per kind
    # (how long the last worker of the kind took to get ready: a claimed one's wait is bounded by it)
    _wanted: threading.Event = field(default_factory=threading.Event)
    _refill_since: float | None = None  # when a job ended whose worker is not yet replaced (Foreground)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _closed: bool = False

    def __post_init__(self) -> None:
        self._wanted.set()
        threading.Thread(target=self._keep_warm, name="warm workers", daemon=True).start()
        atexit.register(self.close)

    def take(self, confinement: Confinement, memory_bytes: int, torch: bool = False) -> tuple[Spare, Staging] | None:
        """A ready worker of the kind the job needs (``torch``: one that imported torch), else the first of that
        kind still starting, once ready (this call waits for it), and where the job's paths go in it; or None (the
        job starts its own worker): when the paths cannot be staged, none is ready or starting, that start fails or
        stalls, or the job's memory limit leaves too little beside what the worker imported."""
        staging = plan_staging(confinement, self.settings) if self.sandboxed else Staging()
        if staging is None:
            return None
        with self._lock:
            ready = self._ready[torch]
            while ready:
                spare = ready.pop(0)
                if spare.proc.poll() is not None:
                    _discard(spare)
                    continue
                if _rss(spare) * 2 > memory_bytes:
                    ready.insert(0, spare)
                    return None
                return spare, staging
            starting = [s for s in self._starting if s.torch == torch]
            if not starting:
                return None
            pending = starting[0]  # the one started first: the nearest to ready
            self._starting.remove(pending)
            pending.claimed = True
            patience = max(MIN_WAIT_S, 3 * self._start_s[torch]) - (time.monotonic() - pending.started_at)
        claimed = self._wait_for(pending, patience)
        if claimed is None:
            return None
        if _rss(claimed) * 2 > memory_bytes:  # ready, but not for this job: it waits for the next one
            self.keep(claimed, torch)
            return None
        return claimed, staging

    def _wait_for(self, pending: _Starting, patience: float) -> Spare | None:
        """The claimed worker once it is ready, or None: when its start failed, or stalls past ``patience``
        (then it is stopped once done, and the job starts its own)."""
        pending.done.wait(max(0.0, patience))
        with self._lock:
            if not pending.done.is_set():
                pending.abandoned = True
                _kill(pending.spare)  # the thread that watches it then reads its end and removes what it left
                return None
        if not pending.ready:
            return None  # its start failed: the thread that watched it has stopped it
        if pending.spare.proc.poll() is not None:  # ready, then gone: handed to this job, which removes it
            _discard(pending.spare)
            return None
        return pending.spare

    def keep(self, spare: Spare, torch: bool) -> None:
        """Keep a ready worker a job did not use for the next job (first in line); a closed pool discards it."""
        with self._lock:
            if not self._closed:
                self._ready[torch].insert(0, spare)
                return
        _discard(spare)

    def job_started(self, exclusive: bool) -> None:
        if exclusive:
            self.exclusive.change(+1)

    def job_ended(self, exclusive: bool) -> None:
        """A job of this backend ended: start workers to replace the ones used."""
        if exclusive:
            self.exclusive.change(-1)
        with self._lock:
            if self._refill_since is None:
                self._refill_since = time.monotonic()
        self._wanted.set()

    def wanted(self, torch: bool = False) -> int:
        """How many workers of the kind (``torch``: with torch imported) are kept waiting."""
        return self.size if torch else 3 * self.size

    def ready_count(self, torch: bool = False) -> int:
        """Workers of the kind (``torch``: with torch imported) that wait for a job."""
        with self._lock:
            return len(self._ready[torch])

    def starting_count(self, torch: bool = False) -> int:
        """Workers of the kind started and not yet ready, that no job has claimed."""
        with self._lock:
            return sum(1 for s in self._starting if s.torch == torch)

    def start_limit(self) -> int:
        """How many workers the pool starts at once: all it keeps, within the server's worker limit."""
        return max(1, min(self.wanted(False) + self.wanted(True), self.settings.worker_limit))

    def close(self) -> None:
        """Stop the waiting workers and remove their folders (at exit, or when a test is done with a pool)."""
        with self._lock:
            self._closed = True
            spares = [*self._ready[False], *self._ready[True]]
            self._ready = {False: [], True: []}
            starting = [s.spare for s in self._starting]
        self._wanted.set()
        for spare in spares:
            _discard(spare)
        for spare in starting:  # the thread that watches each start removes it once it has ended
            _kill(spare)

    def _keep_warm(self) -> None:
        while True:
            self._wanted.wait()
            self._wanted.clear()
            with self._lock:
                # closed: this thread stays (the workers running jobs would die with it) and starts nothing
                if self._closed:
                    continue
                if self.exclusive.running > 0:  # a benchmark runs: starting a worker now would take CPU from it
                    held = 0.5
                    kinds: list[bool] = []
                elif (held := self._page_drawn_in()) > 0:
                    kinds = []
                else:
                    self._refill_since = None
                    kinds = self._short()[: max(0, self.start_limit() - self._in_flight)]
                    self._in_flight += len(kinds)
            if held > 0:
                self._wanted.wait(held)
                self._wanted.set()
                continue
            for n, kind in enumerate(kinds):
                try:
                    self._launch(kind)  # here: the workers' parent-death signal is tied to this thread
                except OSError:  # no process or no scratch folder to be had now: the next job ending tries again
                    with self._lock:
                        self._in_flight -= len(kinds) - n
                    break

    def _page_drawn_in(self) -> float:
        """Seconds a replacement waits for the pages to go quiet (Foreground); 0: start now."""
        if self._refill_since is None:
            return 0.0
        return self.foreground.held_for(self._refill_since)

    def _short(self) -> list[bool]:
        """The kinds of the workers to start now: the cheap kind's side by side, the other's once none of the cheap
        kind is missing or starting (a worker importing torch would slow the ones a page's next job waits for)."""
        missing = {
            kind: self.wanted(kind) - len(self._ready[kind]) - sum(1 for s in self._starting if s.torch == kind)
            for kind in (False, True)
        }
        if missing[False] > 0 or any(not s.torch for s in self._starting):
            return [False] * max(0, missing[False])
        return [True] * max(0, missing[True])

    def _launch(self, torch: bool) -> None:
        """Start a worker and a thread that waits for it to say it is ready (the start itself takes no time)."""
        began = time.monotonic()
        scratch = sandbox.new_scratch(self.settings, "warm-")
        (Path(scratch) / "in").mkdir()
        (Path(scratch) / "out").mkdir()
        stderr = tempfile.TemporaryFile()  # noqa: SIM115 - handed to the job, which closes it
        settings, sandboxed = self.settings, self.sandboxed
        proc = sandbox.start_worker(
            Confinement(), settings, scratch, sandboxed, stderr, warm=True, torch=torch, runtime=self.runtime
        )
        starting = _Starting(spare=Spare(proc, scratch, stderr), torch=torch, started_at=began)
        with self._lock:
            self._starting.append(starting)
        threading.Thread(target=self._await_ready, args=(starting,), name="warm worker start", daemon=True).start()

    def _await_ready(self, starting: _Starting) -> None:
        spare = starting.spare
        assert spare.proc.stdout is not None
        payload = wire.read_frame(spare.proc.stdout)
        ready = payload is not None and isinstance(wire.decode_message(payload), wire.Ready)
        with self._lock:
            self._in_flight -= 1
            if starting in self._starting:
                self._starting.remove(starting)
            if ready:
                self._start_s[starting.torch] = time.monotonic() - starting.started_at
            starting.ready = ready and not self._closed
            kept = starting.ready and not starting.claimed
            if kept:
                self._ready[starting.torch].append(spare)
            given = starting.ready and starting.claimed and not starting.abandoned
            starting.done.set()
        if not kept and not given:
            _discard(spare)
        if ready:  # more may be short than were started at once; a worker that cannot start or get ready is not
            self._wanted.set()  # restarted until the next job ends (that job starts its own, which will say why)


class RuntimePools:
    """A backend's warm pools, one per runtime: the default runtime's started with the backend, another's with that
    runtime's first job (so a runtime nobody uses keeps no worker), all held back by the same benchmarks."""

    def __init__(self, settings: Settings, sandboxed: bool, size: int) -> None:
        self._settings, self._sandboxed, self._size = settings, sandboxed, size
        self._exclusive = ExclusiveJobs()
        self.foreground = Foreground()
        self.default = self._new(None)
        self._others: dict[str, WarmPool] = {}
        self._lock = threading.Lock()

    def _new(self, runtime: Runtime | None) -> WarmPool:
        return WarmPool(
            settings=self._settings,
            sandboxed=self._sandboxed,
            size=self._size,
            runtime=runtime,
            exclusive=self._exclusive,
            foreground=self.foreground,
        )

    def pool_for(self, runtime: Runtime) -> WarmPool:
        if not runtime.root:  # the default: the app's own Python
            return self.default
        with self._lock:
            if runtime.name not in self._others:
                self._others[runtime.name] = self._new(runtime)
            return self._others[runtime.name]


def _rss(spare: Spare) -> int:
    """The memory of a waiting worker (with bubblewrap around it)."""
    return sandbox.tree_usage(spare.proc.pid)[0]


def _kill(spare: Spare) -> None:
    sandbox.kill_worker(spare.proc)


def _discard(spare: Spare) -> None:
    sandbox.discard_worker(spare.proc, spare.scratch, spare.stderr)
