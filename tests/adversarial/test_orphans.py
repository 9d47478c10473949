"""No orphans, no stale lock: a worker dies with the process that started it (a command line stopped by SIGTERM,
a server killed by SIGKILL) and the machine-wide benchmark lock is free again at once."""

from __future__ import annotations

import fcntl
import os
import select
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from core.settings import PROJECT_ROOT
from tests import builders

pytestmark = pytest.mark.slow


MEASURING = b"MEASURING"


def _start(command: list[str], data: Path, sandbox: bool, stdout: int = subprocess.DEVNULL) -> subprocess.Popen[bytes]:
    env = {**os.environ, "WORKBENCH_DATA_DIR": str(data), "WORKBENCH_SANDBOX": str(sandbox).lower()}
    return subprocess.Popen(command, cwd=PROJECT_ROOT, env=env, stdout=stdout, stderr=subprocess.DEVNULL)


def _machine_held(data: Path) -> bool:
    """Whether someone holds the machine-wide benchmark lock."""
    try:
        with (data / "locks" / "exclusive.lock").open("a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.flock(lock, fcntl.LOCK_UN)
            return False
    except BlockingIOError:
        return True
    except FileNotFoundError:
        return False


def _cmdline(process: psutil.Process) -> str:
    """A process's command line; empty for one that ended meanwhile (a zombie's or a gone process's is unreadable)."""
    try:
        return " ".join(process.cmdline())
    except psutil.Error:
        return ""


def _running_worker(
    parent: subprocess.Popen[bytes], data: Path, timeout: float = 120, *, says_measuring: bool = False
) -> list[psutil.Process]:
    """Every descendant of ``parent``, once its benchmark holds the machine and its worker runs (a worker started
    ahead exists long before its job comes, so the lock, not the process, says the benchmark started), past the
    model's loading: the worker calls the model. A parent that ``says_measuring`` prints MEASURING when its job's
    progress says so; a command line, which says nothing, is given three seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        descendants = psutil.Process(parent.pid).children(recursive=True)
        running = any("core.jobs.worker" in _cmdline(p) for p in descendants)
        if running and _machine_held(data):
            if says_measuring:  # its line, or its end (a job ended before measuring), by the deadline
                assert parent.stdout is not None
                said, _, _ = select.select([parent.stdout], [], [], max(deadline - time.monotonic(), 0.0))
                assert said and parent.stdout.readline() == MEASURING + b"\n", "the benchmark never measured"
            else:
                time.sleep(3)
            return psutil.Process(parent.pid).children(recursive=True)
        time.sleep(0.2)
    raise AssertionError("the worker never started")


def _assert_gone_and_lock_free(descendants: list[psutil.Process], data: Path) -> None:
    _, alive = psutil.wait_procs(descendants, timeout=10)
    assert not alive, f"left running: {[_cmdline(p) for p in alive]}"
    with (data / "locks" / "exclusive.lock").open("a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises if anyone still held the machine


@pytest.fixture
def model(tmp_path: Path) -> Path:
    return builders.exported_sample("tinycnn", tmp_path)


@pytest.mark.parametrize("sandbox", [True, False], ids=["sandboxed", "unsandboxed"])
def test_sigterm_of_the_command_line_mid_benchmark_ends_its_worker(model: Path, tmp_path: Path, sandbox: bool) -> None:
    data = tmp_path / "data"
    command = [sys.executable, "-m", "core", "bench", str(model), "--iters", "1000000", "--budget", "600", "--no-save"]
    cli = _start(command, data, sandbox)
    descendants = _running_worker(cli, data)
    cli.send_signal(signal.SIGTERM)
    cli.wait(timeout=30)
    _assert_gone_and_lock_free(descendants, data)


@pytest.mark.parametrize(
    ("sandbox", "warm"), [(True, False), (False, False), (True, True)], ids=["sandboxed", "unsandboxed", "pre-started"]
)
def test_kill_9_of_the_server_mid_benchmark_ends_its_worker(
    model: Path, tmp_path: Path, sandbox: bool, warm: bool
) -> None:
    """Pre-started: a server keeping a worker ready runs the benchmark in it (its model staged from the data
    folder); the worker was started by the pool's thread, not the job's, and must die with the server too."""
    data = tmp_path / "data"
    if warm:
        upload = data / "workspaces" / "someone" / "upload-1"
        upload.mkdir(parents=True)
        model = Path(shutil.copy(model, upload / model.name))
    server = textwrap.dedent(
        f"""
        import time
        from core.bench import BenchRequest
        from core.jobs import BENCH, ProcessBackend, submit
        from core.model.inputs import BenchInput
        from core.model.measured import MeasuredModel
        backend = ProcessBackend(warm={int(warm)})
        while backend.pool is not None and backend.pool.ready_count() == 0:
            time.sleep(0.05)
        inputs = [BenchInput(name="input", dtype="float32", shape=[1, 3, 112, 112], batch_axis=0)]
        model = MeasuredModel(path={str(model)!r}, inputs=inputs)
        handle = submit(BENCH, BenchRequest(model=model, iterations=1000000, time_budget_s=600.0), backend)
        while not handle.done() and not (handle.progress and handle.progress.message.startswith("Warming up")):
            time.sleep(0.05)  # then the sessions are made, and the worker calls the model until it is killed
        if not handle.done():
            print({MEASURING.decode()!r}, flush=True)
        handle.result()
        """
    )
    host = _start([sys.executable, "-c", server], data, sandbox, stdout=subprocess.PIPE)
    descendants = _running_worker(host, data, says_measuring=True)
    host.kill()
    host.wait(timeout=30)
    host.stdout.close()  # type: ignore[union-attr]
    _assert_gone_and_lock_free(descendants, data)
