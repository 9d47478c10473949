"""Generate: a language model run token by token, greedy, measured; with a PyTorch reference, eager beside ONNX
Runtime token by token. Runs in the worker under the machine-wide lock, as a benchmark.

Method: the cache is recognised in the graph (core.model.recognise); the prompt is made once
(core.runtime.greedy_prompt); ONNX Runtime generates once to warm up, recording each step's logits, then ``runs``
times timed, its cache kept in its own buffers (core.runtime.greedy: the loop Export and Quantize run too). With a
reference, PyTorch generates once fed ONNX Runtime's tokens (so each step's logits are compared on the same
context), then ``runs`` times timed on its own greedy tokens: the first step where those differ from ONNX Runtime's
is the first divergent token. Figures: core.generate.measures.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from core.errors import GenerateError
from core.generate.measures import engine_run, peak_rss_mb, reset_peak
from core.generate.records import EngineRun, GenerateReport, GenerateRequest
from core.generate.words import run_notes
from core.i18n import _
from core.model.generative import GenerativeLayout
from core.runtime.greedy import Trace, ort_generate
from core.runtime.greedy_prompt import Prompt, check_plan, make_prompt, recognised_layout
from core.runtime.harness import timed_session
from core.runtime.machine import default_threads, environment
from core.runtime.ort import LEVELS

__all__ = ["run_generate"]


def _silent(fraction: float, message: str) -> None:
    """Progress goes nowhere when nobody watches."""


def _timed(generate: Callable[[], Trace], runs: int, warmup: int) -> list[Trace]:
    for _warm in range(warmup):
        generate()
    return [generate() for _run in range(runs)]


def _ort(request: GenerateRequest, layout: GenerativeLayout, prompt: Prompt, threads: int) -> tuple[EngineRun, Trace]:
    """ONNX Runtime's run, and its recorded trace (the warm-up, with each step's logits)."""
    if request.level not in LEVELS:
        raise GenerateError(
            _("Unknown optimization level {level}; choose from {levels}.").format(
                level=request.level, levels=", ".join(LEVELS)
            )
        )
    new = request.plan.new_tokens
    reset_peak()
    session, load_ms = timed_session(str(request.model), request.level, request.provider, threads)
    recorded = ort_generate(session, layout, prompt.ids, new, record=True)
    traces = _timed(lambda: ort_generate(session, layout, prompt.ids, new), request.runs, request.warmup - 1)
    steady = all((t.tokens == recorded.tokens).all() for t in traces)
    label = f"ONNX Runtime ({LEVELS[request.level].name})"
    run = engine_run("ort", label, traces, int(prompt.ids.shape[1]), load_ms=load_ms, peak_mb=peak_rss_mb())
    run.steady = steady
    _as_text(run, prompt)
    return run, recorded


def _eager(request: GenerateRequest, prompt: Prompt, ort_trace: Trace, threads: int) -> tuple[EngineRun, Trace]:
    """PyTorch eager's run, and its trace fed ONNX Runtime's tokens (each step's logits, on the same context)."""
    import torch

    from core.runtime.greedy_eager import eager_generate, load_reference

    new = request.plan.new_tokens
    reset_peak()
    start = time.perf_counter_ns()
    torch.set_num_threads(threads)
    model = load_reference(Path(request.reference))
    load_ms = (time.perf_counter_ns() - start) / 1e6
    forced = eager_generate(model, prompt.ids, new, forced=ort_trace.tokens, record=True)
    traces = _timed(lambda: eager_generate(model, prompt.ids, new), request.runs, request.warmup - 1)
    run = engine_run("eager", "PyTorch eager", traces, int(prompt.ids.shape[1]), load_ms=load_ms, peak_mb=peak_rss_mb())
    run.steady = all((t.tokens == traces[0].tokens).all() for t in traces)
    _as_text(run, prompt)
    return run, forced


def _as_text(run: EngineRun, prompt: Prompt) -> None:
    """With a tokenizer, each sequence's tokens as text (decoded whole: a character split over byte-level tokens
    reads right) and the text each token adds; without one, nothing (no empty list per sequence)."""
    if prompt.tokenizer is None:
        return
    run.text = [prompt.text(tokens) for tokens in run.tokens]
    run.pieces = [prompt.pieces(tokens, ids) for tokens, ids in zip(run.tokens, prompt.ids.tolist(), strict=True)]


def _divergence(ort_run: EngineRun, eager_run: EngineRun) -> int | None:
    """The first step where any sequence's tokens differ, or None."""
    steps = len(ort_run.tokens[0])
    return next(
        (
            step
            for step in range(steps)
            if any(o[step] != e[step] for o, e in zip(ort_run.tokens, eager_run.tokens, strict=True))
        ),
        None,
    )


def run_generate(request: GenerateRequest, progress: Callable[[float, str], None] | None = None) -> GenerateReport:
    """Generate from the request's plan and measure it; see the module's docstring for the method."""
    report_progress = progress or _silent
    began = time.perf_counter()
    path = Path(request.model)
    layout = recognised_layout(path)
    check_plan(request.plan, layout, request.runs)
    if request.warmup < 1 or request.warmup > 100:
        raise GenerateError(_("Warm-up runs must be 1 to 100 (the first records the logits)."))
    threads = request.threads or default_threads()
    prompt = make_prompt(path, request.plan, layout, Path(request.tokenizer) if request.tokenizer else None)
    report_progress(0.1, _("Generating with ONNX Runtime"))
    ort_run, ort_trace = _ort(request, layout, prompt, threads)
    eager_run: EngineRun | None = None
    diffs: list[float] = []
    if request.reference:
        report_progress(0.5, _("Generating with PyTorch eager"))
        eager_run, forced = _eager(request, prompt, ort_trace, threads)
        diffs = [_largest_difference(a, b) for a, b in zip(ort_trace.logits, forced.logits, strict=True)]
    report_progress(0.95, _("Computing statistics"))
    report = GenerateReport(
        model=request.name or path.name,
        model_id=request.model_id,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        layout=layout,
        plan=request.plan,
        prompt_ids=prompt.ids.tolist(),
        prompt_text=[prompt.text(ids) for ids in prompt.ids.tolist()] if prompt.tokenizer is not None else [],
        ort=ort_run,
        eager=eager_run,
        first_divergent_token=_divergence(ort_run, eager_run) if eager_run is not None else None,
        logit_diffs=diffs,
        runs=request.runs,
        threads=threads,
        environment=environment([threads], torch=bool(request.reference)),
    )
    report.notes = run_notes(report)
    report.seconds = time.perf_counter() - began
    return report


def _largest_difference(a: Any, b: Any) -> float:
    import numpy as np

    return float(np.max(np.abs(np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64))))
