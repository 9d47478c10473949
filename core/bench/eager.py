"""PyTorch eager as Benchmark times it: on the CPU, or on CUDA when this torch sees a GPU (``eager_device``).

On CUDA the module and its inputs are moved to the GPU once, each timed call is bracketed by
``torch.cuda.synchronize()`` (a kernel launch returns before the GPU is done: without it the time would be the
launch's), and its outputs come back to the host inside the call, as a caller's would (the copies are counted).

GPU memory comes from the runtime, not from polling nvidia-smi: for eager, ``torch.cuda.max_memory_allocated()``
after ``torch.cuda.reset_peak_memory_stats()`` around one untimed call (the weights and that call's activations;
``gpu_peak_mb``). ONNX Runtime's Python API offers nothing like it for its CUDA provider: the arena's statistics are
only in the C API (``AllocatorGetStats``), unbound in Python (microsoft/onnxruntime#24993, open), so an ORT result
on CUDA has no peak and Benchmark says so beside the arena limit it configured
(``core.runtime.provider_options.cuda_arena_limit_mb``).

The app's torch (.venv's, requirements.txt's) is the CPU build; the GPU runtime (``make runtime-gpu``) has a CUDA build
of its own (requirements-gpu-torch.txt). So a benchmark asking for eager on CUDA of the default runtime is run by the
GPU runtime's worker when this machine has it built (``eager_routed``), ONNX Runtime measured there on CUDA unless the
request names its providers; elsewhere the worker's torch says whether it sees a GPU (``eager_device``).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from core.bench.records import EAGER_DEVICES, BenchRequest
from core.errors import BenchmarkError
from core.i18n import N_, _
from core.model.inputs import BenchInput
from core.model.torchload import TorchSource, load_module
from core.notes import Note, note
from core.runtime.harness import Config
from core.runtime.outputs import flatten_outputs

if TYPE_CHECKING:
    from core.bench.benchmark import _Plan

__all__ = [
    "EAGER_DEVICES", "eager_configs", "eager_device", "eager_routed", "eager_run", "gpu_peak_mb",
    "ort_gpu_memory_notes",
]  # fmt: skip

# said where ORT measured on CUDA (notes: rendered at the edge)
ORT_GPU_MEMORY = N_(
    "ONNX Runtime's Python API tells no peak of the CUDA provider's memory, so none is shown for its results; its "
    "arena is limited to {limit} MiB (gpu_mem_limit)."
)
ORT_GPU_MEMORY_UNLIMITED = N_(
    "ONNX Runtime's Python API tells no peak of the CUDA provider's memory, so none is shown for its results; its "
    "arena has no limit set (gpu_mem_limit)."
)
_PROVIDER = {"cpu": "CPUExecutionProvider", "cuda": "CUDAExecutionProvider"}  # where the table says it ran
_SHOWN = {"cuda": "CUDA"}  # a device as a label names it: "PyTorch eager on CUDA"


def eager_device(asked: str) -> str:
    """``asked`` when this torch can run there; CUDA needs ``torch.cuda.is_available()`` (a CUDA build of PyTorch
    and a GPU it sees), else BenchmarkError says so and the way out."""
    import torch

    if asked not in EAGER_DEVICES:
        raise BenchmarkError(
            _("Unknown eager device {device}; choose {devices}.").format(device=asked, devices=", ".join(EAGER_DEVICES))
        )
    if asked == "cuda" and not torch.cuda.is_available():
        raise BenchmarkError(
            _(
                "PyTorch eager on CUDA needs a CUDA build of PyTorch and a GPU it sees; this torch ({version}) sees "
                "none: measure eager on cpu (--eager-device cpu), or, on a machine with an NVIDIA GPU, build the GPU "
                "runtime, whose torch is a CUDA build (make runtime-gpu), and measure in it (--runtime gpu)."
            ).format(version=torch.__version__)
        )
    return asked


def eager_routed(request: BenchRequest, built: Callable[[], list[str]] | None = None) -> BenchRequest:
    """``request`` as a worker must run it: PyTorch eager on CUDA asked of the default runtime goes to this machine's
    GPU runtime (a build with ``gpu=True`` among ``built``'s runtimes, whose torch is a CUDA build), ONNX Runtime
    measured there on CUDA unless ``providers`` names others; any other request, and every request where no GPU
    runtime is built, as it is."""
    from core.runtime.provider_options import CUDA
    from core.runtime.runtimes import BUILDS, DEFAULT, runtime_names

    eager = request.engines is None or "eager" in request.engines
    if request.eager_device != "cuda" or request.runtime != DEFAULT or not eager:
        return request
    gpu = [name for name in (built or runtime_names)() if name in BUILDS and BUILDS[name].gpu]
    return dataclasses.replace(request, runtime=gpu[0], providers=request.providers or [CUDA]) if gpu else request


def eager_run(runner: Any, tensors: list[Any], threads: int, device: str) -> Callable[[], list[Any]]:
    """One call of ``runner`` on ``tensors`` (already on ``device``) at ``threads`` torch threads, its outputs as
    numpy arrays on the host; on CUDA synchronised before and after, so that the time is the GPU's work."""
    import torch

    cuda = device == "cuda"

    def run() -> list[Any]:
        if torch.get_num_threads() != threads:
            torch.set_num_threads(threads)
        with torch.inference_mode():
            if cuda:
                torch.cuda.synchronize()  # nothing queued before the call is counted in it
            outputs = flatten_outputs(runner(*tensors))  # copied to the host: a caller's copies are counted
            if cuda:
                torch.cuda.synchronize()
            return outputs

    return run


def gpu_peak_mb(run: Callable[[], list[Any]], device: str) -> float | None:
    """The GPU memory PyTorch holds at the peak of one call of ``run`` (MiB), as torch counts it; None off the GPU."""
    if device != "cuda":
        return None
    import torch

    torch.cuda.reset_peak_memory_stats()
    run()
    return torch.cuda.max_memory_allocated() / 2**20


def ort_gpu_memory_notes(providers: list[str]) -> list[Note]:
    """What ORT offers in place of a peak where the CUDA provider is measured: the arena limit configured."""
    from core.runtime.provider_options import CUDA, cuda_arena_limit_mb

    if CUDA not in providers:
        return []
    limit = cuda_arena_limit_mb()
    return [note(ORT_GPU_MEMORY, limit=f"{limit:,.0f}") if limit is not None else note(ORT_GPU_MEMORY_UNLIMITED)]


def eager_configs(
    source: TorchSource,
    path: str,
    specs: list[BenchInput],
    plan: _Plan,
    feeds: dict[int, dict[str, Any]],
    device: str = "cpu",
) -> list[Config]:
    """One configuration per thread count and batch size of ``plan``: the PyTorch original on ``device``."""
    import onnx
    import torch

    device = eager_device(device)
    start = time.perf_counter_ns()
    outputs = [o.name for o in onnx.load_model(path, load_external_data=False).graph.output]
    module = load_module(source, [s.name for s in specs], outputs)  # a language model: as its export
    runner = module.module() if isinstance(module, torch.export.ExportedProgram) else module
    runner = runner.to(device) if device != "cpu" else runner
    load_ms = (time.perf_counter_ns() - start) / 1e6
    configs = []
    for t in plan.threads:
        for batch in plan.batches:
            tensors = [torch.from_numpy(feeds[batch][s.name]).to(device) for s in specs]
            config = plan.config(
                "eager", "", _PROVIDER[device], t, batch, eager_run(runner, tensors, t, device), load_ms
            )
            config.gpu_peak_mb = gpu_peak_mb(config.run, device)
            if device != "cpu":
                config.label = config.label.replace("PyTorch eager", f"PyTorch eager on {_SHOWN[device]}", 1)
            configs.append(config)
    return configs
