"""The profile job: ONNX Runtime's per-node trace and PyTorch eager's per-layer profile of one model on the same
inputs, lined up layer by layer, with what else the machine did meanwhile. Runs in the worker, alone on the
machine (it measures time)."""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.errors import BenchmarkError
from core.i18n import _, number
from core.model.generative import GenerativeLayout
from core.model.hints import guess_hint
from core.model.inputs import BenchInput, make_inputs, plan_summary
from core.model.torchload import TorchSource, load_module
from core.notes import Note, note
from core.profile.eager import profile_eager
from core.profile.match import layer_rows
from core.profile.ort_profile import OrtProfile, profile_ort
from core.profile.phases import decode_feeds, eager_decode, phases_of, recognised_cache
from core.profile.records import EagerProfile, LayerRow, ProfileReport, ProfileRequest
from core.profile.words import BUSY, EAGER, EAGER_TOP, END, KERNELS, NO_KERNEL, PHASES, SENTENCES, TOP_OP
from core.runtime.activity import ActivityMeter
from core.runtime.fallback import Placed, placement_notes, refuse
from core.runtime.machine import default_threads, environment
from core.runtime.ort import LEVELS, short_name
from core.runtime.provider_options import CPU
from core.runtime.runtimes import DEFAULT

if TYPE_CHECKING:
    import onnx

__all__ = ["headline", "profile_model"]


def _silent(fraction: float, message: str) -> None:
    """Progress goes nowhere when nobody watches."""


def profile_model(request: ProfileRequest, progress: Callable[[float, str], None] | None = None) -> ProfileReport:
    """Profile the model the request names; see ProfileRequest."""
    import onnx

    measured = request.model
    onnx_path, inputs, torch_source = measured.path, measured.inputs, measured.torch_source
    level, threads, batch, seed = request.level, request.threads, request.batch, request.seed
    iterations, warmup = request.iterations, request.warmup
    report_progress = progress or _silent
    providers = _providers(request)
    if level not in LEVELS:
        raise BenchmarkError(f"Unknown optimization level {level!r}; choose one of {', '.join(LEVELS)}.")
    if iterations < 1 or warmup < 0 or batch < 1:
        raise BenchmarkError("Profile at least one call, at batch 1 or more, with no negative warm-up.")
    threads = threads or default_threads()
    began = time.perf_counter()
    feeds = make_inputs(inputs, batch, seed)
    model = onnx.load(onnx_path, load_external_data=False)
    graph = model.graph
    layout, no_split = recognised_cache(model, onnx_path)
    then = functools.partial(decode_feeds, layout, feeds) if layout is not None else None
    folder = Path(tempfile.mkdtemp(prefix="profile-"))
    meter = ActivityMeter()
    try:
        report_progress(0.1, _("Profiling ONNX Runtime ({level})").format(level=LEVELS[level].name))
        try:
            run = profile_ort(
                onnx_path, graph, feeds, level, threads, iterations, warmup, folder, providers, strict=request.strict,
                then=then,
            )  # fmt: skip
        except BenchmarkError as exc:
            raise BenchmarkError(str(exc) + guess_hint(inputs)) from exc
        timing = (threads, iterations, warmup)
        eager, eager_step = _eager(torch_source, inputs, graph, feeds, layout, timing, report_progress)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    activity = meter.stop()
    ort, notes = run.phases[0], run.notes
    placed = placement_notes(
        Placed(runtime=request.runtime, asked=providers, available=_available(), used=run.used, nodes=run.nodes)
    )
    refuse(placed, request.strict, [n.name for n in ort.nodes if n.provider == CPU])
    matched = _lined_up(eager, ort, notes)
    if (activity.busy or not activity.known) and activity.note is not None:
        notes.insert(0, activity.note)
    notes[:0] = placed + ([no_split] if no_split is not None else [])  # what fell back, before any figure
    report = ProfileReport(
        id=uuid.uuid4().hex[:12],
        model=measured.name or os.path.basename(onnx_path),
        model_id=measured.id,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        level=LEVELS[level].name,
        provider=short_name(providers[0]),
        threads=threads,
        batch=batch,
        iterations=ort.calls,
        settings=_settings(request, providers, inputs),
        call_ms=ort.call_ms,
        cpu_ms=ort.cpu_ms,
        run_ms=ort.run_ms,
        kernel_ms=ort.kernel_ms,
        overhead_ms=max(0.0, ort.call_ms - ort.kernel_ms),
        nodes=ort.nodes,
        op_types=ort.op_types(),
        eager=eager,
        matched=matched,
        environment=environment([threads]),
        activity=activity,
        notes=notes,
    )
    report.node_ms = ort.node_ms()
    report.runtime, report.providers = request.runtime, ort.providers()
    if layout is not None and len(run.phases) == 2:
        report.phases = phases_of(layout, feeds, ort, run.phases[1])
        report.eager_decode = eager_step
    report.headline = headline(report)
    report.seconds = time.perf_counter() - began
    return report


def _available() -> list[str]:
    import onnxruntime as ort

    return list(ort.get_available_providers())


def _providers(request: ProfileRequest) -> list[str]:
    """The providers the session is asked for, in order, the CPU provider last: those asked, else the runtime's own
    (the default wheel's: the CPU provider alone); one the runtime lacks is refused, naming what it has."""
    available = _available()
    devices = [p for p in available if p not in (CPU, "AzureExecutionProvider")] if request.runtime != DEFAULT else []
    asked = [p for p in (request.providers or devices) if p != CPU]
    unavailable = [p for p in asked if p not in available]
    if unavailable:
        raise BenchmarkError(
            f"{', '.join(short_name(p) for p in unavailable)} is not in this build of ONNX Runtime (the runtime "
            f"{request.runtime}: {', '.join(available)}); profile it on a runtime that has it (--runtime NAME; "
            "`python -m core runtimes` lists them) or on a machine that has it."
        )
    return [*asked, CPU]


def _settings(request: ProfileRequest, providers: list[str], inputs: list[BenchInput]) -> dict[str, Any]:
    settings: dict[str, Any] = {"warmup": request.warmup, "seed": request.seed, "inputs": plan_summary(inputs)}
    if request.runtime != DEFAULT:  # profiled by another build of ONNX Runtime
        settings["runtime"] = request.runtime
    if providers != [CPU]:
        settings["providers"] = providers
    return settings


def _eager(
    source: TorchSource | None,
    inputs: list[BenchInput],
    graph: onnx.GraphProto,
    feeds: dict[str, Any],
    layout: GenerativeLayout | None,
    timing: tuple[int, int, int],
    report_progress: Callable[[float, str], None],
) -> tuple[EagerProfile | None, EagerProfile | None]:
    """Eager's profile of the plan's call and, for a language model (``layout``), of one decode step after it; none
    without a PyTorch original (``source``)."""
    if source is None:
        return None, None
    import torch

    report_progress(0.55, _("Profiling PyTorch eager"))
    outputs = [o.name for o in graph.output]
    tensors = [torch.from_numpy(feeds[s.name]) if hasattr(feeds[s.name], "shape") else feeds[s.name] for s in inputs]
    module = load_module(source, [s.name for s in inputs], outputs)  # a language model: as its export
    called = profile_eager(module, tensors, *timing)
    if layout is None:
        return called, None
    return called, eager_decode(module, inputs, outputs, layout, feeds, timing)


def _lined_up(eager: EagerProfile | None, ort: OrtProfile, notes: list[Note]) -> list[LayerRow]:
    """Eager's layers next to ONNX Runtime's nodes; what could not be matched goes to ``notes``."""
    if eager is None:
        return []
    if eager.note is not None:
        notes.append(eager.note)
    if not eager.modules:
        return []
    matched, match_notes = layer_rows(eager.modules, ort.nodes)
    notes += match_notes
    return matched


def headline(report: ProfileReport) -> Note:
    """Where the time goes, in one sentence per engine, as a note."""
    top = report.op_types[0] if report.op_types else None
    if report.call_ms:
        share = f"{report.kernel_ms / report.call_ms:.0%}"
        kernels = KERNELS[0] if len(report.nodes) == 1 else KERNELS[1]
        text = note(kernels, level=report.level, ms=report.call_ms, share=share, count=len(report.nodes))
    else:
        text = note(NO_KERNEL)
    said = (
        note(TOP_OP, said=text, op=top.op_type, share=f"{top.share:.0%}") if top is not None else note(END, said=text)
    )
    if report.eager is not None:
        eager_top = report.eager.ops[0] if report.eager.ops else None
        ms = report.eager.call_ms
        eager = (
            note(EAGER_TOP, ms=ms, op=eager_top.name, share=f"{eager_top.share:.0%}")
            if eager_top is not None
            else note(EAGER, ms=ms)
        )
        said = note(SENTENCES, said=said, more=eager)
    prefill, decode = report.phases.get("prefill"), report.phases.get("decode")
    if prefill is not None and decode is not None and prefill.op_types and decode.op_types:
        first, then = prefill.op_types[0], decode.op_types[0]
        phases = note(
            PHASES, tokens=prefill.new_tokens, prefill=prefill.call_ms, prefill_op=first.op_type,
            prefill_share=f"{first.share:.0%}", decode=decode.call_ms, decode_op=then.op_type,
            decode_share=f"{then.share:.0%}",
        )  # fmt: skip
        said = note(SENTENCES, said=said, more=phases)
    if report.activity.busy:
        said = note(SENTENCES, said=said, more=note(BUSY, cores=number(report.activity.others_cores, 1)))
    return said
