"""quantize, for a language model: int4 weight-only (MatMulNBits), dynamic INT8 and FP16 variants, each judged by
its greedy tokens against the original's on a fixed set of prompts, with its size and decoding speed; a variant
that changes a token is never recommended, and the command says at which step and by how much."""

from __future__ import annotations

import argparse
import itertools
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core import jobs
from core.cli.common import copy_made, ints, print_json, print_made
from core.errors import WorkbenchError
from core.i18n import _
from core.jobs import QUANTIZE_LM
from core.jobs.wire import to_data
from core.notes import say, significant
from core.quantize.lm_records import ACCURACY_LEVELS, BLOCK_SIZES, LM_KINDS, LMQuantizeRequest, LMVariantSpec

if TYPE_CHECKING:
    from core.jobs.process import Backend
    from core.model.records import ModelRecord
    from core.quantize.lm_records import LMQuantizeReport, LMVariant

__all__ = ["LM_MODES", "add_language_model_arguments", "refuse_language_model_options", "run_language_model"]

LM_MODES = tuple(LM_KINDS)  # what a language model is offered, by default all of them


def add_language_model_arguments(parser: Any) -> None:
    """The options of a language model's quantization (ignored by other models, refused where given to one)."""
    group = parser.add_argument_group("language models (judged by their greedy tokens)")
    group.add_argument(
        "--block-size",
        type=int,
        action="append",
        choices=BLOCK_SIZES,
        help="int4: MatMulNBits' block size (default 32); repeat it for several variants",
    )
    group.add_argument(
        "--accuracy-level",
        type=int,
        action="append",
        choices=list(ACCURACY_LEVELS),
        help="int4: MatMulNBits' accuracy level, 0 (unset: the kernel's default) to 4 (int8 activations); repeat it "
        "for several variants (default 0)",
    )
    group.add_argument("--new", type=int, default=16, help="tokens generated from each prompt (default 16)")
    group.add_argument("--prompts", type=int, default=3, help="prompts drawn inside the vocabulary (default 3)")
    group.add_argument("--prompt-len", type=int, default=16, help="each drawn prompt's tokens (default 16)")
    group.add_argument(
        "--prompt-ids", action="append", default=[], metavar="1,2,…", help="a prompt's ids (repeat it for several)"
    )
    group.add_argument("--runs", type=int, default=5, help="timed rounds, the models in turn (default 5)")


def refuse_language_model_options(args: argparse.Namespace) -> None:
    """Options that only a language model takes, given for another model: said, not ignored."""
    given = [
        option
        for option, value in (
            ("--block-size", args.block_size),
            ("--accuracy-level", args.accuracy_level),
            ("--prompt-ids", args.prompt_ids),
        )
        if value
    ]
    if "int4" in (args.mode or []) or given:
        raise WorkbenchError(
            _(
                "{options} judge a language model's variants by their tokens, and this model takes no cache "
                "(past_key_values in, present out). Quantize it with --mode dynamic, static or fp16."
            ).format(options=", ".join(given or ["--mode int4"]))
        )


def _specs(args: argparse.Namespace) -> list[LMVariantSpec]:
    modes = args.mode or list(LM_MODES)
    if "static" in modes or args.calibration:
        raise WorkbenchError(
            _(
                "Static INT8 is not offered for a language model: its scales would be fixed from one call's inputs, "
                "while the cache a language model is fed grows with every token. Choose --mode int4, dynamic or fp16."
            )
        )
    specs: list[LMVariantSpec] = []
    for mode in LM_MODES:
        if mode not in modes:
            continue
        if mode == "int4":
            blocks, levels = args.block_size or [32], args.accuracy_level or [0]
            specs += [
                LMVariantSpec(kind=mode, block_size=b, accuracy_level=a) for b, a in itertools.product(blocks, levels)
            ]
        else:
            specs.append(LMVariantSpec(kind=mode))
    return specs


def _copy_out(made: Path, out: Path) -> None:
    """The variant written as ``out``, its external data beside it as OUT.data (the model names it so)."""
    import onnx

    from core.model.proto import iter_tensors

    model = onnx.load_model(str(made), load_external_data=False)
    data = made.parent / f"{made.name}.data"
    for _where, tensor in iter_tensors(model):
        for entry in tensor.external_data:
            if entry.key == "location" and entry.value == data.name:
                entry.value = f"{out.name}.data"
    out.parent.mkdir(parents=True, exist_ok=True)
    onnx.save_model(model, str(out))
    if data.is_file():
        shutil.copyfile(data, out.parent / f"{out.name}.data")


def _print(outputs: dict[str, Path], report: LMQuantizeReport) -> None:
    original = report.variants[0]
    for variant in print_made(report.variants, outputs):
        print("  " + _decode(variant, original))
        if variant.verdict is not None:
            print("  " + _("tokens    {verdict}").format(verdict=say(variant.verdict)))
    if report.headline is not None:
        print(say(report.headline))
    for note in report.notes:
        print(_("note: {note}").format(note=say(note)))


def _decode(variant: LMVariant, original: LMVariant) -> str:
    speed, base, ratio = variant.decode_tok_s, original.decode_tok_s, variant.speedup
    if speed is None or base is None or ratio is None:
        return _("decode    not measured")
    return _("decode    {speed} tok/s against {original}: {speedup}× (95 % CI {low}–{high})").format(
        speed=significant(speed.median),
        original=significant(base.median),
        speedup=f"{ratio.median:.2f}",
        low=f"{ratio.low:.2f}",
        high=f"{ratio.high:.2f}",
    )


def run_language_model(
    args: argparse.Namespace, record: ModelRecord, work_dir: Path, backend: Backend | None, out: Path
) -> int:
    """Quantize the language model ``record`` as ``args`` ask, its variants written beside ``out``."""
    specs = _specs(args)
    request = LMQuantizeRequest(
        model=record.path,
        out_dir=str(work_dir / "variants"),
        variants=specs,
        prompts=args.prompts,
        prompt_length=args.prompt_len,
        prompt_ids=[ints(text, "--prompt-ids") or [] for text in args.prompt_ids],
        new_tokens=args.new,
        runs=args.runs,
        threads=args.threads,
        name=record.name,
        model_id=record.id,
    )
    report = jobs.run(QUANTIZE_LM, request, backend)
    stem = out.name.removesuffix(".onnx")
    outputs = {v.key: out if len(specs) == 1 else out.with_name(f"{stem}.{v.key}.onnx") for v in report.variants[1:]}
    made = copy_made(report.variants[1:], outputs, _copy_out)
    if args.json:
        written = {v.key: str(outputs[v.key]) for v in made}
        print_json({**to_data(report), "outputs": written})  # its notes as English sentences
    else:
        _print(outputs, report)
    return 0 if len(made) == len(specs) else 1
