"""Runtimes (core.runtime.runtimes): each ONNX Runtime build in an environment of its own, listed with what it offers,
and a job's worker started from the Python of the runtime its request names, in the same sandbox."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from core.errors import JobError, RuntimeNotFound
from core.jobs import JOBS, Job, ProcessBackend, submit
from core.jobs.sandbox import Confinement, refuse_wide_folders, sandbox_status, worker_command
from core.jobs.view import code_folders, runtime_view
from core.runtime import runtimes
from core.runtime.runtimes import RUNTIMES_DIR, Runtime, installed_runtimes, runtime_named
from core.settings import PROJECT_ROOT, load_settings
from tests.cli import cli
from tests.runtimes import OPENVINO, require_openvino
from tests.unit.runtime_jobs import WhereRequest

WHERE: Job[WhereRequest, dict[str, str]] = Job(name="test.where", target="tests.unit.runtime_jobs:where")
REGISTRY = JOBS.with_jobs(WHERE)
VENV_SITE = str(PROJECT_ROOT / ".venv" / "lib")


@pytest.fixture(scope="module")
def openvino() -> Runtime:
    require_openvino()
    return runtime_named(OPENVINO)


def _backend(data: Path, warm: int = 0) -> ProcessBackend:
    settings = dataclasses.replace(load_settings(environ={}), data_dir=str(data))
    return ProcessBackend(settings, REGISTRY, warm=warm)


def test_runtimes_json_lists_the_default_wheel_and_the_openvino_build_with_their_providers(openvino: Runtime) -> None:
    done = cli("runtimes", "--json")
    assert done.returncode == 0, done.stderr
    rows = {row["name"]: row for row in json.loads(done.stdout)["runtimes"]}
    assert rows["default"]["package"] == "onnxruntime" and "CPUExecutionProvider" in rows["default"]["providers"]
    assert rows[OPENVINO]["package"] == "onnxruntime-openvino" and rows[OPENVINO]["onnxruntime"] == "1.24.1"
    assert rows[OPENVINO]["providers"] == ["OpenVINOExecutionProvider", "CPUExecutionProvider"]
    assert not rows[OPENVINO]["torch_imported"] and not rows[OPENVINO]["error"]
    assert all("devices" in row and "plugins" in row for row in rows.values())  # get_ep_devices(), plugin EPs


def test_a_job_on_the_openvino_runtime_runs_its_build_in_the_sandbox_and_the_rest_from_the_apps_environment(
    openvino: Runtime, tmp_path: Path
) -> None:
    seen = submit(WHERE, WhereRequest(runtime=OPENVINO), _backend(tmp_path / "data")).result()
    assert seen["python"] == openvino.python and seen["onnxruntime"] == "1.24.1"
    assert seen["onnxruntime_file"].startswith(openvino.root)
    assert all(seen[k].startswith(VENV_SITE) for k in ("numpy_file", "onnx_file", "msgspec_file"))
    assert seen["torch"] == "False"  # its onnxruntime pulls nothing of torch in through the app's environment
    default = submit(WHERE, WhereRequest(), _backend(tmp_path / "data")).result()
    assert default["onnxruntime"] != "1.24.1" and default["onnxruntime_file"].startswith(VENV_SITE)


@pytest.mark.skipif(not sandbox_status()[0], reason="bubblewrap cannot build a sandbox here")
def test_a_sandboxed_worker_cannot_write_into_its_runtimes_environment(openvino: Runtime, tmp_path: Path) -> None:
    target = str(Path(openvino.root) / "lib" / "tampered.py")
    seen = submit(WHERE, WhereRequest(runtime=OPENVINO, write_into=target), _backend(tmp_path / "data")).result()
    assert seen["write"] == "OSError" and not Path(target).exists()


def test_a_runtime_has_a_warm_pool_of_its_own_started_by_its_first_job(openvino: Runtime, tmp_path: Path) -> None:
    backend = _backend(tmp_path / "data", warm=1)
    assert backend.pool is not None
    try:
        first = submit(WHERE, WhereRequest(runtime=OPENVINO), backend)
        # the first job makes the pool; it may take the pool's first worker if that one is starting before it asks
        assert first.result()["onnxruntime"] == "1.24.1"
        pool = backend.pool_for(openvino)
        assert pool is not None and pool is not backend.pool and pool.runtime == openvino
        assert pool.exclusive is backend.pool.exclusive  # a benchmark on any runtime holds every pool back
        deadline = time.monotonic() + 90
        while pool.ready_count() == 0:
            assert time.monotonic() < deadline, "no worker of the OpenVINO runtime got ready"
            time.sleep(0.05)
        second = submit(WHERE, WhereRequest(runtime=OPENVINO), backend)
        assert second.result()["onnxruntime"] == "1.24.1" and second.handle.started_warm  # type: ignore[attr-defined]
    finally:
        for pool in (backend.pool, backend.pool_for(openvino)):
            if pool is not None:
                pool.close()


def test_a_runtime_this_machine_lacks_is_refused_naming_those_it_has_and_how_to_build_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runtimes, "RUNTIMES_DIR", tmp_path)
    (tmp_path / "gpu" / "bin").mkdir(parents=True)
    (tmp_path / "gpu" / "bin" / "python").write_text("")  # no .ready: the Makefile did not finish it
    assert [r.name for r in installed_runtimes()] == ["default"]
    with pytest.raises(RuntimeNotFound, match=r"no runtime 'gpu'.*it has: default.*make runtime-gpu"):
        runtime_named("gpu")
    with pytest.raises(RuntimeNotFound, match=r"no runtime '\.\./x'"):
        runtime_named("../x")
    with pytest.raises(RuntimeNotFound):  # refused when the job is submitted, before any worker starts
        submit(WHERE, WhereRequest(runtime="gpu"), _backend(tmp_path / "data"))


def test_the_sandbox_shows_a_runtime_made_elsewhere_read_only_and_the_gpu_only_to_a_gpu_runtime(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base, root = tmp_path / "python", tmp_path / "rt"
    (base / "bin").mkdir(parents=True)
    extra = tmp_path / "extra-site"
    extra.mkdir()
    site_folder = root / "lib" / "python3.11" / "site-packages"
    site_folder.mkdir(parents=True)
    (root / "pyvenv.cfg").write_text(f"home = {base / 'bin'}\n")
    (site_folder / "zz_workbench_app.pth").write_text(f"{extra}\n")
    monkeypatch.setattr("core.jobs.view._nvidia_devices", lambda: ["/dev/nvidia0", "/dev/nvidiactl"])
    args = " ".join(runtime_view(str(root), gpu=False))
    assert f"--ro-bind {root} {root}" in args and f"--ro-bind {base} {base}" in args and str(extra) in args
    assert "--bind " not in args.replace("--ro-bind ", "") and "nvidia" not in args
    assert "--dev-bind-try /dev/nvidia0 /dev/nvidia0" in " ".join(runtime_view(str(root), gpu=True))
    assert runtime_view("") == ()  # the default runtime: the app's own environment, shown as before
    runtime = Runtime(name="rt", python=str(root / "bin" / "python"), root=str(root))
    settings = load_settings(environ={})
    assert f"--ro-bind {root} {root}" in " ".join(
        worker_command(["py"], Confinement(), settings, "/s", runtime=runtime)
    )


def test_no_job_may_write_into_the_runtimes_environments() -> None:
    assert RUNTIMES_DIR in code_folders()
    with pytest.raises(JobError, match="among the code every worker runs"):
        refuse_wide_folders(Confinement(writes=(str(RUNTIMES_DIR / OPENVINO / "lib"),)), load_settings(environ={}))


def test_a_plugin_ep_package_is_registered_and_its_devices_listed_or_why_none(monkeypatch: pytest.MonkeyPatch) -> None:
    """As onnxruntime-ep-openvino 1.8.1 beside onnxruntime 1.32 on this AMD machine: it registers, and
    get_ep_devices() offers it nothing (OpenVINO's plugin lists Intel devices only)."""
    from core.runtime import probe

    cpu = SimpleNamespace(ep_name="CPUExecutionProvider", device=SimpleNamespace(type="CPU", vendor="AMD"))
    npu = SimpleNamespace(ep_name="FakeEP", device=SimpleNamespace(type="NPU", vendor="Intel"))
    registered: list[str] = []

    def register(name: str, path: str) -> None:
        if name == "onnxruntime-ep-broken":
            raise RuntimeError("built for another onnxruntime")
        registered.append(name)

    ort = SimpleNamespace(
        __version__="1.32.0",
        get_ep_devices=lambda: [cpu, *([npu] if "onnxruntime-ep-npu" in registered else [])],
        register_execution_provider_library=register,
    )
    names = ["onnxruntime", "onnxruntime-ep-broken", "onnxruntime-ep-none", "onnxruntime-ep-npu"]
    monkeypatch.setattr(
        probe.importlib.metadata, "distributions", lambda: [SimpleNamespace(metadata={"Name": n}) for n in names]
    )
    monkeypatch.setattr(probe.importlib, "import_module", lambda name: SimpleNamespace(get_library_path=lambda: name))
    found = {p["package"]: p for p in probe._plugins(ort)}
    assert set(found) == {"onnxruntime-ep-broken", "onnxruntime-ep-none", "onnxruntime-ep-npu"}
    assert found["onnxruntime-ep-broken"]["why_none"].startswith("it did not register: built for another")
    assert (
        found["onnxruntime-ep-none"]["why_none"]
        == "it registered, but get_ep_devices() offers it no device on this machine"
    )
    assert found["onnxruntime-ep-npu"]["devices"] == [{"ep": "FakeEP", "type": "NPU", "vendor": "Intel"}]


def test_benchmark_profile_and_tune_say_where_they_run_with_one_piece_whose_fields_their_json_keeps() -> None:
    """Benchmark's, Profile's and Tune's requests are each a RuntimeChoice (runtime, providers, strict), whose
    fields stay the request's own in the job's JSON, as before it: a request written as JSON by an earlier version
    reads, and its worker starts from the runtime it names."""
    from core.bench import BenchRequest
    from core.jobs.wire import from_data, to_data
    from core.model.measured import MeasuredModel
    from core.profile import ProfileRequest
    from core.runtime.runtimes import RuntimeChoice, asked_runtime
    from core.tune import TuneRequest

    model = MeasuredModel(path="m.onnx", inputs=[])
    choice = dataclasses.asdict(RuntimeChoice(runtime="openvino", providers=["OpenVINOExecutionProvider"], strict=True))
    made = [BenchRequest(model=model, **choice), ProfileRequest(model=model, **choice)]
    made.append(TuneRequest(model=model, out_dir="/tmp/tuned", **choice))
    for request in made:
        data = to_data(request)
        assert isinstance(request, RuntimeChoice) and {k: data[k] for k in choice} == choice
        assert from_data(data, type(request)) == request and asked_runtime(request) == "openvino"
    assert RuntimeChoice() == RuntimeChoice(runtime="default", providers=None, strict=False)  # each job's default


def test_the_server_asks_its_runtimes_as_it_starts_and_a_page_asking_meanwhile_shares_that_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A runtime's description is its own Python's answer (0.5-0.7 s): the server asks for it in a thread as it
    starts, so that the first page with a runtime picker does not wait on it, and a page asking while that answer
    is on its way waits for it rather than asking a second time."""
    from ui import server

    asked: list[str] = []

    def slow_answer(command: list[str], **kwargs: object) -> SimpleNamespace:
        asked.append(command[0])
        time.sleep(0.2)
        line = json.dumps({"onnxruntime": "1.0", "package": "onnxruntime", "providers": ["CPUExecutionProvider"]})
        return SimpleNamespace(returncode=0, stdout=line.encode(), stderr=b"")

    monkeypatch.setattr(runtimes, "runtime_names", lambda: ["default", "other"])
    monkeypatch.setattr(runtimes, "runtime_named", lambda name: Runtime(name=name, python=f"/py/{name}"))
    monkeypatch.setattr(runtimes.subprocess, "run", slow_answer)
    runtimes._describe.cache_clear()
    try:
        thread = server.describe_runtimes_ahead()
        assert thread is not None
        page = runtimes.describe("default")  # a page's picker, while the server's thread asks
        thread.join(timeout=10)
        assert page.onnxruntime == "1.0" and runtimes.describe("other").providers == ["CPUExecutionProvider"]
        assert sorted(asked) == ["/py/default", "/py/other"]  # each asked once
        monkeypatch.setattr(runtimes, "runtime_names", lambda: ["default"])
        assert server.describe_runtimes_ahead() is None  # one runtime: no picker, nothing to ask
    finally:
        runtimes._describe.cache_clear()
