"""PyTorch eager as Benchmark times it: on the CPU, or on CUDA when this torch sees a GPU (``eager_device``).

On CUDA the module and its inputs are moved to the GPU once, each timed call is bracketed by
``torch.cuda.synchronize()`` (a kernel launch returns before the GPU is done: without it the time would be the
launch's), and its outputs come back to the host inside the call, as a caller's would (the copies are counted).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from core.bench.records import EAGER_DEVICES
from core.errors import BenchmarkError
from core.i18n import _
from core.model.inputs import BenchInput
from core.model.torchload import TorchSource, load_module
from core.runtime.harness import Config
from core.runtime.outputs import flatten_outputs

if TYPE_CHECKING:
    from core.bench.benchmark import _Plan

__all__ = ["EAGER_DEVICES", "eager_configs", "eager_device", "eager_run"]

_PROVIDER = {"cpu": "CPUExecutionProvider", "cuda": "CUDAExecutionProvider"}  # where the table says it ran


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
                "PyTorch eager on cuda needs a CUDA build of PyTorch and a GPU it sees; this torch ({version}) sees "
                "none: measure eager on cpu (--eager-device cpu)."
            ).format(version=torch.__version__)
        )
    return asked


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
            if device != "cpu":
                config.label = config.label.replace("PyTorch eager", f"PyTorch eager on {device}", 1)
            configs.append(config)
    return configs
