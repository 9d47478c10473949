"""PyTorch eager on CUDA (core.bench.eager), run without a GPU: this machine's torch is the CPU build, so CUDA's
availability, its synchronisation and the moves to the device are faked; benchmarks/gpu_check.py runs it for real."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import numpy as np
import pytest
import torch

from core.bench import BenchRequest, eager
from core.bench.benchmark import _Plan
from core.errors import BenchmarkError
from core.model.inputs import BenchInput
from core.model.torchload import TorchSource
from core.notes import say
from core.runtime import provider_options
from core.runtime.harness import result_of
from core.runtime.provider_options import CPU, CUDA, SETUPS
from tests import builders
from tests.cli import cli


class _Doubled(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2


@pytest.fixture
def fake_cuda(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A torch that sees a GPU: what was moved where and each synchronisation, in order."""
    happened: list[str] = []

    def module_to(self: torch.nn.Module, device: str) -> torch.nn.Module:
        happened.append(f"module to {device}")
        return self

    def tensor_to(self: torch.Tensor, device: str) -> torch.Tensor:
        happened.append(f"input to {device}")
        return self

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: happened.append("synchronize"))
    monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", lambda: happened.append("reset peak"))
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda: 3 * 2**20)  # bytes, as torch counts them
    monkeypatch.setattr(torch.nn.Module, "to", module_to)
    monkeypatch.setattr(torch.Tensor, "to", tensor_to)
    return happened


def test_eager_on_cuda_moves_the_model_and_inputs_and_synchronises_around_each_timed_call(
    fake_cuda: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = builders.write(builders.relu_model(), tmp_path / "m.onnx")
    monkeypatch.setattr(eager, "load_module", lambda source, inputs, outputs: _Doubled())
    plan = _Plan(engines=["eager"], levels=[], providers=["CPUExecutionProvider"], threads=[1], batches=[1])
    feeds = {1: {"x": np.ones((1, 4), dtype=np.float32)}}
    specs = cast(list[BenchInput], [type("Spec", (), {"name": "x"})()])
    source = TorchSource(kind="sample", name="tinycnn")
    (config,) = eager.eager_configs(source, str(path), specs, plan, feeds, "cuda")
    # moved once, before any timed call; then one untimed call between a reset of the peak and its reading
    assert fake_cuda == ["module to cuda", "input to cuda", "reset peak", "synchronize", "synchronize"]
    assert config.gpu_peak_mb == 3.0 and result_of(config).gpu_peak_mb == 3.0
    assert config.label == "PyTorch eager on CUDA" and config.provider == "CUDAExecutionProvider"
    fake_cuda.clear()
    (out,) = config.run()
    assert fake_cuda == ["synchronize", "synchronize"] and np.array_equal(out, np.full((1, 4), 2.0))
    (on_cpu,) = eager.eager_configs(source, str(path), specs, plan, feeds, "cpu")
    fake_cuda.clear()
    on_cpu.run()
    assert fake_cuda == [] and on_cpu.label == "PyTorch eager"  # the CPU's calls wait for nothing
    assert on_cpu.gpu_peak_mb is None and result_of(on_cpu).gpu_peak_mb is None


def test_eager_on_cuda_without_a_gpu_is_refused_saying_to_measure_on_cpu() -> None:
    assert not torch.cuda.is_available()  # this machine's torch: the CPU build
    with pytest.raises(BenchmarkError, match=r"sees none: measure eager on cpu \(--eager-device cpu\)"):
        eager.eager_device("cuda")
    with pytest.raises(BenchmarkError, match="Unknown eager device tpu"):
        eager.eager_device("tpu")
    assert eager.eager_device("cpu") == "cpu"


def _requests_asked(monkeypatch: pytest.MonkeyPatch, model: object) -> list[BenchRequest]:
    """The requests ``bench`` sends, each stopped before it runs (the command is given ``model`` as measured)."""
    from core.cli import bench as bench_cli

    asked: list[BenchRequest] = []

    @contextlib.contextmanager
    def measured(args: object, backend: object) -> Iterator[object]:
        yield model

    def run(kind: object, request: BenchRequest, backend: object) -> None:
        asked.append(request)
        raise BenchmarkError("stopped here")

    monkeypatch.setattr(bench_cli, "measured", measured)
    monkeypatch.setattr(bench_cli.jobs, "run", run)
    return asked


def test_bench_passes_eager_device_to_the_benchmark_and_refuses_an_unknown_one(monkeypatch: pytest.MonkeyPatch) -> None:

    asked = _requests_asked(monkeypatch, "the model")
    cli("bench", "m.onnx", "--eager-device", "cuda", "--no-save")
    cli("bench", "m.onnx", "--no-save")
    assert [r.eager_device for r in asked] == ["cuda", "cpu"]
    result = cli("bench", "m.onnx", "--eager-device", "tpu", "--no-save")
    assert result.returncode == 2 and "invalid choice: 'tpu'" in result.stderr


def test_where_ort_measures_on_cuda_it_says_it_tells_no_peak_and_gives_the_arena_limit_configured(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert eager.ort_gpu_memory_notes([CPU]) == []
    (unlimited,) = eager.ort_gpu_memory_notes([CUDA, CPU])
    assert "arena has no limit set (gpu_mem_limit)" in say(unlimited)
    limited = dataclasses.replace(SETUPS[CUDA], options=lambda cache, threads: {"gpu_mem_limit": str(2 * 2**30)})
    monkeypatch.setitem(provider_options.SETUPS, CUDA, limited)
    (said,) = eager.ort_gpu_memory_notes([CUDA, CPU])
    assert "arena is limited to 2,048 MiB" in say(said) and provider_options.cuda_arena_limit_mb() == 2048.0


def test_a_result_with_gpu_memory_shows_it_on_the_page_and_in_the_clis_text_and_one_without_shows_no_column(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from core.cli.bench import _print
    from tests.reports import made_report
    from ui.bench_view import _table, results_frame

    plain = made_report()
    assert "GPU peak MiB" not in _table(results_frame(plain)).columns  # nothing on CUDA: no column of dashes
    eager, *ort = (dataclasses.replace(r, speedup=None) for r in plain.results)
    on_cuda = dataclasses.replace(eager, label="PyTorch eager on CUDA", gpu_peak_mb=35.25)
    report = dataclasses.replace(plain, results=[on_cuda, *ort], settings={"iterations": 20})
    table = _table(results_frame(report))
    assert list(table["GPU peak MiB"]) == ["35.25", "—", "—"]  # ORT tells none: its note says so
    assert table["configuration"].iloc[0] == "PyTorch eager on CUDA"
    _print(report)
    printed = capsys.readouterr().out
    assert "gpu      PyTorch eager on CUDA: 35.2 MiB of GPU memory at a call's peak" in printed
    assert printed.count("gpu      ") == 1


@pytest.fixture
def gpu_runtime_built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A machine where `make runtime-gpu` ran: .runtimes/gpu with its Python and .ready (its torch a CUDA build)."""
    from core.runtime import runtimes

    folder = tmp_path / "runtimes" / "gpu"
    (folder / "bin").mkdir(parents=True)
    (folder / "bin" / "python").write_text("")
    (folder / ".ready").write_text("")
    monkeypatch.setattr(runtimes, "RUNTIMES_DIR", tmp_path / "runtimes")
    return folder / "bin" / "python"


def test_eager_on_cuda_asked_of_the_default_runtime_runs_in_the_gpu_runtimes_worker(
    gpu_runtime_built: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from core.model.measured import MeasuredModel
    from core.runtime.runtimes import asked_runtime, runtime_named

    model = MeasuredModel(path="m.onnx", inputs=[])
    routed = eager.eager_routed(BenchRequest(model=model, eager_device="cuda"))
    assert (routed.runtime, routed.providers) == ("gpu", [CUDA])  # ORT measured on CUDA there too
    # the job backend starts the worker from the runtime the request names (core.jobs.process: submit)
    assert runtime_named(asked_runtime(routed)).python == str(gpu_runtime_built)
    kept = eager.eager_routed(BenchRequest(model=model, eager_device="cuda", providers=[CPU]))
    assert (kept.runtime, kept.providers) == ("gpu", [CPU])  # the providers asked, in the GPU build
    for as_asked in (
        BenchRequest(model=model),  # eager on the CPU: wherever asked
        BenchRequest(model=model, eager_device="cuda", runtime="openvino"),  # a runtime named: as named
        BenchRequest(model=model, eager_device="cuda", engines=["ort"]),  # no eager: nothing to route
    ):
        assert eager.eager_routed(as_asked) is as_asked
    without = BenchRequest(model=model, eager_device="cuda")  # no GPU runtime: its worker's torch says so
    assert eager.eager_routed(without, built=lambda: ["default", "openvino"]) is without

    asked = _requests_asked(monkeypatch, model)
    cli("bench", "m.onnx", "--eager-device", "cuda", "--no-save")
    cli("bench", "m.onnx", "--no-save")
    assert [(r.runtime, r.eager_device) for r in asked] == [("gpu", "cuda"), ("default", "cpu")]


def test_the_gpu_runtime_gets_a_cuda_build_of_the_torch_the_app_pins_checked_as_its_own() -> None:
    import subprocess

    from packaging.requirements import Requirement

    from core.settings import PROJECT_ROOT

    def pins(name: str) -> dict[str, str]:
        lines = (PROJECT_ROOT / name).read_text().splitlines()
        found = [
            Requirement(line.split(" #")[0]) for line in lines if line.strip() and not line.startswith(("#", "--"))
        ]
        return {r.name: str(r.specifier) for r in found}

    torch_pins, ort_pins = pins("requirements-gpu-torch.txt"), pins("requirements-gpu.txt")
    app_torch = pins("requirements.txt")["torch"]  # ==2.13.0
    assert torch_pins["torch"] == "=" + app_torch  # ===: PyPI's CUDA wheel, never a local 2.13.0+cpu
    assert all(spec.startswith("==") for spec in torch_pins.values())  # each pinned exactly
    assert not torch_pins.keys() & ort_pins.keys()  # one pip command installs both: a package pinned once
    done = subprocess.run(["make", "-n", "-B", "runtime-gpu"], capture_output=True, text=True, cwd=PROJECT_ROOT)
    said = done.stdout.replace("\\\n", "")
    assert "--no-deps -r requirements-gpu.txt   -r requirements-gpu-torch.txt" in said
    assert "sys.exit(0 if own and torch.version.cuda else 1)" in said  # its own torch, built for CUDA, or it fails
