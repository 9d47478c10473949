"""The sandbox's set-up: what it shows of the host, and where it is missing (hosted mode refuses to start and to run
jobs, local mode warns and runs them)."""

from __future__ import annotations

import dataclasses
import site
import sys
from pathlib import Path

import pytest

from core.errors import JobError
from core.jobs import JOBS, Job, ProcessBackend, view
from core.jobs import sandbox as sandbox_module
from core.jobs.sandbox import Confinement, refuse_wide_folders, shown_for, worker_command, worker_environment
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
    assert "--ro-bind / /" not in text and "--remount-ro /" in text  # not the whole host, and nothing to write


def test_the_view_shows_the_python_installation_and_no_home_around_it() -> None:
    """pyenv keeps Python in root's home, and a worktree's virtual environment may be a link to another folder:
    the sandbox shows those folders, found through the links, and never the home folder that holds them."""
    folders, links = view.python_installation()
    text = " ".join(view.host_view())
    for folder in folders:
        assert folder.is_dir() and f"--ro-bind {folder} {folder}" in text
        assert not any(home.is_relative_to(folder) for home in (Path.home(), Path("/root"), Path("/home")))
    shown = [*folders, Path("/usr"), PROJECT_ROOT]
    for needed in (sys.prefix, sys.base_prefix, *site.getsitepackages()):
        assert any(Path(needed).resolve().is_relative_to(place) for place in shown), needed
    assert all(f"--symlink {target} {link}" in text for link, target in links)
    assert "/etc/shadow" not in text and "/etc/passwd" not in text and " /var" not in text


def test_links_on_the_way_to_a_path_are_found_in_order(tmp_path: Path) -> None:
    (tmp_path / "real" / "venv" / "bin").mkdir(parents=True)
    (tmp_path / "elsewhere").symlink_to(tmp_path / "real")
    (tmp_path / "real" / "venv" / "bin" / "python").symlink_to("/usr/bin/env")
    found = view._links_on_the_way(tmp_path / "elsewhere" / "venv" / "bin" / "python")
    assert found[:2] == [(tmp_path / "elsewhere", str(tmp_path / "real")),
                         (tmp_path / "real" / "venv" / "bin" / "python", "/usr/bin/env")]  # fmt: skip


def test_a_model_in_a_home_folder_shows_the_file_not_the_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    (home / "models").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    for model in (home / "m.onnx", home / "m.onnx.data", home / "models" / "n.onnx"):
        model.write_bytes(b"x")
    assert shown_for(home / "m.onnx", []) == [home / "m.onnx", home / "m.onnx.data"]
    assert shown_for(home / "models" / "n.onnx", []) == [home / "models"]  # a folder of its own: shown


def test_the_workers_environment_carries_no_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_HISTORY_URL", "postgresql+psycopg://user:secret@db/x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    env = worker_environment()
    assert "secret" not in " ".join(env.values()) and set(env) >= {"PATH", "PYTHONPATH", "HOME"}


def test_numpys_blas_in_a_worker_has_one_thread_unless_the_operator_says_otherwise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    assert worker_environment()["OPENBLAS_NUM_THREADS"] == "1"
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "4")
    assert worker_environment()["OPENBLAS_NUM_THREADS"] == "4"


def test_a_job_is_never_given_a_home_tmp_the_project_or_code_as_a_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder a job writes into is shown as it is, over everything the sandbox hides: never one of these."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    settings = dataclasses.replace(load_settings(environ={}), data_dir=str(tmp_path / "data"))
    for folder in (tmp_path / "home", Path("/tmp"), Path("/"), PROJECT_ROOT, tmp_path / "data", PROJECT_ROOT / "core"):
        with pytest.raises(JobError, match="cannot"):
            refuse_wide_folders(Confinement((), (str(folder),)), settings)
    refuse_wide_folders(Confinement((), (str(tmp_path / "home" / "results"),)), settings)  # a folder of its own


def test_a_workers_tree_is_measured_from_proc_as_psutil_measures_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """The limits' watcher walks a worker's tree through /proc's children files (a process forked from a thread
    included) and finds what psutil's walk over every process finds: the same processes, the same memory."""
    import subprocess
    import threading
    import time

    import psutil

    tree = subprocess.Popen(["bash", "-c", "sleep 60 & (sleep 60 & wait) & wait"])
    forked: list[subprocess.Popen[bytes]] = []
    thread = threading.Thread(target=lambda: forked.append(subprocess.Popen(["sleep", "60"])))
    try:
        thread.start()
        thread.join()
        deadline = time.monotonic() + 10
        while len(psutil.Process(tree.pid).children(recursive=True)) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        for ps, least in ((psutil.Process(tree.pid), 4), (psutil.Process(), 6)):  # bash, sleep, bash, sleep
            walked, everyone = sandbox_module.tree_usage(ps.pid), sandbox_module._tree_usage_psutil(ps.pid)
            assert walked[1] == everyone[1] and walked[1] >= least
            assert abs(walked[0] - everyone[0]) < 16 << 20  # the same processes, read a moment apart
        monkeypatch.setattr(sandbox_module, "_CHILDREN_FILES", False)  # a kernel without them: psutil's way
        assert sandbox_module.tree_usage(tree.pid)[1] == 4
    finally:
        for proc in (tree, *forked):
            for child in psutil.Process(proc.pid).children(recursive=True):
                child.kill()
            proc.kill()
            proc.wait()
