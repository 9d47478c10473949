"""A worker started ahead of its one job (core.jobs.ahead): the job takes it only when its own paths are the ones
the worker's sandbox was built with; a worker started for other paths is stopped, and the job starts its own."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import onnx
import pytest
from onnx import TensorProto, helper

from core.cli.common import intake_request
from core.jobs import INSPECT, ahead, run
from core.jobs import sandbox as sandbox_module


def _one_node(path: Path) -> Path:
    x, y = (helper.make_tensor_value_info(n, TensorProto.FLOAT, [1]) for n in "xy")
    onnx.save(helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "one", [x], [y])), path)
    return path


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[list[tuple[str, ...]]]:
    """The paths each worker started in the test was shown (reads, then writes)."""
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    seen: list[tuple[str, ...]] = []
    start = sandbox_module.start_worker

    def counted(confinement: sandbox_module.Confinement, *args: Any, **kwargs: Any) -> Any:
        seen.append((*confinement.reads, *confinement.writes))
        return start(confinement, *args, **kwargs)

    monkeypatch.setattr(sandbox_module, "start_worker", counted)
    yield seen
    ahead.stop()


def test_a_job_given_the_paths_its_worker_was_started_with_runs_in_that_worker(
    tmp_path: Path, started: list[tuple[str, ...]]
) -> None:
    model, unpack = _one_node(tmp_path / "one.onnx"), tmp_path / "unpack"
    ahead.start([model], [unpack])
    assert started == [(str(model), str(unpack))]
    inspected = run(INSPECT, intake_request(str(model), unpack_dir=str(unpack)))
    assert inspected.decoded is not None and inspected.decoded.op_counts == {"Relu": 1}
    assert len(started) == 1  # the job started no worker of its own


def test_a_worker_started_for_other_paths_is_stopped_and_the_job_starts_its_own(
    tmp_path: Path, started: list[tuple[str, ...]]
) -> None:
    model, other, unpack = _one_node(tmp_path / "one.onnx"), _one_node(tmp_path / "other.onnx"), tmp_path / "unpack"
    ahead.start([other], [unpack])
    waiting = ahead._waiting[0]
    inspected = run(INSPECT, intake_request(str(model), unpack_dir=str(unpack)))
    assert inspected.record.name == "one"
    assert started == [(str(other), str(unpack)), (str(model), str(unpack))]
    assert waiting.proc.poll() is not None and not Path(waiting.scratch).exists()


def test_nothing_is_started_ahead_for_a_file_that_is_not_there(tmp_path: Path, started: list[tuple[str, ...]]) -> None:
    ahead.start([tmp_path / "missing.onnx"], [tmp_path / "unpack"])
    assert started == [] and not ahead._waiting


@pytest.mark.skipif(not sandbox_module.sandbox_status()[0], reason="no sandbox on this machine")
def test_a_worker_started_in_a_sandbox_the_job_would_not_use_is_stopped(
    tmp_path: Path, started: list[tuple[str, ...]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker is started before the sandbox is probed; a job that then runs without it (the probe failed where
    the settings allow that) never takes a worker whose walls it did not choose."""
    model, unpack = _one_node(tmp_path / "one.onnx"), tmp_path / "unpack"
    ahead.start([model], [unpack])
    waiting = ahead._waiting[0]
    assert waiting.sandboxed
    monkeypatch.setattr(sandbox_module, "require_sandbox", lambda settings: False)
    assert run(INSPECT, intake_request(str(model), unpack_dir=str(unpack))).record.name == "one"
    assert len(started) == 2 and waiting.proc.poll() is not None


def test_no_worker_starts_ahead_without_the_sandbox_the_settings_demand(
    tmp_path: Path, started: list[tuple[str, ...]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORKBENCH_REQUIRE_SANDBOX", "true")
    monkeypatch.setattr(ahead.shutil, "which", lambda name: None)  # no bubblewrap on this machine
    ahead.start([_one_node(tmp_path / "one.onnx")], [tmp_path / "unpack"])
    assert started == [] and not ahead._waiting


def test_a_worker_that_cannot_be_started_ahead_leaves_nothing_and_the_job_starts_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No process to be had (EAGAIN, ENOMEM), or a name the system refuses: the command went on without a traceback
    before the worker started ahead, and must still."""
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    model, unpack = _one_node(tmp_path / "one.onnx"), tmp_path / "unpack"

    def no_process(*args: Any, **kwargs: Any) -> Any:
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(sandbox_module, "start_worker", no_process)
    ahead.start([model], [unpack])
    ahead.start(["x" * 5000 + ".onnx"])
    assert not ahead._waiting
    assert not list((tmp_path / "data").rglob("job-*"))  # its scratch folder removed
    monkeypatch.undo()
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    inspected = run(INSPECT, intake_request(str(model), unpack_dir=str(unpack)))
    assert inspected.decoded is not None and inspected.decoded.op_counts == {"Relu": 1}
