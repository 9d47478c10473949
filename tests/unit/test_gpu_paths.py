"""The code that needs a GPU, run without one: each provider's row of options and preparation
(core.runtime.provider_options), and benchmarks/gpu_check.py's way out and its table. On a machine with an NVIDIA
GPU and `make runtime-gpu`, benchmarks/gpu_check.py runs all of it for real."""

from __future__ import annotations

import dataclasses
import types
from pathlib import Path

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
    }  # fmt: skip
    rows = gpu_check._session_rows(found, 13.0)
    assert [(r.check, r.outcome) for r in rows] == [
        ("TensorRT engine and caches", "FAILED"),
        ("CUDA IO binding", "FAILED"),
        ("CUDA graphs (Tune)", "ok"),
    ]
    assert "built in 12.5 s, loaded from the cache in 0.4 s" in rows[0].found  # the build apart from the runs
    text = gpu_check.table([*rows, gpu_check.Row("GPU runtime", "ok", "onnxruntime-gpu 1.31.1", 0.0)])
    assert text.splitlines()[0].split() == ["check", "outcome", "s", "found"] and len(text.splitlines()) == 5


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
