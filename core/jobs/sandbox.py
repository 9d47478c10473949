"""The worker's sandbox: bubblewrap (Debian's ``bubblewrap``), the tool Flatpak confines apps with.

Inside, the worker sees of the host only what running Python needs, read-only (core.jobs.view: the system's
libraries, the Python installation, the project's code); the app's data folder (every session's uploads, the
locks, the history), its secrets and /tmp are replaced by empty folders; only the job's own paths are shown (the
files it reads, read only; the folders it writes); there is no network, no other process (own PID namespace), no
capability, a clean environment, and everything dies with the process that started it. Resource limits bound
what one job can write, open and start. Without bubblewrap (local mode only) the same limits, environment and
private working folder apply, but not the walls: the app says so.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

from core.access import READ
from core.errors import JobError
from core.i18n import N_
from core.jobs.view import code_folders, host_view, runtime_view
from core.settings import PROJECT_ROOT, Settings

if TYPE_CHECKING:
    from core.runtime.runtimes import Runtime

__all__ = [
    "Confinement",
    "discard_worker",
    "hidden_folders",
    "kill_worker",
    "new_scratch",
    "shown_for",
    "start_worker",
    "tree_usage",
    "refuse_wide_folders",
    "require_sandbox",
    "sandbox_state",
    "sandbox_status",
    "worker_command",
    "worker_environment",
    "worker_preexec",
]

_PASSED_ON = (
    "OPENBLAS_CORETYPE",
    "OPENBLAS_L2_SIZE",
    "OPENBLAS_NUM_THREADS",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "LANG",
    "TZ",
)
_PR_SET_PDEATHSIG = 1
_HIDDEN_SIZE = 1 << 20  # bytes: an empty folder that hides the data folder holds the job's links, nothing more


@dataclass(frozen=True)
class Confinement:
    """The paths one job may see: files it reads (and their folders, read only) and folders it writes."""

    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()

    @classmethod
    def of(cls, paths: Iterable[tuple[object, str]]) -> Confinement:
        reads: list[str] = []
        writes: list[str] = []
        for mark, path in paths:
            (reads if mark is READ else writes).append(str(Path(path).resolve()))
        return cls(tuple(dict.fromkeys(reads)), tuple(dict.fromkeys(writes)))


@functools.cache
def sandbox_status() -> tuple[bool, str]:
    """(works, why not): whether bubblewrap is installed and can build a sandbox on this machine."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return False, N_("bubblewrap is not installed (apt-get install bubblewrap)")  # translated where shown
    probe = [bwrap, "--unshare-all", "--die-with-parent", "--cap-drop", "ALL", "--dev", "/dev", "--proc", "/proc",
             *host_view(), "--remount-ro", "/", "true"]  # fmt: skip
    try:
        done = subprocess.run(probe, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"bubblewrap could not start: {exc}"
    if done.returncode != 0:
        return False, f"bubblewrap cannot build a sandbox here: {done.stderr.strip()[:300]}"
    return True, ""


def sandbox_state(settings: Settings) -> tuple[bool, str]:
    """(used, why not): whether workers run sandboxed under these settings on this machine."""
    works, why = sandbox_status()
    if works and not settings.sandbox:
        return False, N_("the sandbox is turned off (WORKBENCH_SANDBOX=false)")
    return works, why


def require_sandbox(settings: Settings) -> bool:
    """Whether jobs run sandboxed; raises when the settings demand a sandbox they do not get."""
    works, why = sandbox_state(settings)
    if settings.require_sandbox and not works:
        raise JobError(
            f"This instance requires its workers to run in a sandbox, and {why}. Install it, or (for a local "
            "instance that only you use) set WORKBENCH_REQUIRE_SANDBOX=false."
        )
    return works


def worker_environment(scratch: str = "/tmp") -> dict[str, str]:
    """The worker's whole environment: nothing of the server's (no secrets), only what Python needs; its home
    and temporary folder are its private scratch folder (/tmp in the sandbox), and its user's name is given
    (the sandbox has no /etc/passwd, and torch names its caches after the user)."""
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "PYTHONPATH": str(PROJECT_ROOT), "HOME": scratch, "TMPDIR": scratch}
    env["LOGNAME"] = "worker"
    env.update({k: os.environ[k] for k in _PASSED_ON if k in os.environ})
    env.setdefault("LANG", "C.UTF-8")
    # numpy's OpenBLAS starts a thread per core when imported (a sixth of a CPU-second in every worker, most of
    # what importing numpy costs) for matrix products no job makes with numpy: ONNX Runtime and torch keep threads
    # of their own. Its idle threads would also spin beside a benchmark's session.
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    return env


def _too_wide(folder: Path, hidden: list[Path]) -> bool:
    """Whether showing ``folder`` would show more than a model's own folder: /, /tmp (the job's own /tmp would
    vanish under it), a home folder or what holds them, or a folder that holds what is hidden."""
    homes = {Path.home(), Path("/root"), Path("/home")}
    return (
        folder in (Path("/"), Path("/tmp"))
        or folder.parent == Path("/home")
        or any(h.is_relative_to(folder) for h in (*hidden, *homes))
    )


def refuse_wide_folders(confinement: Confinement, settings: Settings) -> None:
    """Refuse a job given, as a folder to write into or to read as a whole, what ``_too_wide`` says the sandbox
    never shows (a folder to write into is shown as it is, over everything the sandbox hides)."""
    hidden = hidden_folders(settings)
    for path in (*confinement.writes, *(r for r in confinement.reads if Path(r).is_dir())):
        if _too_wide(Path(path), hidden):
            raise JobError(
                f"A job cannot be given the folder {path} as a whole: the sandbox never shows a job /, /tmp, a home "
                "folder, the project or the app's data folder. Give it a folder of its own inside it (for example "
                f"{Path(path) / 'results'})."
            )
    for path in confinement.writes:
        if any(Path(path).is_relative_to(code) for code in code_folders()):
            raise JobError(
                f"A job cannot write into {path}: it lies among the code every worker runs (the project's packages "
                "or the Python installation). Choose a folder outside them."
            )


def shown_for(path: Path, hidden: list[Path]) -> list[Path]:
    """What the sandbox shows of a path a job reads: its folder (a model's external data lies beside it), unless
    that is too wide (``_too_wide``): then the file itself and the files beside it that start with its name."""
    if not path.is_file():
        return [path]
    folder = path.parent
    if not _too_wide(folder, hidden):
        return [folder]
    stem = path.name.split(".")[0] or path.name
    return [path, *sorted(p for p in folder.iterdir() if p.name.startswith(stem) and p.is_file() and p != path)]


def hidden_folders(settings: Settings) -> list[Path]:
    """The data folder (every session's files, the locks, the history) and the secrets: each replaced by an
    empty private folder in the sandbox."""
    return sorted({Path(settings.data_dir).resolve(), PROJECT_ROOT / ".streamlit"})


def worker_command(
    python: list[str],
    confinement: Confinement,
    settings: Settings,
    scratch: str,
    *,
    staged: bool = False,
    network: bool = False,
    runtime: Runtime | None = None,
) -> list[str]:
    """bubblewrap around ``python``: the worker sees the host only as ``host_view`` shows it, its private
    ``scratch`` folder as /tmp (and its working folder), and its job's paths. ``staged`` (a worker started before
    its job, core.jobs.warm): ``scratch/in`` is shown read-only at /tmp/in, where the files of its job will be
    linked once it comes. ``network``: the host's network is kept (a job that loads a server elsewhere, local
    mode only; the job runner refuses it in hosted mode). ``runtime``: a runtime's environment is shown too,
    read-only (core.jobs.view.runtime_view; a GPU build's, with the NVIDIA devices)."""
    bwrap = shutil.which("bwrap") or "bwrap"
    args = [bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--clearenv"]
    args += ["--share-net"] if network else []
    # /tmp first: a checkout or a Python installation under /tmp is then shown inside it
    args += ["--dev", "/dev", "--proc", "/proc", "--bind", scratch, "/tmp", *host_view()]
    args += runtime_view(runtime.root, runtime.gpu) if runtime is not None else ()
    if staged:
        args += ["--ro-bind", str(Path(scratch) / "in"), "/tmp/in"]
    # the data folder (every session's files, the locks, the history) and the secrets, as small empty folders:
    # the job's own paths in the data folder are shown in there (and a pre-started worker links them there)
    hidden = hidden_folders(settings)
    for folder in hidden:
        if folder.is_dir() and folder != Path("/"):
            args += ["--size", str(_HIDDEN_SIZE), "--tmpfs", str(folder)]
    for shown in sorted({str(p) for path in confinement.reads for p in shown_for(Path(path), hidden)}):
        args += ["--ro-bind-try", shown, shown]
    for writable in confinement.writes:
        args += ["--bind", writable, writable]
    args += ["--remount-ro", "/"]  # the sandbox's own root (where the mount points were made) stays as built
    for key, value in worker_environment().items():
        args += ["--setenv", key, value]
    return [*args, "--chdir", "/tmp", *python]


def worker_preexec(settings: Settings) -> Callable[[], None]:
    """Runs in the child before it starts the worker: limits on files, open files and processes, and death
    with the thread that started it (the job's own thread in the server or the command line)."""
    file_limit = 2 * settings.max_initializer_bytes + (1 << 30)

    def preexec() -> None:
        os.setsid()  # its own process group, so a kill takes everything it started
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_limit, file_limit))
        resource.setrlimit(resource.RLIMIT_NOFILE, (4096, 4096))
        # RLIMIT_NPROC does not hold for root; the job runner also counts the worker's processes from outside
        resource.setrlimit(resource.RLIMIT_NPROC, (4096, 4096))

    return preexec


def new_scratch(settings: Settings, prefix: str) -> str:
    """A fresh private folder for one worker (its /tmp and working folder), under the settings' scratch root."""
    settings.scratch_root.mkdir(parents=True, exist_ok=True)
    return tempfile.mkdtemp(prefix=prefix, dir=settings.scratch_root)


def start_worker(
    confinement: Confinement,
    settings: Settings,
    scratch: str,
    sandboxed: bool,
    stderr: IO[bytes],
    *,
    warm: bool = False,
    torch: bool = False,
    network: bool = False,
    runtime: Runtime | None = None,
    imports: tuple[str, ...] = (),
) -> subprocess.Popen[bytes]:
    """``python -m core.jobs.worker`` (``--warm``: started before its job, core.jobs.warm; ``--torch``: it
    imports torch ahead too), in its sandbox when there is one, with ``scratch`` as its private folder; its
    stdin and stdout are the job's channel. ``runtime``: from that runtime's Python (core.runtime.runtimes), whose
    environment the sandbox shows read-only; the app's own by default. ``imports``: modules it imports before it
    reads its request (a worker started ahead of a job its command knows: core.jobs.ahead)."""
    flags = [*(["--warm"] if warm else []), *(["--torch"] if warm and torch else [])]
    flags += [f"--import={','.join(imports)}"] if imports else []
    python = [runtime.python if runtime is not None else sys.executable, "-m", "core.jobs.worker", *flags]
    command = (
        worker_command(python, confinement, settings, scratch, staged=warm, network=network, runtime=runtime)
        if sandboxed
        else python
    )
    return subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr,
        cwd=scratch,
        env=worker_environment("/tmp" if sandboxed else scratch),
        preexec_fn=worker_preexec(settings),
    )


def kill_worker(proc: subprocess.Popen[bytes]) -> None:
    """Kill a worker and everything it started (its process group: bubblewrap and what runs inside)."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)


def discard_worker(proc: subprocess.Popen[bytes], scratch: str, stderr: IO[bytes]) -> None:
    """A worker no job will use (a pre-started one left over or gone): killed, reaped, its pipes and error file
    closed and its private folder removed."""
    kill_worker(proc)
    proc.wait()
    for stream in (proc.stdin, proc.stdout, stderr):
        with contextlib.suppress(OSError, AttributeError):
            stream.close()  # type: ignore[union-attr]
    shutil.rmtree(scratch, ignore_errors=True)


def tree_usage(pid: int) -> tuple[int, int]:
    """The memory (RSS) and the number of processes of the worker ``pid`` and everything it started (with bubblewrap
    around it): what its limits are checked against, from outside, twenty times a second per running job; (0, 1)
    once it is gone.

    On Linux it walks the tree down from the worker through each thread's ``children`` file in /proc: two small
    reads per process of the tree. psutil's ``children()`` reads the status of every process on the machine to
    find the parents: 3 ms of the server's CPU per call beside 70 processes, and a fifth of a classroom server's
    time (py-spy) with a few jobs running; nor is psutil imported there (a command's worker is watched without it)."""
    if not _CHILDREN_FILES:
        return _tree_usage_psutil(pid)
    total, count = 0, 0
    todo, seen = [pid], set()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        rss = _rss(pid)
        if rss is None:  # gone
            continue
        total += rss
        count += 1
        todo.extend(_children(pid))
    return total, max(count, 1)


def _rss(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return None


def _children(pid: int) -> list[int]:
    """The pids of a process's children, from each of its threads (a process forked from any thread is listed
    under that thread)."""
    found: list[int] = []
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for tid in threads:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                found.extend(int(child) for child in f.read().split())
        except (OSError, ValueError):
            continue  # the thread ended
    return found


def _tree_usage_psutil(pid: int) -> tuple[int, int]:
    import psutil

    total, count = 0, 1
    try:
        ps = psutil.Process(pid)
        total += ps.memory_info().rss
        children = ps.children(recursive=True)
        count += len(children)
        for child in children:
            with contextlib.suppress(psutil.Error):
                total += child.memory_info().rss
    except psutil.Error:
        pass
    return total, count


_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
# CONFIG_PROC_CHILDREN: every kernel Debian, Ubuntu and Fedora ship has it; elsewhere (no /proc) psutil's way
_CHILDREN_FILES = os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children")
