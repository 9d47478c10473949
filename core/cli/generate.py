"""generate: a language model run token by token, greedy, measured (time to first token, tokens per second,
inter-token latency, cache size, peak memory); with --reference, PyTorch eager beside it, token by token.

A Hugging Face folder of config.json and weights is generated from as it is: its main ONNX file (onnx/), or, without
one, the folder exported with its cache first (in this command's own folder, as the Export page would); either way
the folder itself is the PyTorch reference beside ONNX Runtime unless --no-reference."""

from __future__ import annotations

import argparse
import dataclasses
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core import jobs
from core.cli.common import as_onnx, describe, english_data, ints, padded, tokenizer_file
from core.errors import GenerateError
from core.generate.records import GenerateRequest
from core.generate.words import headline
from core.i18n import _, pgettext
from core.jobs import GENERATE
from core.jobs.wire import to_data
from core.model import ModelRecord
from core.model.generative import NEW_TOKENS, PROMPT_LENGTH, GenerativePlan
from core.model.hf_folder import folder_tokenizer
from core.notes import say, significant

if TYPE_CHECKING:
    from core.generate.records import EngineRun, GenerateReport
    from core.runtime.stats import Interval

__all__ = ["register", "report_json", "run"]


def register(parser: Any) -> None:
    parser.add_argument(
        "model",
        help="an .onnx language model with a cache (past_key_values in, present out), or a Hugging Face folder "
        "(config.json and weights: exported with its cache first when it holds no ONNX file)",
    )
    prompt = parser.add_mutually_exclusive_group()
    prompt.add_argument(
        "--prompt-len",
        type=int,
        default=PROMPT_LENGTH,
        metavar="P",
        help=f"a prompt of P token ids drawn inside the vocabulary (default {PROMPT_LENGTH})",
    )
    prompt.add_argument("--prompt-ids", metavar="1,2,…", help="the prompt's token ids")
    prompt.add_argument(
        "--prompt", metavar="TEXT", help="the prompt as text (needs a tokenizer: beside the model, or --tokenizer)"
    )
    parser.add_argument(
        "--tokenizer",
        metavar="PATH",
        help="a tokenizer.json (or a folder holding one) for --prompt TEXT and the tokens' text, when none lies "
        "beside the model",
    )
    parser.add_argument("--new", type=int, default=NEW_TOKENS, help=f"tokens to generate (default {NEW_TOKENS})")
    parser.add_argument("--batch", type=int, default=1, help="sequences generated at once (default 1)")
    parser.add_argument("--runs", type=int, default=5, help="timed runs, for the intervals (default 5)")
    parser.add_argument("--warmup", type=int, default=1, help="warm-up runs before them (default 1)")
    parser.add_argument("--threads", type=int, help="intra-op threads (default: every core but one)")
    parser.add_argument("--level", default="all", help="ONNX Runtime's optimization level (default all)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the drawn prompt ids")
    reference = parser.add_mutually_exclusive_group()
    reference.add_argument(
        "--reference",
        metavar="FOLDER",
        help="the PyTorch model: a Hugging Face folder (config.json and .safetensors weights), run eagerly beside it "
        "(default: the folder given as the model, when it is one)",
    )
    reference.add_argument(
        "--no-reference", action="store_true", help="ONNX Runtime alone, even for a Hugging Face folder"
    )
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(func=run)


@dataclass(frozen=True, kw_only=True)
class _Source:
    """The ONNX model generated from, and what the command did to have it."""

    record: ModelRecord  # the ONNX model
    folder: str = ""  # the Hugging Face folder given as the model: the PyTorch reference unless told otherwise
    exported: str = ""  # where that folder was exported with its cache ("" when it held an ONNX file)


def _source(model: str, work: Path) -> _Source:
    """The ONNX model behind ``model``: the file itself, a Hugging Face folder's main ONNX file, or the folder
    exported with its cache into ``work`` (the Export page's defaults, verified by generating with both)."""
    record = describe(model)  # read and checked (its external data, its limits) before anything runs
    if record.format == "onnx":
        return _Source(record=record)
    if record.format != "hf":
        raise GenerateError(
            _("'{name}' is a {format}; generate runs an ONNX language model (export it with its cache first).").format(
                name=record.name, format=_(record.format_label)
            )
        )
    if record.family:  # its ONNX files: the main one, read with its folder
        return _Source(record=describe(str(record.family[0].path)), folder=record.path)
    exported, _torch = as_onnx(model, work)
    return _Source(record=exported, folder=record.path, exported=exported.path)


def _reference(args: argparse.Namespace, source: _Source) -> str:
    """The PyTorch reference's folder, as the worker is given it; "" for ONNX Runtime alone."""
    given = "" if args.no_reference else args.reference or source.folder
    if not given:
        return ""
    folder = Path(given).expanduser().resolve()  # the caller's path, not the worker's
    if not folder.is_dir():
        raise GenerateError(
            _("--reference {path}: no such folder (give a Hugging Face folder: config.json and weights)").format(
                path=repr(given)
            )
        )
    return str(folder)


def _tokenizer(args: argparse.Namespace, source: _Source) -> str:
    """The tokenizer.json the worker is given: --tokenizer's, else the one at the top of the model's Hugging Face
    folder when none lies beside the model ("" when it does: the worker finds it there; or when there is none)."""
    if args.tokenizer:
        return tokenizer_file(args.tokenizer)
    # the folder given as the model is the ONNX model's folder, even where that was exported elsewhere from it
    return folder_tokenizer(dataclasses.replace(source.record, folder=source.folder or source.record.folder))


def _request(args: argparse.Namespace, source: _Source) -> GenerateRequest:
    record = source.record
    plan = GenerativePlan(
        prompt_length=args.prompt_len,
        new_tokens=args.new,
        batch=args.batch,
        prompt_ids=ints(args.prompt_ids, "--prompt-ids") or [],
        prompt_text=args.prompt or "",
        seed=args.seed,
    )
    level = args.level.lower().removesuffix("_all")
    return GenerateRequest(
        model=record.path,
        plan=plan,
        reference=_reference(args, source),
        tokenizer=_tokenizer(args, source),
        name=record.name,
        model_id=record.id,
        runs=args.runs,
        warmup=args.warmup,
        threads=args.threads,
        level=level,
    )


def _interval(value: Interval) -> dict[str, Any]:
    return {"median": value.median, "ci": [value.low, value.high]}


def _engine_json(run: EngineRun) -> dict[str, Any]:
    """One engine's figures under the names docs/cli.md promises."""
    return {
        "label": run.label,
        "tokens": run.tokens,
        "text": run.text,
        "ttft_ms": _interval(run.ttft_ms),
        "prefill_tok_s": _interval(run.prefill_tok_s),
        "decode_tok_s": _interval(run.decode_tok_s),
        "inter_token_ms": to_data(run.inter_token_ms),
        "kv_cache_mb": run.kv_cache_mb,
        "peak_rss_mb": run.peak_rss_mb,
        "load_ms": run.load_ms,
        "step_ms": run.step_ms,
        "steady": run.steady,
    }


def report_json(report: GenerateReport) -> dict[str, Any]:
    """The command's JSON: ONNX Runtime's figures at the top, ``eager`` beside them with a reference, and
    ``first_divergent_token`` (the step, 0 for the first generated token, or null); notes as English sentences."""
    layout = report.layout
    return {
        "model": report.model,
        "model_id": report.model_id,
        "created_at": report.created_at,
        **_engine_json(report.ort),
        "eager": _engine_json(report.eager) if report.eager is not None else None,
        "first_divergent_token": report.first_divergent_token,
        "logit_diffs": report.logit_diffs,
        "prompt_ids": report.prompt_ids,
        "prompt_text": report.prompt_text,
        "new_tokens": report.plan.new_tokens,
        "batch": report.plan.batch,
        "runs": report.runs,
        "threads": report.threads,
        "cache": {
            "layers": len(layout.layers),
            "kv_heads": layout.kv_heads,
            "heads": layout.heads,
            "head_size": layout.head_size,
            "vocabulary": layout.vocabulary,
            "dtype": layout.kv_dtype,
            "attention": layout.attention,
            "found": [n.english() for n in layout.found],
        },
        "environment": english_data(to_data(report.environment)),
        "notes": [n.english() for n in report.notes],
        "seconds": report.seconds,
    }


def _figure(value: Interval) -> str:
    """A median and its interval, the ends with as many figures as tell them apart."""
    ends = next(
        (
            (low, high)
            for digits in range(3, 7)
            if (low := significant(value.low, digits)) != (high := significant(value.high, digits))
        ),
        (significant(value.low), significant(value.high)),
    )
    return f"{significant(value.median)} ({ends[0]}–{ends[1]})"


def _print(report: GenerateReport) -> None:
    prompt_length = len(report.prompt_ids[0])
    print(say(headline(report.ort, prompt_length)))
    ids = pgettext("list", ", ").join(str(i) for i in report.prompt_ids[0][:16])
    more = "…" if prompt_length > 16 else ""
    print(
        _("prompt   {count} tokens, batch {batch}: {ids}").format(
            count=prompt_length, batch=report.plan.batch, ids=ids + more
        )
    )
    columns = [(_("engine"), 20), (_("first token ms"), 24), (_("prefill tok/s"), 26), (_("decode tok/s"), 24)]
    columns += [(_("inter-token p50/p95/p99 ms"), 28), (_("cache MB"), 9), (_("peak MB"), 8)]
    print(" ".join(padded(name, size) for name, size in columns))
    runs = [report.ort, *([report.eager] if report.eager is not None else [])]
    for run in runs:
        gaps = run.inter_token_ms
        cells = [run.label, _figure(run.ttft_ms), _figure(run.prefill_tok_s), _figure(run.decode_tok_s)]
        cells += [f"{significant(gaps.p50)} / {significant(gaps.p95)} / {significant(gaps.p99)}"]
        cells += [significant(run.kv_cache_mb), significant(run.peak_rss_mb)]
        print(" ".join(padded(cell, size) for cell, (_name, size) in zip(cells, columns, strict=True)))
    for run in runs:
        print(_("tokens   {engine}: {tokens}").format(engine=run.label, tokens=" ".join(str(t) for t in run.tokens[0])))
    if report.prompt_text:  # a tokenizer was known: the prompt and each engine's tokens as text, decoded whole
        print(_("text     {engine}: {text}").format(engine=_("prompt"), text=report.prompt_text[0]))
        for run in runs:
            print(_("text     {engine}: {text}").format(engine=run.label, text=run.text[0] if run.text else ""))
    if report.eager is not None:
        step = report.first_divergent_token
        said = _("none: the same tokens") if step is None else _("at token {step}").format(step=step)
        print(_("parts    {where}").format(where=said))
    for note in report.notes:
        print(_("note     {note}").format(note=say(note)))


def _said(source: _Source, reference: str) -> str:
    """What the command did to have an ONNX model of a Hugging Face folder, in a sentence ("" for a file given)."""
    if not source.folder:
        return ""
    eager = _("; PyTorch eager from the same folder beside it") if reference == source.folder else ""
    if source.exported:
        return _("exported with a cache to {path}").format(path=source.exported) + eager
    return _("its ONNX file {path}").format(path=source.record.path) + eager


def run(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="workbench-generate-") as work:
        source = _source(args.model, Path(work))
        request = _request(args, source)
        report = jobs.run(GENERATE, request)
    if args.json:
        data = {**report_json(report), "exported": source.exported or None, "reference": request.reference or None}
        print(json.dumps(data, indent=2, ensure_ascii=False))
        return 0
    said = _said(source, request.reference)
    if said:
        print(_("model    {what}").format(what=said))
    _print(report)
    return 0
