"""A causal language model exported with its cache, and verified by generating with both.

A Hugging Face folder's model (core.model.causal_lm: built by transformers, offline) is exported through a wrapper
that takes the past as flat tensors and gives the present back (``past_key_values.N.key/value`` in, ``present.N.*``
out, the names optimum writes), its batch, new tokens, past and total lengths dynamic. torch.export (dynamo=True)
is the default: the cache's axes are declared with ``dynamic_shapes`` and a length is never traced into the graph
as a constant; the legacy exporter takes the same wrapper with ``dynamic_axes``. One call proves little for such a
model: the export is verified by greedy generation, PyTorch eager (transformers' own cache) against ONNX Runtime
(its cache kept in ONNX Runtime's buffers), on a few prompts, token by token, with the greedy loops Generate runs
(core.runtime.greedy, core.runtime.greedy_eager).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from core.errors import ExportError
from core.export.options import EXPORTERS, ExportOptions, ExportReport, ExportRequest, GreedyCheck, ShapeTrial
from core.i18n import N_, _
from core.model import causal_lm
from core.model.causal_lm_code import NEW_TOKENS, PROMPTS, export_lines, greedy_lines, load_lines
from core.model.torchload import module_op_counts
from core.notes import Note, note, warning
from core.runtime.outputs import ATOL, RTOL, OutputDiff
from core.settings import IntakeLimits

__all__ = ["NEW_TOKENS", "PROMPTS", "export_causal_lm", "greedy_checks", "lm_code"]

SEED = 0
EXAMPLE = {"batch": 2, "sequence": 3, "past": 5}  # what the exporter traces: every axis at a size of its own, >= 2

DYNAMO_REASON = N_(
    "A language model is exported with torch.export (dynamo=True): the batch, the new tokens, the past and the mask's "
    "length are declared dynamic (dynamic_shapes), so no length is traced into the graph as a constant."
)
LEGACY_REASON = N_(
    "You chose the legacy TorchScript exporter: it traces one prompt length through a wrapper of flat past tensors, "
    "and the generation below shows whether that trace holds at other lengths."
)
PROMPT_LABEL = N_("batch {batch}, {length} prompt token(s), {new} generated")  # what a GreedyCheck's table heads
DIVERGES = N_(
    "ONNX Runtime's greedy tokens part from PyTorch's at step {step} (0 is the first generated token): PyTorch chose "
    "{eager}, ONNX Runtime {onnx}."
)
LOGITS_DIFFER = N_("The last logits differ beyond {atol} + {rtol}·|value| at step {step} ({diff}).")
RECOGNITION = N_("recognised as a language model with a cache")
RECOGNISED = N_("{layers} layers, {heads} key/value heads of size {size}, a vocabulary of {vocabulary}")
NOT_TOLD = N_("the exported graph's cache was not recognised")


def _example(sizes: causal_lm.CacheSizes) -> list[Any]:
    """The wrapper's example arguments: the ids, the mask of past + new, the positions after the past, each past."""
    import torch

    generator = torch.Generator().manual_seed(SEED)
    batch, new, past = EXAMPLE["batch"], EXAMPLE["sequence"], EXAMPLE["past"]
    ids = torch.randint(0, sizes.vocabulary, (batch, new), generator=generator)
    mask = torch.ones(batch, past + new, dtype=torch.int64)
    positions = torch.arange(past, past + new).unsqueeze(0).expand(batch, new).contiguous()
    cache = [
        torch.randn(batch, sizes.kv_heads, past, sizes.head_size, generator=generator) for _i in range(2 * sizes.layers)
    ]
    return [ids, mask, positions, *cache]


def _dynamo_shapes(layers: int) -> dict[str, Any]:
    """dynamic_shapes by the wrapper's parameters (its past is one tuple of tensors)."""
    import torch

    dim = torch.export.Dim
    batch, sequence = dim(causal_lm.BATCH, max=4096), dim(causal_lm.SEQUENCE, max=1 << 20)
    past, total = dim(causal_lm.PAST, max=1 << 20), dim(causal_lm.TOTAL, max=1 << 21)
    return {
        "input_ids": {0: batch, 1: sequence},
        "attention_mask": {0: batch, 1: total},
        "position_ids": {0: batch, 1: sequence},
        "past": tuple({0: batch, 2: past} for _i in range(2 * layers)),
    }


def _run_export(wrapper: Any, example: list[Any], path: Path, options: ExportOptions, external: bool) -> None:
    import torch

    layers = (len(example) - 3) // 2
    common: dict[str, Any] = {
        "opset_version": options.opset,
        "input_names": causal_lm.input_names(layers),
        "output_names": causal_lm.output_names(layers),
    }
    if options.exporter == "dynamo":
        torch.onnx.export(
            wrapper, tuple(example), str(path), dynamo=True, dynamic_shapes=_dynamo_shapes(layers),
            optimize=options.optimize, external_data=external, verbose=False, **common,
        )  # fmt: skip
    else:
        torch.onnx.export(
            wrapper, tuple(example), str(path), dynamo=False, do_constant_folding=options.optimize,
            dynamic_axes=causal_lm.dynamic_axes(layers), **common,
        )  # fmt: skip


def _prompt(batch: int, length: int, vocabulary: int, seed: int) -> Any:
    import numpy as np

    return np.random.default_rng(seed).integers(0, vocabulary, size=(batch, length), dtype=np.int64)


def _first_divergent(eager: Any, onnx: Any) -> int | None:
    differs = (eager != onnx).any(axis=0)
    return int(differs.argmax()) if differs.any() else None


def _check(hf: Any, session: Any, layout: Any, batch: int, length: int, seed: int) -> tuple[GreedyCheck, ShapeTrial]:
    """One prompt generated greedily by both; each step's last logits compared while both saw the same tokens."""
    import numpy as np

    from core.runtime.greedy import ort_generate
    from core.runtime.greedy_eager import eager_generate

    prompt = _prompt(batch, length, layout.vocabulary, seed)
    onnx_run = ort_generate(session, layout, prompt, NEW_TOKENS, record=True)
    eager_run = eager_generate(hf, prompt, NEW_TOKENS, record=True)
    step = _first_divergent(eager_run.tokens, onnx_run.tokens)
    compared = NEW_TOKENS if step is None else step + 1  # after a divergence the two see different tokens
    diffs = [
        float(np.max(np.abs(np.asarray(e, dtype=np.float64) - np.asarray(o, dtype=np.float64))))
        for e, o in zip(eager_run.logits[:compared], onnx_run.logits[:compared], strict=False)
    ]
    scale = max((float(np.max(np.abs(e))) for e in eager_run.logits[:compared]), default=0.0)
    within = all(d <= ATOL + RTOL * scale for d in diffs)
    label = f"input_ids {batch}×{length} +{NEW_TOKENS}"  # the prompt's shape, and the tokens generated from it
    error: Note | None = None
    if step is not None:
        column = (eager_run.tokens[:, step] != onnx_run.tokens[:, step]).argmax()
        eager_token, onnx_token = int(eager_run.tokens[column, step]), int(onnx_run.tokens[column, step])
        error = warning(DIVERGES, step=step, eager=eager_token, onnx=onnx_token)
    elif not within:
        worst = int(np.argmax(diffs))
        error = warning(LOGITS_DIFFER, atol=f"{ATOL:g}", rtol=f"{RTOL:g}", step=worst, diff=f"{diffs[worst]:.3g}")
    largest = max(diffs, default=0.0)
    check = GreedyCheck(
        label=label,
        prompt=prompt.tolist(),
        eager=eager_run.tokens.tolist(),
        onnx=onnx_run.tokens.tolist(),
        first_divergent=step,
        logit_diff=diffs,
    )
    trial = ShapeTrial(
        label=label,
        input_shapes={"input_ids": [batch, length]},
        ok=step is None and within,
        error=error,
        diffs=[OutputDiff(output="logits", max_abs=largest, max_rel=largest / scale if scale else 0.0, ok=within)],
    )
    return check, trial


def greedy_checks(
    hf: Any, session: Any, layout: Any, progress: Callable[[float, str], None]
) -> tuple[list[GreedyCheck], list[ShapeTrial]]:
    """PyTorch eager and ONNX Runtime generate greedily from each of PROMPTS; their tokens and logits compared."""
    checks, trials = [], []
    for index, (batch, length) in enumerate(PROMPTS):
        progress(0.75 + 0.2 * index / len(PROMPTS), _("Generating with PyTorch and ONNX Runtime, token by token"))
        check, trial = _check(hf, session, layout, batch, length, seed=SEED + index)
        checks.append(check)
        trials.append(trial)
    return checks, trials


def _exporter(requested: str) -> tuple[str, str]:
    if requested not in EXPORTERS:
        raise ExportError(f"Unknown exporter {requested!r}; the exporters are: {', '.join(EXPORTERS)}.")
    return requested, DYNAMO_REASON if requested == "dynamo" else LEGACY_REASON


def _silent(fraction: float, message: str) -> None:
    """Progress goes nowhere when nobody watches."""


def export_causal_lm(
    request: ExportRequest,
    limits: IntakeLimits | None = None,
    progress: Callable[[float, str], None] | None = None,
) -> ExportReport:
    """Export a Hugging Face folder's causal language model with its cache, check it, and verify it by greedy
    generation against PyTorch. Runs in the worker (core.export.exporter.export_model hands it over)."""
    from core.export.exporter import (
        EXPORTING,
        PROTOBUF_LIMIT,
        _check_opset,
        _checked,
        _collected_warnings,
        _exported_record,
        _report,
        _target,
    )
    from core.export.messages import explain_export_failure, plain_warnings

    report_progress = progress or _silent
    started = time.perf_counter()
    source, options = request.source, request.options
    exporter, reason = _exporter(options.exporter)
    _check_opset(exporter, options.opset)
    report_progress(0.05, _("Loading the language model with transformers (offline)"))
    folder = Path(source.path)
    hf = causal_lm.load_causal_lm(folder, limits)
    sizes = causal_lm.cache_sizes(folder)
    wrapper = causal_lm.flat_module(hf)
    weights = sum(p.numel() * p.element_size() for p in hf.parameters())
    external = options.external_data or weights > PROTOBUF_LIMIT
    path = _target(request.out_dir, request.file_name)
    report_progress(0.15, _(EXPORTING).format(exporter=exporter, opset=options.opset))
    with _collected_warnings() as messages:
        try:
            _run_export(wrapper, _example(sizes), path, options, external)
        except ExportError:
            raise
        except Exception as exc:
            raise explain_export_failure(exc, exporter, options.opset) from None
    written = _checked(path, report_progress)
    record = _exported_record(request, written, limits, exporter)
    layout = record.generative
    written.checks.append(_recognition_check(layout))
    session = written.session
    greedy, trials = (
        greedy_checks(hf, session, layout, report_progress) if layout is not None and session is not None else ([], [])
    )
    return _report(
        written,
        trials,
        exporter=exporter,
        reason=reason,
        opset=options.opset,
        torch_ops=module_op_counts(hf),
        warnings=plain_warnings(messages),
        code=lm_code(folder, options, str(path)),
        seconds=time.perf_counter() - started,
        record=record,
        greedy=greedy,
    )


def _recognition_check(layout: Any) -> Any:
    from core.export.options import Check

    if layout is None:
        return Check(note(RECOGNITION), False, warning(NOT_TOLD))
    told = note(
        RECOGNISED,
        layers=len(layout.layers),
        heads=layout.kv_heads,
        size=layout.head_size,
        vocabulary=layout.vocabulary,
    )
    return Check(note(RECOGNITION), True, told)


def lm_code(folder: Path, options: ExportOptions, output_path: str) -> str:
    """Python that redoes this export outside the app: the folder loaded with transformers, the flat wrapper, the
    same torch.onnx.export call, and the greedy check on the same prompts."""
    output = Path(output_path).name
    lines = [
        *load_lines(folder.name),
        "",
        *export_lines(options.exporter, options.opset, output, options.optimize),
        "",
        *greedy_lines(output, PROMPTS, NEW_TOKENS),
    ]
    return "\n".join(lines) + "\n"
