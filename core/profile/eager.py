"""PyTorch eager, layer by layer, on the same inputs: each leaf module's forward timed with a clock from forward
hooks, and the PyTorch profiler's breakdown per aten op.

The module times come from a pass without the profiler: under it, PyTorch 2.13 on CPU takes a slower
convolution kernel (``_slow_conv2d_forward`` instead of oneDNN's: a ResNet block's call goes from 2 to 27 ms
in ``inference_mode``), so its per-module times would describe a model nobody runs. The aten ops come from the
profiler (in ``no_grad``, where the difference is smallest) and are given as shares of its own call.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from core.notes import Note, note
from core.profile.records import EagerModule, EagerOp, EagerProfile
from core.profile.words import NO_MODULES

if TYPE_CHECKING:
    import torch

__all__ = ["profile_eager"]


def _leaf_hooks(module: Any, order: dict[str, str], totals: dict[str, list[float]]) -> list[Any]:
    """Forward hooks that add each leaf module's wall time (and calls) to ``totals``; ``order`` gets the leaves
    in the order they first ran."""
    handles = []
    for name, child in module.named_modules():
        if not name or any(True for _ in child.children()):
            continue
        starts: list[int] = []

        def before(
            _m: Any, _a: Any, name: str = name, kind: str = type(child).__name__, starts: list[int] = starts
        ) -> None:
            order.setdefault(name, kind)
            totals.setdefault(name, [0.0, 0])
            starts.append(time.perf_counter_ns())

        def after(_m: Any, _a: Any, _o: Any, name: str = name, starts: list[int] = starts) -> None:
            if starts:
                totals[name][0] += (time.perf_counter_ns() - starts.pop()) / 1e6
                totals[name][1] += 1

        handles += [child.register_forward_pre_hook(before), child.register_forward_hook(after)]
    return handles


def _modules(
    runner: Any, tensors: list[Any], iterations: int, warmup: int
) -> tuple[float, list[EagerModule], Note | None]:
    """Per-call wall time and per-module times, from hooks and a clock."""
    import torch

    order: dict[str, str] = {}  # leaf module -> its class, in the order they first ran
    totals: dict[str, list[float]] = {}
    try:
        handles = _leaf_hooks(runner, order, totals)
    except (RuntimeError, AttributeError):  # a TorchScript module takes no Python hooks
        handles = []
    said = None if handles else note(NO_MODULES)
    try:
        with torch.inference_mode():
            for _ in range(warmup):
                runner(*tensors)
            totals.clear()
            start = time.perf_counter_ns()
            for _ in range(iterations):
                runner(*tensors)
            call_ms = (time.perf_counter_ns() - start) / 1e6 / iterations
    finally:
        for handle in handles:
            handle.remove()
    modules = [
        EagerModule(
            name=name,
            kind=kind,
            mean_ms=totals[name][0] / iterations,
            share=totals[name][0] / iterations / call_ms,
            calls=max(1, round(totals[name][1] / iterations)),
        )
        for name, kind in order.items()
        if name in totals
    ]
    return call_ms, modules, said


def _ops(runner: Any, tensors: list[Any], iterations: int) -> list[EagerOp]:
    """The PyTorch profiler's self time per aten op, per call, as shares of the profiled call."""
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    with torch.no_grad(), profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(iterations):
            with record_function("workbench::call"):
                runner(*tensors)
    events = prof.key_averages()
    call_us = next((e.cpu_time_total for e in events if e.key == "workbench::call"), 0.0) / iterations
    ops = [
        EagerOp(
            name=e.key,
            mean_ms=e.self_cpu_time_total / iterations / 1000,
            share=e.self_cpu_time_total / iterations / call_us if call_us else 0.0,
            calls=max(1, round(e.count / iterations)),
        )
        for e in events
        if e.key.startswith("aten::") and e.self_cpu_time_total > 0
    ]
    return sorted(ops, key=lambda op: -op.mean_ms)


def profile_eager(
    model: torch.nn.Module | torch.export.ExportedProgram,
    tensors: list[Any],
    threads: int,
    iterations: int,
    warmup: int,
) -> EagerProfile:
    """Per-call times of ``model`` on ``tensors``: per leaf module (clock) and per aten op (profiler)."""
    import torch

    torch.set_num_threads(threads)
    runner = model.module() if isinstance(model, torch.export.ExportedProgram) else model
    call_ms, modules, said = _modules(runner, tensors, iterations, warmup)
    ops = _ops(runner, tensors, max(1, min(iterations, 20)))
    # the ops' times are the profiler's (slower kernels, see above): scaled to the clock's call they would
    # overstate nothing but the shares, so they are given as shares of the clock's call time
    for op in ops:
        op.mean_ms = op.share * call_ms
    return EagerProfile(call_ms=call_ms, modules=modules, ops=ops, note=said)
