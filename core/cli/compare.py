"""compare: two models on the same inputs, every tensor they share measured, and the node that brings the error in,
as the Compare page does."""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core import jobs
from core.cli.common import (
    add_target_argument,
    as_onnx,
    describe,
    english_data,
    environment_json,
    in_own_folder,
    ints,
    padded,
    provider_names,
    target_backend,
)
from core.cli.plan import add_plan_arguments, plan_from_args, plan_json
from core.compare import CompareRequest, CompareSide, StepPlan
from core.compare.engine import ONLY_OUTPUTS
from core.compare.records import EXACT_NODES
from core.errors import WorkbenchError
from core.i18n import _, number
from core.jobs import COMPARE
from core.jobs.wire import to_data
from core.model.generative import PROMPT_LENGTH
from core.model.torchload import source_of
from core.notes import say

if TYPE_CHECKING:
    from core.compare import CompareReport, StepReport

__all__ = ["register", "run"]

SHOWN = 15  # nodes printed, worst first


def register(parser: Any) -> None:
    parser.add_argument("a", help="the reference: an .onnx path, or a PyTorch model (compared through its export)")
    parser.add_argument("b", help="the model compared with it: a variant, another version, the same at another level")
    parser.add_argument(
        "--eager", action="store_true", help="run A, a PyTorch model, eagerly module by module (each module's output "
        "against the tensor of B, its export, that leaves the module), instead of A's own export",
    )  # fmt: skip
    parser.add_argument("--level-a", default="disable", help="A's ORT optimization level (default disable)")
    parser.add_argument("--level-b", default="disable", help="B's ORT optimization level (default disable)")
    parser.add_argument("--provider-a", default="cpu", help="A's execution provider (default cpu)")
    parser.add_argument("--provider-b", default="cpu", help="B's execution provider (default cpu)")
    parser.add_argument(
        "--tolerance", type=float, default=1e-3, metavar="RTOL", help="a tensor is within when max |a - b| <= "
        "ATOL + RTOL * max |a| (default 1e-3)",
    )  # fmt: skip
    parser.add_argument("--atol", type=float, default=1e-5, help="the absolute part of the tolerance (default 1e-5)")
    parser.add_argument("--group-mb", type=int, default=32, help="the most one group of tensors holds (default 32)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the generated inputs (of the drawn prompt ids)")
    parser.add_argument(
        "--step", type=int, metavar="K", help="two language models at step K of a prompt (0: the prefill; K ≥ 1: the "
        "K-th decode step after A's greedy tokens), each fed its own past built from the same tokens",
    )  # fmt: skip
    prompt = parser.add_mutually_exclusive_group()
    prompt.add_argument(
        "--prompt-len", type=int, default=PROMPT_LENGTH, metavar="P",
        help=f"with --step: a prompt of P ids drawn inside the vocabulary (default {PROMPT_LENGTH})",
    )  # fmt: skip
    prompt.add_argument("--prompt-ids", metavar="1,2,…", help="with --step: the prompt's token ids")
    prompt.add_argument("--prompt", metavar="TEXT", help="with --step: the prompt as text (A's tokenizer.json)")
    add_plan_arguments(parser)
    add_target_argument(parser)
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(func=run)


def _level(text: str) -> str:
    return text.lower().removesuffix("_all")


def _provider(text: str) -> str:
    return (provider_names(text) or ["CPUExecutionProvider"])[0]


def _print(report: CompareReport) -> None:
    print(_("A  {a} at {level}").format(a=report.a, level=report.a_level))
    print(_("B  {b} at {level}").format(b=report.b, level=report.b_level))
    print(_("tolerance  {tolerance}").format(tolerance=say(report.tolerance)))
    print(_("compared   {count} tensors in {groups} run(s) of each model, {seconds} s").format(
        count=number(report.matched), groups=report.groups, seconds=f"{report.seconds:.1f}"
    ))  # fmt: skip
    for lost in report.uncompared:
        print(_("not compared  {count}: {reason}").format(count=number(lost.count), reason=_(lost.reason)))
    for out in report.outputs:
        verdict = _("within") if out.within else _("OUT")
        print(_("output {name}: max abs {max}, cosine {cosine}, {verdict}").format(
            name=out.name, max=f"{out.max_abs:.3g}", cosine=f"{out.cosine:.6f}", verdict=verdict
        ))  # fmt: skip
    if report.lm is not None:
        _print_step(report.lm)
    found = report.first_divergence
    if report.proves_nothing:  # no verdict: said in its place
        print(_(report.proves_nothing))
    elif found is None and not report.nodes:
        print(_(ONLY_OUTPUTS))
    elif found is None:
        print(_("No node leaves the tolerance."))
    else:
        module = f" ({found.module})" if found.module else ""
        print(_("first divergence  {op} '{node}'{module}").format(op=found.op_type, node=found.node, module=module))
        for why in found.why:
            print("  " + say(why))
        print("  " + _("path: {path}").format(path=" → ".join(found.path[-8:])))
    if report.keep_float32 and report.b_kind == "int4":
        print(_("keep in float or quantize with smaller blocks: {nodes}").format(nodes=", ".join(report.keep_float32)))
    elif report.keep_float32:
        print(_("keep in float32 / exclude from quantization: {nodes}").format(nodes=", ".join(report.keep_float32)))
    print(padded(_("node"), 40), padded(_("op"), 20), padded(_("max abs"), 10, True), padded(_("relative"), 10, True))
    for node in report.ranked_nodes[:SHOWN]:
        mark = "" if node.within else " ✗"
        print(f"{node.node[:40]:<40} {node.op_type:<20} {node.max_abs:>10.3g} {node.relative:>10.3g}{mark}")
    if report.exact_nodes:
        print(_(EXACT_NODES).format(count=number(report.exact_nodes)))


def _print_step(step: StepReport) -> None:
    where = _("the prefill") if step.step == 0 else _("decode step {step}").format(step=step.step)
    print(_("step       {where}: prompt of {count} ids, A's tokens before it {tokens}").format(
        where=where, count=len(step.prompt_ids), tokens=step.tokens
    ))  # fmt: skip
    if step.tokens_text:
        print(_("as text    {text}").format(text=repr(step.tokens_text)))
    print(_("past       {length} positions, each model's own (A {a}, B {b})").format(
        length=step.past_length, a=step.kv_dtype_a, b=step.kv_dtype_b
    ))  # fmt: skip
    same = _("the same") if step.same_greedy else _("DIFFERENT")
    print(_("greedy     A {a}, B {b}: {same}").format(a=step.greedy_a, b=step.greedy_b, same=same))
    for side, top in (("A", step.top5_a), ("B", step.top5_b)):
        print(f"top-5 {side}    " + ", ".join(f"{t.id} ({t.logit:.3g})" for t in top))
    if step.layers:
        print(padded(_("layer"), 42), padded(_("max abs"), 10, True), padded(_("relative"), 10, True))
    for layer in step.layers:
        mark = "" if layer.within else " ✗ " + layer.first_out
        print(f"  {layer.name[:40]:<40} {layer.max_abs:>10.3g} {layer.relative:>10.3g}{mark}")
    if step.divergence_layer:
        print(_("the models part in layer {layer}").format(layer=step.divergence_layer))


def _step_plan(args: argparse.Namespace) -> StepPlan | None:
    """The step of a prompt asked (--step and its prompt), or None."""
    if args.step is None:
        if args.prompt_ids or args.prompt or args.prompt_len != PROMPT_LENGTH:
            raise WorkbenchError(_("--prompt-ids, --prompt and --prompt-len choose the prompt of --step K; add it."))
        return None
    if args.eager:
        raise WorkbenchError(_("--step compares two ONNX language models; --eager runs A as PyTorch: choose one."))
    return StepPlan(
        step=args.step, prompt_ids=ints(args.prompt_ids, "--prompt-ids") or [], prompt_text=args.prompt or "",
        prompt_length=args.prompt_len, seed=args.seed,
    )  # fmt: skip


def step_json(step: StepReport) -> dict[str, Any]:
    """A step of a prompt under the names docs/cli.md promises."""
    return {
        "step": step.step,
        "prompt_ids": step.prompt_ids,
        "prompt_text": step.prompt_text,
        "tokens_before": step.tokens,
        "tokens_before_text": step.tokens_text,
        "past_length": step.past_length,
        "past": "own",
        "kv_dtype": {"a": step.kv_dtype_a, "b": step.kv_dtype_b},
        "greedy": {"a": step.greedy_a, "b": step.greedy_b, "same": step.same_greedy},
        "top5": {"a": to_data(step.top5_a), "b": to_data(step.top5_b)},
        "layers": to_data(step.layers),
        "divergence_layer": step.divergence_layer or None,
        "past_errors": to_data(step.past),
    }


def run(args: argparse.Namespace) -> int:
    if args.tolerance < 0 or args.atol < 0:
        raise WorkbenchError(_("--tolerance and --atol must be zero or more."))
    step = _step_plan(args)
    backend = target_backend(args.target)  # a target that is not there, before any work
    with tempfile.TemporaryDirectory(prefix="workbench-") as tmp:
        (Path(tmp) / "a").mkdir()
        (Path(tmp) / "b").mkdir()
        b_record, _torch_b = as_onnx(args.b, Path(tmp) / "b")
        if args.eager:  # A runs module by module through B's node scopes: it needs no export of its own
            original = describe(args.a)
            if not original.is_pytorch:
                raise WorkbenchError(_("--eager runs A as PyTorch: A must be a PyTorch model (sample:NAME or a file)."))
            plan = plan_from_args(b_record, original, args, Path(tmp))
            b_record = in_own_folder(b_record, Path(tmp) / "b", backend)
            source = source_of(in_own_folder(original, Path(tmp) / "a", backend))
            a_side = CompareSide(path=b_record.path, label=f"{original.name} (PyTorch eager)", torch_source=source)
        else:
            a_record, torch_record = as_onnx(args.a, Path(tmp) / "a")
            plan = [] if step else plan_from_args(a_record, torch_record, args, Path(tmp))  # a step feeds its own
            a_record = in_own_folder(a_record, Path(tmp) / "a", backend)
            b_record = in_own_folder(b_record, Path(tmp) / "b", backend)
            a_side = CompareSide(path=a_record.path, label=a_record.name, level=_level(args.level_a),
                                 provider=_provider(args.provider_a))  # fmt: skip
        request = CompareRequest(
            a=a_side,
            b=CompareSide(path=b_record.path, label=b_record.name, level=_level(args.level_b),
                          provider=_provider(args.provider_b)),
            inputs=plan, seed=args.seed, rtol=args.tolerance, atol=args.atol, group_mb=args.group_mb, step=step,
        )  # fmt: skip
        report = jobs.run(COMPARE, request, backend)
    if args.json:
        data = english_data(to_data(report))  # a divergence's causes and the rule as English sentences
        data["tolerance"] = {"rtol": report.rtol, "atol": report.atol, "rule": data["tolerance"]}
        data["inputs"] = plan_json(plan) if step is None else report.inputs
        if report.lm is not None:
            data.pop("lm")
            data.update(step_json(report.lm))
        data["environment"] = environment_json(None, args.target)
        print(json.dumps(data, indent=2))
    else:
        _print(report)
    return 1 if report.proves_nothing else 0  # nothing, or no output, compared: never a pass
