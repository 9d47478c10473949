"""The profile job: ONNX Runtime's per-node trace and PyTorch eager's per-layer profile of one model on the same
inputs, lined up layer by layer, with what else the machine did meanwhile. Runs in the worker, alone on the
machine (it measures time)."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from core.errors import BenchmarkError
from core.i18n import _, number
from core.model.hints import guess_hint
from core.model.inputs import BenchInput, make_inputs, plan_summary
from core.model.torchload import TorchSource, load_module
from core.notes import Note, note
from core.profile.eager import profile_eager
from core.profile.match import layer_rows
from core.profile.ort_profile import OrtProfile, profile_ort
from core.profile.records import EagerProfile, LayerRow, ProfileReport, ProfileRequest
from core.profile.words import BUSY, EAGER, EAGER_TOP, END, KERNELS, NO_KERNEL, SENTENCES, TOP_OP
from core.runtime.activity import ActivityMeter
from core.runtime.machine import default_threads, environment
from core.runtime.ort import LEVELS

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
    if level not in LEVELS:
        raise BenchmarkError(f"Unknown optimization level {level!r}; choose one of {', '.join(LEVELS)}.")
    if iterations < 1 or warmup < 0 or batch < 1:
        raise BenchmarkError("Profile at least one call, at batch 1 or more, with no negative warm-up.")
    threads = threads or default_threads()
    began = time.perf_counter()
    feeds = make_inputs(inputs, batch, seed)
    graph = onnx.load(onnx_path, load_external_data=False).graph
    folder = Path(tempfile.mkdtemp(prefix="profile-"))
    meter = ActivityMeter()
    try:
        report_progress(0.1, _("Profiling ONNX Runtime ({level})").format(level=LEVELS[level].name))
        try:
            ort, notes = profile_ort(onnx_path, graph, feeds, level, threads, iterations, warmup, folder)
        except BenchmarkError as exc:
            raise BenchmarkError(str(exc) + guess_hint(inputs)) from exc
        eager: EagerProfile | None = None
        if torch_source is not None:
            report_progress(0.55, _("Profiling PyTorch eager"))
            eager = _eager(torch_source, inputs, feeds, threads, iterations, warmup)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    activity = meter.stop()
    matched = _lined_up(eager, ort, notes)
    if (activity.busy or not activity.known) and activity.note is not None:
        notes.insert(0, activity.note)
    report = ProfileReport(
        id=uuid.uuid4().hex[:12],
        model=measured.name or os.path.basename(onnx_path),
        model_id=measured.id,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        level=LEVELS[level].name,
        provider="CPU",
        threads=threads,
        batch=batch,
        iterations=ort.calls,
        settings={"warmup": warmup, "seed": seed, "inputs": plan_summary(inputs)},
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
    report.headline = headline(report)
    report.seconds = time.perf_counter() - began
    return report


def _eager(
    source: TorchSource, inputs: list[BenchInput], feeds: dict[str, Any], threads: int, iterations: int, warmup: int
) -> EagerProfile:
    import torch

    tensors = [torch.from_numpy(feeds[s.name]) if hasattr(feeds[s.name], "shape") else feeds[s.name] for s in inputs]
    return profile_eager(load_module(source), tensors, threads, iterations, warmup)


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
    if report.activity.busy:
        said = note(SENTENCES, said=said, more=note(BUSY, cores=number(report.activity.others_cores, 1)))
    return said
