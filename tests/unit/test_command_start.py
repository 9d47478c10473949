"""How soon a command's worker starts and what it does before its job comes (issue #51: a command's fixed cost).

``python -m core inspect MODEL`` starts its job's worker from its words alone, before argparse is imported and the
parser built, and that worker imports the job's modules and onnx while the command still builds the request.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import onnx
import pytest
from onnx import TensorProto, helper

import core.cli
from core.cli import inspect as inspect_command
from core.jobs import JOBS, Job, ProcessBackend, ahead
from core.settings import PROJECT_ROOT, load_settings
from tests.unit.jobs_for_tests import run_spec


def _one_node(path: Path) -> Path:
    x, y = (helper.make_tensor_value_info(n, TensorProto.FLOAT, [1]) for n in "xy")
    onnx.save(helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "one", [x], [y])), path)
    return path


@pytest.fixture
def starts(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The model arguments inspect started a worker for from its words (none is started here)."""
    seen: list[str] = []

    def start_worker(model: str) -> str:
        seen.append(model)
        return f"unpack-{model}"

    monkeypatch.setattr(inspect_command, "_start_worker", start_worker)
    yield seen
    inspect_command._started.clear()


@pytest.mark.parametrize(
    "argv",
    [
        ["inspect", "m.onnx"],
        ["inspect", "m.onnx", "--json"],
        ["--lang", "zh", "inspect", "--json", "m.onnx"],
        ["--lang=zh", "inspect", "m.onnx"],
    ],
)
def test_inspect_given_a_model_starts_its_worker_before_its_arguments_are_parsed(
    argv: list[str], starts: list[str]
) -> None:
    core.cli._start_ahead(argv)
    assert starts == ["m.onnx"] and inspect_command._started == {"m.onnx": "unpack-m.onnx"}


@pytest.mark.parametrize(
    "argv",
    [
        ["inspect", "-h"],
        ["inspect", "m.onnx", "--help"],
        ["inspect", "sample:tinycnn"],
        ["inspect", "a.onnx", "b.onnx"],
        ["inspect", "--jso", "m.onnx"],  # an abbreviation: argparse decides what it is
        ["info", "m.onnx"],
        ["--lang", "inspect", "m.onnx"],  # "inspect" is --lang's value here
        [],
    ],
)
def test_words_argparse_may_read_otherwise_start_nothing_ahead(argv: list[str], starts: list[str]) -> None:
    core.cli._start_ahead(argv)
    assert starts == []


def test_a_file_of_a_hugging_face_folder_has_its_worker_started_with_the_folder_it_is_read_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """FOLDER/onnx/model.onnx is read with FOLDER (core.cli.common.intake_request): the worker started ahead is
    shown the folder, so the job takes it, where a worker shown the file alone was stopped and a second started."""
    from core.cli.common import intake_request
    from core.jobs import INSPECT, run
    from core.jobs import sandbox as sandbox_module

    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    folder = tmp_path / "hf"
    (folder / "onnx").mkdir(parents=True)
    (folder / "config.json").write_text('{"model_type": "bert"}')
    member = _one_node(folder / "onnx" / "model.onnx")
    started: list[tuple[str, ...]] = []
    start = sandbox_module.start_worker

    def counted(confinement: sandbox_module.Confinement, *args: Any, **kwargs: Any) -> Any:
        started.append(confinement.reads)
        return start(confinement, *args, **kwargs)

    monkeypatch.setattr(sandbox_module, "start_worker", counted)
    try:
        unpack = inspect_command._start_worker(str(member))
        inspected = run(INSPECT, intake_request(str(member), unpack_dir=unpack))
    finally:
        ahead.stop()
    assert inspected.record.folder == str(folder) and inspected.decoded is not None
    assert started == [(str(folder),)]  # one worker, shown the folder


def _tree(pid: int) -> list[int]:
    """``pid`` and every process under it (bubblewrap's, then the worker)."""
    found = [pid]
    for thread in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{thread}/children") as f:
            for child in f.read().split():
                found += _tree(int(child))
    return found


def _has_loaded(pid: int, library: str) -> bool:
    try:
        with open(f"/proc/{pid}/maps") as f:
            return library in f.read()
    except OSError:
        return False


def test_a_worker_started_ahead_imports_its_jobs_modules_before_the_job_comes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its imports run while the command still builds the request, not after it arrives."""
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    ahead.start([_one_node(tmp_path / "one.onnx")], [tmp_path / "unpack"], imports=("onnx",))
    try:
        waiting = ahead._waiting[0]
        deadline = time.monotonic() + 30
        while not any(_has_loaded(p, "onnx_cpp2py_export") for p in _tree(waiting.proc.pid)):
            assert time.monotonic() < deadline, "the worker did not import onnx before its request"
            time.sleep(0.02)
        assert waiting.proc.poll() is None and ahead._waiting == [waiting]  # no request was sent
    finally:
        ahead.stop()


def test_python_m_core_inspect_starts_its_worker_before_argparse_and_runs_its_job_there(tmp_path: Path) -> None:
    """One worker, started before argparse, the language module or the parser, told to import onnx and the job's
    modules ahead; the job runs in it."""
    model = _one_node(tmp_path / "one.onnx")
    script = f"""
import sys
import core.jobs.sandbox as sandbox
start, seen = sandbox.start_worker, []
early = ("argparse", "core.cli.language")
def counted(*args, **kwargs):
    seen.append(([m for m in early if m in sys.modules], kwargs.get("imports", ())))
    return start(*args, **kwargs)
sandbox.start_worker = counted
from core.cli import main
code = main(["inspect", {str(model)!r}])
print(code, seen[0][0], len(seen), "onnx" in seen[0][1])
"""
    env = dict(os.environ, WORKBENCH_DATA_DIR=str(tmp_path / "data"))
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.stdout.splitlines()[-1] == "0 [] 1 True", done.stdout + done.stderr
    assert "Relu 1" in done.stdout


def test_a_worker_runs_its_job_with_garbage_collection_on_and_its_imports_frozen_out_of_it(tmp_path: Path) -> None:
    """The worker imports with the cyclic collector off (7% of its imports' time); the job runs with it on, and the
    collector no longer walks what the imports made."""
    jobs = JOBS.with_jobs(Job(name="test.collection", target="tests.unit.jobs_for_tests:collection_seen"))
    settings = dataclasses.replace(load_settings(environ={}), data_dir=str(tmp_path))
    enabled, frozen = run_spec("test.collection", backend=ProcessBackend(settings, jobs))
    assert enabled and frozen > 5_000
