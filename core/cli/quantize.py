"""quantize: INT8 and FP16 variants (the Quantize page's three by default), each with its size, latency and
accuracy against the original; a language model's (int4 weight-only too) judged by their greedy tokens
(core/cli/quantize_lm.py)."""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core import jobs
from core.cli.common import (
    add_target_argument,
    as_onnx,
    copy_made,
    english_data,
    environment_json,
    in_own_folder,
    print_made,
    target_backend,
)
from core.cli.plan import add_plan_arguments, plan_from_args, plan_json
from core.cli.quantize_lm import add_language_model_arguments, refuse_language_model_options, run_language_model
from core.errors import WorkbenchError
from core.i18n import _, pgettext
from core.jobs import QUANTIZE
from core.jobs.wire import to_data
from core.model.measured import MeasuredModel
from core.notes import say, say_all
from core.quantize import QuantizeRequest

if TYPE_CHECKING:
    from core.quantize import QuantizeReport

__all__ = ["register", "run"]

MODES = ("dynamic", "static", "fp16")  # the Quantize page makes one variant of each by default


def register(parser: Any) -> None:
    parser.add_argument("model", help="an .onnx path, or a PyTorch model (exported first with its defaults)")
    parser.add_argument(
        "--mode",
        choices=[*MODES, "int4"],
        action="append",
        help="dynamic, static or fp16; repeat it for several (default: all three, as the Quantize page); a language "
        "model: int4 (weight-only), dynamic or fp16 (default: all three)",
    )
    parser.add_argument("--format", choices=["qdq", "qoperator"], default="qdq", help="static: QDQ or QOperator")
    parser.add_argument("--method", choices=["minmax", "entropy", "percentile"], default="minmax")
    parser.add_argument("--weight-type", choices=["qint8", "quint8"], default="qint8", help="dynamic: weights")
    parser.add_argument("--no-keep-io", dest="keep_io", action="store_false", help="fp16: float16 inputs too")
    parser.add_argument("--calibration", help="static: a sample count (default 32) or an .npz of real inputs")
    parser.add_argument(
        "-o",
        "--output",
        required=True,
        help="where to write the variant; with several, each beside it as NAME.KEY.onnx",
    )
    parser.add_argument("--iters", type=int, default=100, help="measured calls per model (default 100)")
    parser.add_argument("--threads", type=int, default=0, help="intra-op threads (default: all cores)")
    add_target_argument(parser)
    parser.add_argument("--json", action="store_true", help="print JSON")
    add_plan_arguments(parser)
    add_language_model_arguments(parser)
    parser.set_defaults(func=run)


def _variant_keys(args: argparse.Namespace) -> list[str]:
    """The variants the modes ask for, each with its options, in the page's order."""
    keys = {
        "dynamic": f"dynamic-{args.weight_type}",
        "static": f"static-{args.format}-{args.method}",
        "fp16": "fp16" if args.keep_io else "fp16-all",
    }
    modes = args.mode or list(MODES)
    if args.calibration and "static" not in modes:
        raise WorkbenchError(
            _(
                "--calibration sets static quantization's scales; dynamic INT8 and FP16 use no calibration data. "
                "Add --mode static, or leave --calibration out."
            )
        )
    return [keys[mode] for mode in MODES if mode in modes]


def _outputs(out: Path, keys: list[str]) -> dict[str, Path]:
    """Where each variant goes: ``out`` for one; for several, NAME.KEY.onnx beside it."""
    if len(keys) == 1:
        return {keys[0]: out}
    stem = out.name.removesuffix(".onnx")
    return {key: out.with_name(f"{stem}.{key}.onnx") for key in keys}


def _calibration(text: str | None) -> tuple[str, int]:
    """--calibration: a count of generated samples, or an .npz file (resolved here, not in the worker)."""
    if not text:
        return "", 32
    if text.isdigit():
        return "", int(text)
    path = Path(text).expanduser().resolve()
    if not path.is_file():
        raise WorkbenchError(_("--calibration {text}: no such file (give a count or an .npz)").format(text=repr(text)))
    return str(path), 32


def _print(outputs: dict[str, Path], report: QuantizeReport) -> None:
    original = report.variants[0]
    for variant in print_made(report.variants, outputs):
        assert variant.latency is not None and original.latency is not None and variant.accuracy is not None
        acc = variant.accuracy
        print("  " + _(
            "latency   median {median} ms against {original} ms: {speedup}× (95 % CI {low}–{high}), "
            "{threads} thread(s)"
        ).format(
            median=f"{variant.latency.median_ms:.3f}", original=f"{original.latency.median_ms:.3f}",
            speedup=f"{variant.speedup:.2f}", low=f"{variant.speedup_low:.2f}",
            high=f"{variant.speedup_high:.2f}", threads=report.threads,
        ))  # fmt: skip
        accuracy = _("accuracy  max abs error {max}, mean {mean}, cosine {cosine} on {held_out}")
        if acc.top1_agreement is not None:
            accuracy = _(
                "accuracy  max abs error {max}, mean {mean}, cosine {cosine}, top-1 agreement {top1} on {held_out}"
            )
        print("  " + accuracy.format(
            max=f"{acc.max_abs_error:.2e}", mean=f"{acc.mean_abs_error:.2e}", cosine=f"{acc.cosine_similarity:.6f}",
            top1=f"{acc.top1_agreement or 0:.1%}", held_out=say(report.held_out),
        ))  # fmt: skip
        verdict = (
            _("within") if variant.accuracy_ok else _("OUT OF TOLERANCE ({why})").format(why=say(variant.accuracy_note))
        )
        print("  " + _("tolerance {verdict}: {tolerance}").format(verdict=verdict, tolerance=say(report.tolerance)))
        if variant.kept_float32:
            kept = pgettext("clauses", "; ").join(say_all(variant.kept_float32))
            print("  " + _("float32   kept: {nodes}").format(nodes=kept))
        if variant.size_note:
            print("  " + _("size note {note}").format(note=say(variant.size_note)))
        ops = pgettext("list", ", ").join(f"{op} ×{n}" for op, n in variant.integer_ops.items())
        print("  " + _("runs      {ops}").format(ops=ops or _("no integer ops")))
    if report.calibration:  # only static variants are calibrated
        print(_("calibration: {calibration}").format(calibration=say(report.calibration)))
    if len(report.variants) > 2:
        print(say(report.headline))
    for said in report.notes:
        print(_("note: {note}").format(note=say(said)))


def run(args: argparse.Namespace) -> int:
    backend = target_backend(args.target)  # a target that is not there, before any work
    with tempfile.TemporaryDirectory(prefix="workbench-") as tmp:
        record, torch_record = as_onnx(args.model, Path(tmp))
        if record.generative is not None:  # judged by its tokens, not one call
            return run_language_model(args, record, Path(tmp), backend, Path(args.output).resolve())
        refuse_language_model_options(args)
        keys = _variant_keys(args)
        calibration_file, calibration_count = _calibration(args.calibration)
        outputs = _outputs(Path(args.output).resolve(), keys)
        plan = plan_from_args(record, torch_record, args, Path(tmp))
        record = in_own_folder(record, Path(tmp), backend)
        request = QuantizeRequest(
            model=MeasuredModel(path=record.path, inputs=plan, name=record.name, id=record.id),
            out_dir=str(Path(tmp) / "variants"),
            variants=keys,
            calibration_count=calibration_count,
            calibration_file=calibration_file,
            iterations=args.iters,
            threads=args.threads,
        )
        report = jobs.run(QUANTIZE, request, backend)
        made = copy_made(report.variants[1:], outputs, _copy_out)
    written = {v.key: str(outputs[v.key]) for v in made}
    if args.json:
        environment = environment_json(None, args.target)
        single = {"output": written[keys[0]]} if len(keys) == 1 else {}
        data = {**english_data(to_data(report)), **single, "outputs": written, "inputs": plan_json(plan)}
        data["environment"] = environment
        print(json.dumps(data, indent=2))
    else:
        _print(outputs, report)
    return 0 if len(made) == len(keys) else 1


def _copy_out(made: Path, out: Path) -> None:
    """The variant and its data files, renamed after ``out``, beside it."""
    out.parent.mkdir(parents=True, exist_ok=True)
    for produced in made.parent.glob(made.name + "*"):
        shutil.copyfile(produced, out.parent / produced.name.replace(made.name, out.name, 1))
