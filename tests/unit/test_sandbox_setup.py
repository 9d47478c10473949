"""Where the sandbox is missing: hosted mode refuses to start and to run jobs, local mode warns and runs them."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from core.errors import JobError
from core.jobs import JOBS, Job, ProcessBackend
from core.jobs import sandbox as sandbox_module
from core.jobs.sandbox import Confinement, worker_command, worker_environment
from core.settings import PROJECT_ROOT, load_settings
from tests.cli import cli
from tests.unit.jobs_for_tests import run_spec

MISSING = (False, "bubblewrap is not installed (apt-get install bubblewrap)")
ECHO = JOBS.with_jobs(Job(name="test.whoami", target="tests.unit.jobs_for_tests:whoami"))


@pytest.fixture
def no_bwrap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox_module, "sandbox_status", lambda: MISSING)


def test_hosted_mode_refuses_to_start_without_the_sandbox(no_bwrap: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_MODE", "hosted")
    done = cli("serve", "--port", "1")
    assert done.returncode == 2 and "only in a sandbox" in done.stderr and "bubblewrap is not installed" in done.stderr


def test_hosted_mode_runs_no_job_without_the_sandbox(no_bwrap: None, tmp_path: Path) -> None:
    settings = dataclasses.replace(load_settings(environ={"WORKBENCH_MODE": "hosted"}), data_dir=str(tmp_path))
    with pytest.raises(JobError, match="requires its workers to run in a sandbox"):
        run_spec("test.whoami", backend=ProcessBackend(settings, ECHO))


def test_local_mode_runs_jobs_without_the_sandbox(no_bwrap: None, tmp_path: Path) -> None:
    settings = dataclasses.replace(load_settings(environ={}), data_dir=str(tmp_path))
    _, visible = run_spec("test.whoami", backend=ProcessBackend(settings, ECHO))
    assert len(visible) > 5  # no PID namespace: the machine's processes are in sight


def test_the_sandbox_hides_the_data_folder_and_secrets_and_shows_the_jobs_paths(tmp_path: Path) -> None:
    settings = dataclasses.replace(load_settings(environ={}), data_dir=str(tmp_path / "data"))
    (tmp_path / "data").mkdir()
    model = tmp_path / "in" / "m.onnx"
    model.parent.mkdir()
    model.write_bytes(b"x")
    command = worker_command(["python"], Confinement((str(model),), (str(tmp_path / "out"),)), settings, "/s")
    text = " ".join(command)
    assert f"--tmpfs {tmp_path / 'data'}" in text and f"--tmpfs {PROJECT_ROOT / '.streamlit'}" in text
    assert f"--ro-bind-try {model.parent} {model.parent}" in text and f"--bind {tmp_path / 'out'}" in text
    assert "--unshare-all" in command and "--die-with-parent" in command and "--clearenv" in command
    assert command[-1] == "python" and "--cap-drop" in command


def test_the_workers_environment_carries_no_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_HISTORY_URL", "postgresql+psycopg://user:secret@db/x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    env = worker_environment()
    assert "secret" not in " ".join(env.values()) and set(env) >= {"PATH", "PYTHONPATH", "HOME"}
