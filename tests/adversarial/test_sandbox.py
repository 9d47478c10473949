"""Code archives in local mode, where they are allowed: the code runs, in the worker's sandbox, and can read,
write, reach and leave behind nothing. The same payloads without the sandbox show what it stops."""

from __future__ import annotations

import dataclasses
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from core.decode import DecodeRequest
from core.errors import IntakeError, WorkbenchError
from core.jobs import DECODE, INTAKE, ProcessBackend, run, submit
from core.jobs.sandbox import sandbox_status
from core.model.intake import IntakeRequest
from core.settings import PROJECT_ROOT, load_settings
from tests.adversarial.payloads import escape_code, pt2_pickle_payload, torchscript_payload

SECRET = "SECRET-" + uuid.uuid4().hex[:8]
CANARY = "CANARY-" + uuid.uuid4().hex[:8]

pytestmark = pytest.mark.skipif(not sandbox_status()[0], reason=f"no sandbox here: {sandbox_status()[1]}")


class _Listener:
    """A TCP port on loopback that records whether anyone connected."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connected = False
        self._stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                self.sock.accept()[0].close()
                self.connected = True
            except OSError:
                continue

    def heard(self) -> bool:
        """Whether anyone connected, once the thread has taken what waited (its accept wakes within 0.2 s)."""
        time.sleep(0.25)
        return self.connected

    def close(self) -> None:
        self._stop.set()
        self.sock.close()


@dataclasses.dataclass
class Scene:
    data: Path  # the server's data folder: a secret history, another session's upload
    uploads: Path  # this job's own folder
    secret: Path
    other_session: Path
    outside: Path  # outside every job folder, and outside /tmp
    marker: Path  # where a process that outlived its job would write
    loot: Path  # where the payload writes what it stole
    listener: _Listener

    def payload(self) -> Path:
        code = escape_code(self.secret, self.outside, self.listener.port, self.marker, self.other_session, self.loot)
        return pt2_pickle_payload(self.uploads, code)

    def backend(self, sandbox: bool) -> ProcessBackend:
        settings = load_settings(environ={})
        return ProcessBackend(dataclasses.replace(settings, data_dir=str(self.data), sandbox=sandbox))


@pytest.fixture
def scene(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Scene]:
    monkeypatch.setenv("WORKBENCH_TEST_CANARY", CANARY)  # in the server's environment, as secrets are
    data = tmp_path / "data"
    other = data / "workspaces" / "someone-else" / "upload-1"
    other.mkdir(parents=True)
    (other / "their-model.onnx").write_bytes(b"theirs")
    secret = data / "history-secret.txt"
    secret.write_text(SECRET)
    uploads = data / "workspaces" / "me" / "upload-2"
    uploads.mkdir(parents=True)
    outside = PROJECT_ROOT / "test-artifacts" / f"escaped-{uuid.uuid4().hex[:8]}.txt"
    outside.parent.mkdir(parents=True, exist_ok=True)
    listener = _Listener()
    yield Scene(data, uploads, secret, other.parent, outside, uploads / "survived.txt", uploads / "loot.txt", listener)
    listener.close()
    outside.unlink(missing_ok=True)
    for process in psutil.process_iter(["cmdline"]):  # whatever survived an unsandboxed run
        if str(uploads) in " ".join(process.info["cmdline"] or []):
            process.kill()


def _describe(scene: Scene, path: Path, sandbox: bool) -> str:
    """The message the user sees when the archive is opened (its code raises on purpose)."""
    request = IntakeRequest(paths=[str(path)], unpack_dir=str(scene.uploads))
    with pytest.raises(WorkbenchError) as caught:
        run(INTAKE, request, scene.backend(sandbox))
    return str(caught.value)


def _survivors(marker: Path) -> list[psutil.Process]:
    """The payload's own process (``sh -c "sleep 2; echo survived > MARKER"``) wherever it still runs."""
    return [p for p in psutil.process_iter(["cmdline"]) if str(marker) in " ".join(p.info["cmdline"] or [])]


def _assert_no_survivor(marker: Path) -> None:
    """The process the payload started would write ``marker`` two seconds on: it is stopped with its job (awaited
    up to three seconds, as the sandbox's processes die with it), so nothing is left to write it, and nothing did."""
    deadline = time.monotonic() + 3
    while _survivors(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _survivors(marker), "a process started by the job outlived it"
    assert not marker.exists(), "a process started by the job outlived it"


def _assert_nothing_escaped(scene: Scene, message: str) -> None:
    assert SECRET not in message and CANARY not in message and "their-model" not in message, message
    assert scene.loot.read_text() == "STOLEN[]"  # the code ran, and got nothing
    assert not scene.outside.exists()
    _assert_no_survivor(scene.marker)
    assert not scene.listener.heard()


def test_a_pickle_in_a_pt2_archive_runs_in_a_sandbox_that_holds_nothing(scene: Scene) -> None:
    message = _describe(scene, scene.payload(), sandbox=True)
    _assert_nothing_escaped(scene, message)


def test_without_the_sandbox_the_same_archive_steals_and_escapes(scene: Scene) -> None:
    """What the sandbox stops: the test above would fail without it."""
    _describe(scene, scene.payload(), sandbox=False)
    loot = scene.loot.read_text()
    assert SECRET in loot and "upload-1" in loot  # another session's folder, listed
    assert CANARY not in loot  # the worker's environment is clean even without the sandbox
    assert scene.outside.read_text() == "escaped" and scene.listener.connected


def test_torchscript_setstate_cannot_read_the_servers_files(scene: Scene) -> None:
    archive = torchscript_payload(scene.uploads, scene.secret)
    with pytest.raises(IntakeError, match="could not be loaded") as caught:
        run(INTAKE, IntakeRequest(paths=[str(archive)]), scene.backend(sandbox=True))
    assert SECRET not in str(caught.value)
    record = run(INTAKE, IntakeRequest(paths=[str(archive)]), scene.backend(sandbox=False))
    assert record.format == "torchscript"  # unsandboxed it loads, with the secret in its weights


def test_a_job_sees_only_its_own_paths(scene: Scene, tmp_path: Path) -> None:
    """The sandbox shows the files a job reads (read only) and the folders it writes, and no other."""
    from tests import builders

    model = builders.write(builders.relu_model(), scene.uploads / "relu.onnx")
    decoded = run(DECODE, DecodeRequest(path=str(model)), scene.backend(sandbox=True))
    assert decoded.node_count == 1
    elsewhere = builders.write(builders.relu_model(), tmp_path / "elsewhere" / "relu.onnx")
    assert run(DECODE, DecodeRequest(path=str(elsewhere)), scene.backend(sandbox=True)).node_count == 1


FORK_BOMB = """
import os, time
for _ in range(400):
    if os.fork() == 0:
        time.sleep(120)
        os._exit(0)
time.sleep(120)
"""


def test_a_fork_bomb_is_stopped_with_everything_it_started(scene: Scene) -> None:
    """Root is not held by RLIMIT_NPROC, so the worker's processes are counted from outside, like its memory."""
    started = time.monotonic()
    message = _describe(scene, pt2_pickle_payload(scene.uploads, FORK_BOMB), sandbox=True)
    assert "processes and was stopped, with all of them" in message and time.monotonic() - started < 60
    time.sleep(0.5)
    left = [p for p in psutil.process_iter(["cmdline"]) if "import os, time" in " ".join(p.info["cmdline"] or [])]
    assert not left, left


def test_a_model_directly_in_tmp_is_read_without_showing_the_rest_of_tmp(scene: Scene) -> None:
    """A command-line user's model in /tmp itself: the job sees that file (and its data files), keeps its own
    writable /tmp, and sees nothing else of the machine's /tmp."""
    from tests import builders

    name = f"wb-{uuid.uuid4().hex[:8]}"
    model = builders.write(builders.relu_model(), Path("/tmp") / f"{name}.onnx")
    neighbour = Path("/tmp") / f"other-{uuid.uuid4().hex[:8]}.txt"
    neighbour.write_text(SECRET)
    try:
        record = run(INTAKE, IntakeRequest(paths=[str(model)]), scene.backend(sandbox=True))
        assert record.node_count == 1
        from core.jobs.sandbox import Confinement, worker_command

        command = worker_command(["python"], Confinement((str(model),), ()), scene.backend(True).settings, "/x")
        shown = [command[i + 1] for i, arg in enumerate(command) if arg == "--ro-bind-try"]
        assert str(model) in shown and "/tmp" not in shown and str(neighbour) not in shown
    finally:
        model.unlink(missing_ok=True)
        neighbour.unlink(missing_ok=True)


def test_a_pickle_in_a_pre_started_worker_gets_nothing_either(scene: Scene) -> None:
    """A worker started before its job (core.jobs.warm) sees the job's files only as staged copies: the same
    payload steals nothing, writes only into its own results folder, and leaves no process behind."""
    settings = dataclasses.replace(load_settings(environ={}), data_dir=str(scene.data), sandbox=True)
    backend = ProcessBackend(settings, warm=1)
    assert backend.pool is not None
    try:
        deadline = time.monotonic() + 90
        while backend.pool.ready_count() == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        results = scene.data / "workspaces" / "me" / "unpack-3"
        results.mkdir()
        loot, marker = results / "loot.txt", results / "survived.txt"
        code = escape_code(scene.secret, scene.outside, scene.listener.port, marker, scene.other_session, loot)
        archive = pt2_pickle_payload(scene.uploads, code)
        before = archive.read_bytes()
        handle = submit(INTAKE, IntakeRequest(paths=[str(archive)], unpack_dir=str(results)), backend)
        with pytest.raises(WorkbenchError) as caught:
            handle.result(timeout=120)
        assert handle.handle.started_warm  # type: ignore[attr-defined]
        message = str(caught.value)
        assert SECRET not in message and CANARY not in message and "their-model" not in message, message
        assert loot.read_text() == "STOLEN[]"  # the code ran, wrote into its results folder, and got nothing
        assert archive.read_bytes() == before and not scene.outside.exists()
        _assert_no_survivor(marker)
        assert not scene.listener.heard()
    finally:
        backend.pool.close()


def test_a_models_own_code_runs_in_the_sandbox_that_holds_nothing(scene: Scene) -> None:
    """The same payload as a person's model code (a .py with its weights): it runs at import, in the worker."""
    import torch

    from core.errors import CodeError
    from tests import builders

    code = scene.uploads / "thief_net.py"
    code.write_text(escape_code(scene.secret, scene.outside, scene.listener.port, scene.marker, scene.other_session,
                                scene.loot) + "\n" + builders.NET_SOURCE)  # fmt: skip
    weights = scene.uploads / "w.pt"
    torch.save(builders.user_net().state_dict(), weights)  # type: ignore[attr-defined]
    request = IntakeRequest(paths=[str(code), str(weights)], unpack_dir=str(scene.uploads))
    with pytest.raises(CodeError, match="raised RuntimeError: done") as caught:
        run(INTAKE, request, scene.backend(sandbox=True))
    _assert_nothing_escaped(scene, str(caught.value))
