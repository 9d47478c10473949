"""Pre-started workers (core.jobs.warm): the job runs in a worker whose imports are done, still one fresh
process per job, inside the same sandbox, with the same limits and errors, on exactly the paths it was given."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.decode import DecodeRequest
from core.errors import JobCancelled, JobCrashed, JobOutOfMemory, JobTimedOut
from core.jobs import DECODE, Job, JobSpec, ProcessBackend, submit
from core.jobs.process import submit_spec
from core.jobs.sandbox import sandbox_status
from core.settings import load_settings
from core.workspace import open_within
from tests import builders
from tests.unit.jobs_for_tests import Point, progress_seen
from tests.unit.test_jobs import TEST_JOBS

T = "tests.unit.jobs_for_tests"
JOBS = TEST_JOBS.with_jobs(
    Job(name="test.calls", target=f"{T}:calls"),
    Job(name="test.probe", target=f"{T}:probe"),
    Job(name="test.torch_imported", target=f"{T}:torch_imported"),
    Job(name="test.torch_imported_for_torch", target=f"{T}:torch_imported", torch=True),
)
SANDBOX = sandbox_status()[0]


def _warm_backend(data: Path, sandbox: bool, size: int = 1) -> ProcessBackend:
    settings = dataclasses.replace(load_settings(environ={}), data_dir=str(data), sandbox=sandbox)
    return ProcessBackend(settings, JOBS, warm=size)


def _ready(backend: ProcessBackend, torch: bool = False) -> ProcessBackend:
    """The backend once a pre-started worker (of the kind that imported torch, or the other) waits: it is
    replaced after each job, in a second or two."""
    assert backend.pool is not None
    deadline = time.monotonic() + 90
    while backend.pool.ready_count(torch) == 0:
        assert time.monotonic() < deadline, "no worker got ready"
        time.sleep(0.05)
    return backend


@pytest.fixture(scope="module")
def pool_backend(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessBackend]:
    """Sandboxed where this machine has the sandbox (the unsandboxed worker has its own test below)."""
    backend = _warm_backend(tmp_path_factory.mktemp("warm") / "data", sandbox=SANDBOX, size=1)
    yield backend
    assert backend.pool is not None
    backend.pool.close()


@pytest.fixture
def warm(pool_backend: ProcessBackend) -> ProcessBackend:
    return _ready(pool_backend)


def _run(backend: ProcessBackend, spec: JobSpec) -> object:
    handle = submit_spec(spec, backend)
    result = handle.result(timeout=120)
    assert handle.started_warm  # type: ignore[attr-defined]
    return result


def test_a_warm_worker_returns_typed_results_and_is_never_used_twice(warm: ProcessBackend) -> None:
    midpoint = JobSpec(name="test.midpoint", args={"a": Point(0, 2, "a"), "b": Point(4, 4, "b")})
    assert _run(warm, midpoint) == Point(2, 3, "a-b")
    assert _run(_ready(warm), JobSpec(name="test.calls")) == 1
    assert _run(_ready(warm), JobSpec(name="test.calls")) == 1  # a fresh process each time


def test_a_warm_worker_has_the_same_endings(warm: ProcessBackend) -> None:
    endings: list[tuple[JobSpec, type[Exception], str]] = [
        (JobSpec(name="test.segfault"), JobCrashed, "SIGSEGV"),
        (JobSpec(name="test.sleep", args={"seconds": 30}, timeout_s=1), JobTimedOut, "limit of 1 s"),
        (JobSpec(name="test.sleep", args={"seconds": 60}), JobCancelled, ""),  # cancelled below
        (JobSpec(name="test.allocate", args={"megabytes": 8192}, memory_mb=1500), JobOutOfMemory, "limit of 1500 MB"),
    ]
    for spec, error, said in endings:
        handle = submit_spec(spec, _ready(warm))
        if error is JobCancelled:
            time.sleep(0.5)
            handle.cancel()
        with pytest.raises(error, match=said):
            handle.result(timeout=60)
        assert handle.started_warm  # type: ignore[attr-defined]


def test_progress_comes_from_a_warm_worker(warm: ProcessBackend) -> None:
    handle = submit_spec(JobSpec(name="test.with_progress", args={"steps": 20}), warm)
    seen = progress_seen(handle)
    assert handle.result() == 20 and handle.started_warm  # type: ignore[attr-defined]
    assert "step 20 of 20" in seen


def test_a_page_and_the_next_page_all_start_warm(warm: ProcessBackend) -> None:
    """As Decode runs its decoding and its graph's layout, and then Partition its one job: three workers without
    torch wait (a used one's replacement is not ready in time for the next page), and the pool never keeps more."""
    assert warm.pool is not None and warm.pool.wanted(torch=False) == 3 and warm.pool.wanted(torch=True) == 1
    deadline = time.monotonic() + 90
    while warm.pool.ready_count() < 3:
        assert time.monotonic() < deadline, "the third worker did not get ready"
        time.sleep(0.05)
    handles = [submit_spec(JobSpec(name="test.calls"), warm) for _ in range(3)]
    assert [h.result(timeout=120) for h in handles] == [1, 1, 1]
    assert all(h.started_warm for h in handles)  # type: ignore[attr-defined]
    assert warm.pool.ready_count() <= 3


def test_only_the_jobs_that_use_torch_go_to_a_worker_that_imported_it(warm: ProcessBackend) -> None:
    """The other jobs' workers are started without it, at a sixth of the cost."""
    assert _run(warm, JobSpec(name="test.torch_imported")) is False
    assert _run(_ready(warm, torch=True), JobSpec(name="test.torch_imported_for_torch")) is True


def test_a_job_too_small_for_the_imports_starts_its_own_worker(warm: ProcessBackend) -> None:
    """numpy, onnx and onnxruntime take ~70 MB; a job allowed 110 MB gets a worker without them."""
    handle = submit_spec(JobSpec(name="test.calls", memory_mb=110), warm)
    assert handle.result(timeout=60) == 1 and not handle.started_warm  # type: ignore[attr-defined]


def _session(warm: ProcessBackend) -> tuple[ProcessBackend, Path, Path]:
    """A session's upload folder and a fresh folder for a job's results, in the backend's data folder."""
    data = Path(warm.settings.data_dir)
    other = data / "workspaces" / "someone-else" / "upload-1"
    other.mkdir(parents=True, exist_ok=True)
    (other / "theirs.onnx").write_text("theirs")
    folder = data / "workspaces" / "me" / f"upload-{time.monotonic_ns()}"
    folder.mkdir(parents=True)
    out = data / "workspaces" / "me" / f"result-{time.monotonic_ns()}"
    out.mkdir()
    return warm, folder, out


@pytest.fixture
def session(warm: ProcessBackend) -> tuple[ProcessBackend, Path, Path]:
    return _session(warm)


def test_a_warm_job_reads_and_writes_the_paths_it_was_given(session: tuple[ProcessBackend, Path, Path]) -> None:
    backend, folder, out = session
    model = folder / "model.txt"
    model.write_text("the model")
    seen = _run(
        backend,
        JobSpec(name="test.probe", args={"model": str(model), "out": str(out), "data_dir": backend.settings.data_dir}),
    )
    assert isinstance(seen, dict) and seen["read"] == "the model"
    assert (out / "result.txt").read_text() == "from the job"  # moved into the real folder
    assert (out / "nested" / "deep.txt").read_text() == "deep"
    if backend.settings.sandbox:
        assert seen["write_model"] == "OSError" and model.read_text() == "the model"  # read only, as before
        assert "someone-else" not in seen["data_files"] and "theirs" not in seen["data_files"]


def test_a_warm_decode_names_files_in_the_real_folder(session: tuple[ProcessBackend, Path, Path]) -> None:
    backend, folder, out = session
    model = builders.write(builders.relu_model(), folder / "relu.onnx")
    handle = submit(DECODE, DecodeRequest(path=str(model), out_dir=str(out)), backend)
    decoded = handle.result(timeout=60)
    assert handle.handle.started_warm  # type: ignore[attr-defined]
    assert decoded.node_count == 1 and decoded.node_rows is not None
    assert Path(decoded.node_rows.path).parent == out
    with open_within(decoded.node_rows.path, out) as fh:
        assert fh.read()


def test_paths_outside_the_data_folder_get_a_worker_of_their_own(warm: ProcessBackend, tmp_path: Path) -> None:
    model = builders.write(builders.relu_model(), tmp_path / "elsewhere" / "relu.onnx")
    handle = submit(DECODE, DecodeRequest(path=str(model)), warm)
    assert handle.result(timeout=60).node_count == 1
    assert handle.handle.started_warm is (not warm.settings.sandbox)  # type: ignore[attr-defined]


@pytest.mark.skipif(not SANDBOX, reason="the module's own backend is the unsandboxed one")
def test_without_the_sandbox_a_warm_job_runs_on_the_real_paths(tmp_path: Path) -> None:
    backend = _ready(_warm_backend(tmp_path / "data", sandbox=False))
    try:
        test_a_warm_job_reads_and_writes_the_paths_it_was_given(_session(backend))
    finally:
        assert backend.pool is not None
        backend.pool.close()
