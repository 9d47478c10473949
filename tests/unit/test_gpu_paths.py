"""The code that needs a GPU, run without one: each provider's row of options and preparation
(core.runtime.provider_options), and benchmarks/gpu_check.py's way out and its table. On a machine with an NVIDIA
GPU and `make runtime-gpu`, benchmarks/gpu_check.py runs all of it for real."""

from __future__ import annotations

import dataclasses
import threading
import types
from pathlib import Path

import numpy as np
import pytest

from benchmarks import gpu_check
from core.runtime import provider_options
from core.runtime.provider_options import CPU, SETUPS, ProviderSetup, session_providers
from core.runtime.runtimes import runtime_names
from core.runtime.session_config import SessionConfig

TRT, CUDA = "TensorrtExecutionProvider", "CUDAExecutionProvider"


def test_tensorrt_keeps_its_engines_and_timing_cache_in_the_cache_folder_given(tmp_path: Path) -> None:
    options = SETUPS[TRT].options(str(tmp_path), 0)
    folder = tmp_path / "tensorrt"
    assert options["trt_engine_cache_enable"] == options["trt_timing_cache_enable"] == "1"
    assert options["trt_engine_cache_path"] == options["trt_timing_cache_path"] == str(folder) and folder.is_dir()
    assert SETUPS[TRT].device == SETUPS[CUDA].device == "gpu" and SETUPS[CUDA].options("", 0)["device_id"] == "0"


def test_openvino_is_given_the_sessions_threads_since_it_ignores_onnx_runtimes() -> None:
    openvino = SETUPS["OpenVINOExecutionProvider"]
    assert openvino.options("", 0) == {"device_type": "CPU"}
    assert openvino.options("", 1) == {"device_type": "CPU", "num_of_threads": "1"}


def test_a_strict_session_lists_no_cpu_provider_unless_the_cpu_is_all_that_is_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[str] = []
    fake = ProviderSetup(
        provider="FakeExecutionProvider",
        options=lambda cache, _threads: {"cache": cache},
        prepare=lambda: calls.append("x"),
    )
    monkeypatch.setitem(SETUPS, "FakeExecutionProvider", fake)
    monkeypatch.setattr(provider_options, "_PREPARED", set())
    asked = ["FakeExecutionProvider", CPU]
    assert session_providers(asked, "/c") == [("FakeExecutionProvider", {"cache": "/c"}), CPU]
    assert session_providers(asked, "/c", strict=True) == [("FakeExecutionProvider", {"cache": "/c"})]
    assert session_providers([CPU], strict=True) == [CPU]  # ORT refuses a strict session only when CPU is listed
    assert calls == ["x"]  # prepared once per process, however many sessions


def test_tensorrts_libraries_are_loaded_from_its_package_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("libnvinfer.so.10", "libnvinfer_plugin.so.10", "libnvonnxparser.so.10", "libother.so"):
        (tmp_path / name).write_bytes(b"")
    loaded: list[tuple[str, int]] = []
    monkeypatch.setattr(provider_options, "_preload_cuda", lambda: None)
    monkeypatch.setattr(provider_options.ctypes, "CDLL", lambda path, mode: loaded.append((Path(path).name, mode)))
    spec = types.SimpleNamespace(submodule_search_locations=[str(tmp_path)])
    names = provider_options._preload_tensorrt(lambda name: spec if name == "tensorrt_libs" else None)
    assert names == ["libnvinfer.so.10", "libnvinfer_plugin.so.10", "libnvonnxparser.so.10"]
    assert {mode for _name, mode in loaded} == {provider_options.ctypes.RTLD_GLOBAL}
    assert provider_options._preload_tensorrt(lambda name: None) == []  # no package: the provider says so itself


def test_the_gpu_check_without_a_gpu_says_so_and_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert gpu_check.main([], smi=lambda: "") == 0
    assert "No NVIDIA GPU here (nvidia-smi lists no GPU): nothing to check." in capsys.readouterr().out
    assert gpu_check.gpu_present(lambda: "GPU 0: NVIDIA H200 (UUID: GPU-1)\n") == (
        True,
        "GPU 0: NVIDIA H200 (UUID: GPU-1)",
    )


@pytest.mark.skipif("gpu" in runtime_names(), reason="the GPU runtime is built here")
def test_the_gpu_check_with_a_gpu_but_no_gpu_runtime_says_how_to_build_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert gpu_check.main([], smi=lambda: "GPU 0: NVIDIA H200 (UUID: GPU-1)") == 0
    assert "run `make runtime-gpu`, then this again" in capsys.readouterr().out


def test_the_gpu_checks_table_fails_a_tensorrt_without_its_caches_and_a_binding_that_changes_outputs() -> None:
    found = {
        "tensorrt": {
            "engine_build_s": 12.5, "from_cache_s": 0.4, "run_ms": 0.2, "cache_files": ["a.engine"],
            "engine_cached": True, "timing_cached": False,
        },
        "cuda": {"run_ms": 0.3, "io_binding_ms": 0.2, "max_abs_diff": 0.5},
        "cuda_graph": {"io_binding_ms": 0.2, "cuda_graph_ms": 0.1, "max_abs_diff": 0.0},
        "served_cuda_graph": {
            "providers": [CUDA, CPU], "other_batch": True, "max_abs_diff": 0.0,
            "cuda_graph": {"used": True, "captured": {"input": [1, 3, 32, 32]}, "replayed": 1, "without_graph": 1},
        },
        "torch": {"version": "2.13.0", "cuda": "13.0", "own": False, "sees_gpu": True},  # .venv's: PyTorch's CPU build
    }  # fmt: skip
    rows = gpu_check._session_rows(found, 13.0)
    assert [(r.check, r.outcome) for r in rows] == [
        ("TensorRT engine and caches", "FAILED"),
        ("CUDA IO binding", "FAILED"),
        ("CUDA graphs (Tune)", "ok"),
        ("served CUDA graphs (Deploy)", "ok"),
        ("torch in the GPU runtime", "FAILED"),
    ]
    assert "built in 12.5 s, loaded from the cache in 0.4 s" in rows[0].found  # the build apart from the runs
    assert "replayed 1, without the graph 1" in rows[3].found and ".venv's, not its own" in rows[4].found
    text = gpu_check.table([*rows, gpu_check.Row("GPU runtime", "ok", "onnxruntime-gpu 1.31.1", 0.0)])
    assert text.splitlines()[0].split() == ["check", "outcome", "s", "found"] and len(text.splitlines()) == 7


def test_the_gpu_checks_served_graph_row_fails_a_server_that_never_replays_or_answers_otherwise() -> None:
    said = {"used": True, "captured": {"x": [1, 4]}, "replayed": 1, "without_graph": 1}
    served = {"providers": [CUDA, CPU], "other_batch": True, "max_abs_diff": 0.0, "cuda_graph": said}
    assert gpu_check._served_row(served).outcome == "ok"
    for broken in (
        {**served, "cuda_graph": {**said, "replayed": 0}},  # captured, never replayed
        {**served, "cuda_graph": {**said, "without_graph": 0}},  # another batch through the graph
        {**served, "max_abs_diff": 0.5},  # answers unlike a plain CUDA session's
        {"error": "/predict answered 422"},
    ):
        assert gpu_check._served_row(broken).outcome == "FAILED"
    no_graph = {**served, "cuda_graph": {"used": False, "why": "the session runs without CUDAExecutionProvider"}}
    assert "no graph: the session runs without CUDAExecutionProvider" in gpu_check._served_row(no_graph).found
    torch = {"version": "2.13.0", "cuda": "13.0", "own": True, "sees_gpu": True}
    assert gpu_check._torch_row(torch).outcome == "ok"
    assert gpu_check._torch_row({**torch, "cuda": ""}).outcome == "FAILED"  # a CPU build


BOUND = SessionConfig(io_binding=True, providers=(CUDA, CPU), runtime="gpu")  # CUDA with IO binding, on the GPU build
GRAPHED = dataclasses.replace(BOUND, cuda_graph=True)


def test_cuda_graphs_are_a_tune_candidate_only_on_cuda_with_io_binding_and_reach_the_cuda_providers_options(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from core.deploy.server import _provider_options
    from core.tune.search import Space, config_label, stage_configs

    space = Space(physical_cores=2, providers=(CUDA,), variants=(), batches=())
    assert stage_configs("cuda_graph", BOUND, space) == [GRAPHED]
    assert stage_configs("cuda_graph", SessionConfig(providers=(CUDA, CPU)), space) == []  # no IO binding
    assert stage_configs("cuda_graph", SessionConfig(io_binding=True, providers=(TRT, CPU)), space) == []
    assert stage_configs("cuda_graph", SessionConfig(), space) == []  # the CPU's: a not-tried note instead
    assert config_label(GRAPHED).endswith("IO binding · CUDA graphs on gpu")
    monkeypatch.setattr(provider_options, "_PREPARED", {CUDA})  # CUDA's libraries: not on this machine
    assert session_providers([CUDA, CPU], cuda_graph=True) == [
        (CUDA, {"device_id": "0", "enable_cuda_graph": "1"}),
        CPU,
    ]
    assert session_providers([CUDA, CPU]) == [(CUDA, {"device_id": "0"}), CPU]
    assert _provider_options(GRAPHED, tmp_path)[0] == [CUDA, {"device_id": "0", "enable_cuda_graph": "1"}]  # Deploy's


def test_a_cuda_graph_config_needs_io_binding_on_cuda_and_one_saved_before_it_reads_without() -> None:
    from core.errors import SessionConfigError

    old = SessionConfig.from_data({"io_binding": True, "providers": [CUDA, CPU], "runtime": "gpu"})
    assert old.cuda_graph is False and SessionConfig.from_json(GRAPHED.to_json()) == GRAPHED
    with pytest.raises(SessionConfigError, match="cuda_graph needs io_binding and CUDAExecutionProvider first"):
        SessionConfig(providers=(CUDA, CPU), cuda_graph=True)
    with pytest.raises(SessionConfigError, match="cuda_graph must be true or false"):
        SessionConfig.from_data({**GRAPHED.to_data(), "cuda_graph": "yes"})


def test_a_cuda_graphs_outputs_are_allocated_once_on_the_gpu_at_fixed_shapes() -> None:
    from core.errors import TuneError
    from core.tune.sessions import _fixed_output

    made: list[tuple[object, ...]] = []

    def allocate(*args: object) -> str:
        made.append(args)
        return "value"

    ort = types.SimpleNamespace(OrtValue=types.SimpleNamespace(ortvalue_from_shape_and_type=allocate))
    config = dataclasses.replace(GRAPHED, batch=4)
    out = types.SimpleNamespace(name="y", shape=["batch", 10], type="tensor(float)")
    assert _fixed_output(ort, out, config) == "value" and made == [([4, 10], "float32", "cuda", 0)]
    with pytest.raises(TuneError, match="CUDA graphs need outputs of fixed shapes; y is"):
        _fixed_output(ort, types.SimpleNamespace(name="y", shape=[1, "seq"], type="tensor(float)"), config)


class _GpuValue:
    """An OrtValue on the GPU: its values live at one address for its whole life."""

    def __init__(self, array: np.ndarray, log: list[str]) -> None:
        self.array, self.log = np.array(array), log

    def update_inplace(self, array: np.ndarray) -> None:
        self.log.append(f"copy into the captured input {list(array.shape)}")
        self.array[...] = array


class _Binding:
    def __init__(self) -> None:
        self.inputs: dict[str, _GpuValue] = {}
        self.outputs: dict[str, _GpuValue | None] = {}

    def bind_ortvalue_input(self, name: str, value: _GpuValue) -> None:
        self.inputs[name] = value

    def bind_output(self, name: str, device: str, device_id: int) -> None:
        self.outputs[name] = None  # ONNX Runtime allocates it at the run

    def bind_ortvalue_output(self, name: str, value: _GpuValue) -> None:
        self.outputs[name] = value

    def copy_outputs_to_cpu(self) -> list[np.ndarray]:
        return [np.array(value.array) for value in self.outputs.values() if value is not None]


class _GraphSession:
    """A session opened with enable_cuda_graph, as ONNX Runtime runs it (y = 2x): the first run through a binding
    captures the graph, those after replay it on the addresses captured; gpu_graph_id -1 runs without it."""

    def __init__(self, providers: tuple[str, ...] = (CUDA, CPU)) -> None:
        self.providers = list(providers)
        self.log: list[str] = []
        self.threads: set[str] = set()
        self.captured: _Binding | None = None

    def get_providers(self) -> list[str]:
        return self.providers

    def get_outputs(self) -> list[types.SimpleNamespace]:
        return [types.SimpleNamespace(name="y")]

    def io_binding(self) -> _Binding:
        return _Binding()

    def run_with_iobinding(self, binding: _Binding, options: types.SimpleNamespace | None = None) -> None:
        self.threads.add(threading.current_thread().name)
        if options is not None and options.entries.get("gpu_graph_id") == "-1":
            self.log.append("run without the graph")
            binding.outputs = {"y": _GpuValue(2 * binding.inputs["x"].array, self.log)}
            return
        if self.captured is None:
            assert binding.outputs["y"] is not None, "a graph writes to outputs bound before it is captured"
            self.captured = binding
            self.log.append("capture")
        else:
            assert binding is self.captured, "a replay reads and writes the addresses captured"
            self.log.append("replay")
        out = binding.outputs["y"]
        assert out is not None
        out.array[...] = 2 * binding.inputs["x"].array

    def run(self, names: None, feeds: dict[str, np.ndarray], options: types.SimpleNamespace) -> list[np.ndarray]:
        self.log.append("run without the graph" if options.entries.get("gpu_graph_id") == "-1" else "run")
        return [2 * feeds["x"]]


def _fake_ort(log: list[str]) -> types.SimpleNamespace:
    class RunOptions:
        def __init__(self) -> None:
            self.entries: dict[str, str] = {}

        def add_run_config_entry(self, key: str, value: str) -> None:
            self.entries[key] = value

    def from_numpy(array: np.ndarray, device: str, device_id: int) -> _GpuValue:
        assert (device, device_id) == ("cuda", 0)
        return _GpuValue(array, log)

    def from_shape_and_type(shape: tuple[int, ...], dtype: np.dtype, device: str, device_id: int) -> _GpuValue:
        log.append(f"allocate the output {list(shape)} {dtype}")
        return _GpuValue(np.zeros(shape, dtype), log)

    value = types.SimpleNamespace(ortvalue_from_numpy=from_numpy, ortvalue_from_shape_and_type=from_shape_and_type)
    return types.SimpleNamespace(OrtValue=value, RunOptions=RunOptions)


GRAPH_SETTINGS = {"cuda_graph": True, "io_binding": True, "providers": [CUDA, CPU]}  # session.json, as Deploy writes it


def test_the_served_app_captures_a_cuda_graph_at_the_first_call_and_replays_it_after_on_the_same_buffers() -> None:
    from core.deploy import served_graph

    session = _GraphSession()
    graphs = served_graph.Graphs(session, GRAPH_SETTINGS, {}, _fake_ort(session.log))
    assert graphs.on and graphs.health()["cuda_graph"]["captured"] is None
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    assert np.array_equal(graphs.run({"x": x})[0], 2 * x)
    # the outputs' shapes from a run without the graph, outputs of that shape on the GPU, then the capture
    assert session.log == ["run without the graph", "allocate the output [2, 4] float32", "capture"]
    session.log.clear()
    for k in (1, 2):
        assert np.array_equal(graphs.run({"x": x + k})[0], 2 * (x + k))  # the new values, through the captured input
    assert session.log == ["copy into the captured input [2, 4]", "replay"] * 2
    session.log.clear()
    other = np.ones((3, 4), dtype=np.float32)  # another batch: the graph cannot replay it, the session runs it plainly
    assert np.array_equal(graphs.run({"x": other})[0], 2 * other) and session.log == ["run without the graph"]
    assert graphs.health() == {
        "cuda_graph": {
            "used": True, "captured": {"x": [2, 4]}, "replayed": 2, "other_shapes": "run without the graph",
            "without_graph": 1,
        }
    }  # fmt: skip
    assert len(session.threads) == 1 and next(iter(session.threads)).startswith("cuda-graph")  # one thread, its own


def test_the_served_app_says_why_it_runs_without_cuda_graphs_and_a_language_models_session_never_asks_for_them() -> (
    None
):
    from core.deploy import served_graph

    without_cuda = served_graph.Graphs(_GraphSession((CPU,)), GRAPH_SETTINGS, {}, _fake_ort([]))
    assert not without_cuda.on
    assert "without CUDAExecutionProvider" in without_cuda.health()["cuda_graph"]["why"]
    assert served_graph.Graphs(_GraphSession(), {}, {}, _fake_ort([])).health() == {}  # not asked: nothing said
    lm = served_graph.Graphs(_GraphSession(), GRAPH_SETTINGS, {"generate": {}}, _fake_ort([]))
    assert not lm.on and "cache grows each step" in lm.health()["cuda_graph"]["why"]
    listed = [(CUDA, {"device_id": "0", "enable_cuda_graph": "1"}), CPU]
    assert served_graph.providers(listed, {"generate": {}}) == [(CUDA, {"device_id": "0"}), CPU]
    assert served_graph.providers(listed, {}) == listed


def test_a_deployed_server_answers_through_its_cuda_graph_and_says_so_in_health(tmp_path: Path) -> None:
    import json

    from fastapi.testclient import TestClient

    from core.deploy import DeployRequest, served_graph
    from core.deploy.server import generate_server
    from tests.builders import relu_model, write
    from tests.unit.test_deploy import served_module

    model = write(relu_model(), tmp_path / "relu.onnx")
    out = Path(generate_server(DeployRequest(model=str(model), out_dir=str(tmp_path / "server"))).out_dir)
    assert (out / "graph.py").read_text() == Path(served_graph.__file__).read_text()  # shipped beside app.py
    (out / "session.json").write_text(json.dumps({**json.loads((out / "session.json").read_text()), **GRAPH_SETTINGS}))
    module = served_module(out)
    with TestClient(module.app) as client:
        said = client.get("/health").json()["cuda_graph"]  # this machine's onnxruntime has no CUDA provider
        assert said["used"] is False and "without CUDAExecutionProvider" in said["why"]
        session = _GraphSession()
        module.state["graphs"] = served_graph.Graphs(session, GRAPH_SETTINGS, {}, _fake_ort(session.log))
        for _ in range(2):
            answer = client.post("/predict", json={"inputs": {"x": [[1, -2, 3, -4]]}})
            assert answer.status_code == 200 and answer.json()["outputs"]["y"] == [[2, -4, 6, -8]]  # the fake's 2x
        assert session.log[-2:] == ["copy into the captured input [1, 4]", "replay"]
        assert client.get("/health").json()["cuda_graph"]["replayed"] == 1
