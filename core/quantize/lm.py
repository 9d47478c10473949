"""Quantize for a language model: int4 weight-only (MatMulNBits, through ONNX Runtime's MatMulNBitsQuantizer),
dynamic INT8 and FP16 variants, each judged by its greedy tokens, not by one call. Runs in the worker, under the
machine-wide lock (it measures).

Method: the cache is recognised in the graph (core.runtime.greedy_prompt); the variants are made with ONNX Runtime's own
tools (core.quantize.lm_variants, from the model in memory); the prompts are made once (given, or drawn inside the
vocabulary). Each model generates from every prompt once with its logits recorded, a variant fed the original's tokens
(so each step compares the same context: where its own choice differs is where its greedy tokens part,
core.quantize.lm_judge); then ``runs`` rounds, the models in turn, each generating from every prompt, time its decoding
(Generate's loop, core.runtime.greedy, its cache in ONNX Runtime's buffers).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from core.errors import QuantizeError
from core.i18n import _, number
from core.model.generative import GenerativeLayout, GenerativePlan
from core.quantize.lm_judge import divergence, judge_variants, method_note, repeats_note
from core.quantize.lm_records import (
    LMQuantizeReport,
    LMQuantizeRequest,
    LMVariant,
    LMVariantSpec,
    check_variants,
    original_label,
)
from core.quantize.lm_variants import MAKERS, model_with_weights
from core.quantize.records import UNLOADABLE
from core.quantize.variants import file_size, is_large
from core.runtime.greedy import Trace, ort_generate
from core.runtime.greedy_prompt import Prompt, check_plan, make_prompt, recognised_layout
from core.runtime.harness import timed_session
from core.runtime.machine import default_threads
from core.runtime.stats import Interval, interval, speedup_interval

__all__ = ["quantize_language_model"]

MAX_PROMPTS = 32


def _silent(fraction: float, message: str) -> None:
    """Progress goes nowhere when nobody watches."""


def _check(request: LMQuantizeRequest, layout: GenerativeLayout) -> None:
    """Refuse, before anything is made, what cannot be asked: no variant, an unknown kind or setting, sizes out of
    range, a model whose weights are int4 already."""
    check_variants(request.variants)
    if not 1 <= request.prompts <= MAX_PROMPTS or len(request.prompt_ids) > MAX_PROMPTS:
        raise QuantizeError(_("Give 1 to {most} prompts.").format(most=MAX_PROMPTS))
    if not 1 <= request.runs <= 100:
        raise QuantizeError(_("The timed rounds must be 1 to 100."))
    if layout.weight_bits is not None:
        raise QuantizeError(
            _(
                "The model's weights are {bits}-bit already (MatMulNBits): quantize the float model it was made from."
            ).format(bits=layout.weight_bits)
        )


def _prompts(path: Path, request: LMQuantizeRequest, layout: GenerativeLayout) -> list[Prompt]:
    """The prompts, one sequence each: those given, else drawn with seeds of their own."""
    plans = [GenerativePlan(prompt_ids=list(ids), new_tokens=request.new_tokens) for ids in request.prompt_ids] or [
        GenerativePlan(prompt_length=request.prompt_length, new_tokens=request.new_tokens, seed=request.seed + k)
        for k in range(request.prompts)
    ]
    for plan in plans:
        check_plan(plan, layout, request.runs)
    tokenizer = Path(request.tokenizer) if request.tokenizer else None
    return [make_prompt(path, plan, layout, tokenizer) for plan in plans]


def _make(spec: LMVariantSpec, source: Path, out: Path, large: bool) -> LMVariant:
    """One variant of ``source``, made in ``out``; one that cannot be made says why, and the others are made.
    Nothing is written beside ``source`` (its folder is read-only in the sandbox)."""
    variant = LMVariant(key=spec.key, label=spec.label(), english=spec.english())
    started = time.perf_counter()
    target = out / f"{source.stem}.{spec.key}.onnx"
    try:
        model = model_with_weights(source)  # a copy each: the tools change the model they are given
        MAKERS[spec.kind](model, target, spec, large)
        variant.path, variant.size_bytes = str(target), file_size(target)
    except QuantizeError as exc:
        variant.error = str(exc)
    except Exception as exc:  # ORT's quantizers raise plain errors on graphs they cannot handle
        variant.error = _("ONNX Runtime could not make this variant: {error}").format(error=str(exc)[:600])
    variant.seconds = time.perf_counter() - started
    return variant


def _open(variants: list[LMVariant], threads: int) -> dict[str, Any]:
    """A session for each model (the original's failure is the run's; a variant's is its own)."""
    sessions: dict[str, Any] = {}
    for variant in variants:
        if variant.error:
            continue
        try:
            sessions[variant.key], _load = timed_session(variant.path, "all", "CPUExecutionProvider", threads)
        except Exception as exc:
            if variant is variants[0]:
                raise
            variant.error = _(UNLOADABLE).format(reason=str(exc)[:600])
    return sessions


def _compare(
    variants: list[LMVariant], sessions: dict[str, Any], layout: GenerativeLayout, prompts: list[Prompt], new: int
) -> None:
    """Every variant's choices on the original's context, prompt by prompt, against the original's."""
    original = [ort_generate(sessions["fp32"], layout, p.ids, new, record=True) for p in prompts]
    for variant in variants[1:]:
        if variant.key not in sessions:
            continue
        try:
            fed = [
                ort_generate(sessions[variant.key], layout, p.ids, new, record=True, forced=theirs.tokens)
                for p, theirs in zip(prompts, original, strict=True)
            ]
        except Exception as exc:  # a kernel the variant needs and this build lacks: the others still run
            variant.error = _("ONNX Runtime cannot run this variant: {reason}").format(reason=str(exc)[:600])
            del sessions[variant.key]
            continue
        found = [
            divergence(index, theirs, mine) for index, (theirs, mine) in enumerate(zip(original, fed, strict=True))
        ]
        variant.divergences = [parted for parted, _largest in found if parted is not None]
        variant.max_logit_diff = max(largest for _parted, largest in found)
        variant.same_tokens = not variant.divergences


def _rounds(
    sessions: dict[str, Any],
    layout: GenerativeLayout,
    prompts: list[Prompt],
    new: int,
    runs: int,
    progress: Callable[[float, str], None],
) -> dict[str, list[list[Trace]]]:
    """``runs`` rounds, the models in turn (each round starting one further along), each generating from every
    prompt: each model's traces per round."""
    keys = list(sessions)
    rounds: dict[str, list[list[Trace]]] = {key: [] for key in keys}
    for run in range(runs):
        progress(0.5 + 0.45 * run / runs, _("Timing round {round} of {rounds}").format(round=run + 1, rounds=runs))
        for key in keys[run % len(keys) :] + keys[: run % len(keys)]:
            rounds[key].append([ort_generate(sessions[key], layout, p.ids, new) for p in prompts])
    return rounds


def _figures(variant: LMVariant, traces: list[list[Trace]], base: list[float]) -> list[float]:
    """The variant's tokens (the first round's), its decoding speed and time to the first token over the rounds,
    and its speed against the original's (``base``: the original's ms per token in each round; empty for the
    original itself). Returns its own ms per token in each round."""
    variant.tokens = [t.tokens[0].tolist() for t in traces[0]]
    per_token = [sum(sum(t.step_ns[1:]) for t in run) / 1e6 / sum(len(t.step_ns) - 1 for t in run) for run in traces]
    variant.decode_tok_s = interval([1000 / ms for ms in per_token]) if all(per_token) else None
    variant.ttft_ms = interval([sum(t.step_ns[0] for t in run) / 1e6 / len(run) for run in traces])
    if base:
        ratio, low, high = speedup_interval(base, per_token)
        variant.speedup = Interval(median=ratio, low=low, high=high)
    return per_token


def quantize_language_model(
    request: LMQuantizeRequest, progress: Callable[[float, str], None] | None = None
) -> LMQuantizeReport:
    """Make every variant, generate from the same prompts with each and with the original, and judge each by its
    tokens, then its speed and size (see the module's docstring for the method)."""
    report_progress = progress or _silent
    began = time.perf_counter()
    source, out = Path(request.model), Path(request.out_dir)
    layout = recognised_layout(source)
    _check(request, layout)
    prompts = _prompts(source, request, layout)
    out.mkdir(parents=True, exist_ok=True)
    large = is_large(source)  # refuses a model quantized already, or one with no float weights
    variants = [LMVariant(key="fp32", label=original_label(), path=str(source), size_bytes=file_size(source))]
    for n, spec in enumerate(request.variants):
        report_progress(0.05 + 0.3 * n / len(request.variants), _("Making {variant}").format(variant=spec.label()))
        variants.append(_make(spec, source, out, large))
    threads = request.threads or default_threads()
    report_progress(0.35, _("Comparing the tokens on {count} prompts").format(count=number(len(prompts))))
    sessions = _open(variants, threads)
    _compare(variants, sessions, layout, prompts, request.new_tokens)
    rounds = _rounds(sessions, layout, prompts, request.new_tokens, request.runs, report_progress)
    base = _figures(variants[0], rounds["fp32"], [])
    for variant in variants[1:]:
        if variant.key in rounds:
            _figures(variant, rounds[variant.key], base)
    report = LMQuantizeReport(
        model=request.name or source.name,
        model_id=request.model_id,
        layout=layout,
        prompts=[p.ids[0].tolist() for p in prompts],
        prompt_text=[p.text(p.ids[0].tolist()) for p in prompts] if prompts[0].tokenizer is not None else [],
        new_tokens=request.new_tokens,
        runs=request.runs,
        threads=threads,
        variants=variants,
    )
    if prompts[0].tokenizer is not None:  # each sequence decoded whole: Chinese split over byte tokens reads right
        for variant in variants:
            variant.text = [prompts[0].text(tokens) for tokens in variant.tokens]
    judge_variants(report)
    report.notes += [method_note(report), *filter(None, [repeats_note(report)])]
    report.seconds = time.perf_counter() - began
    return report
