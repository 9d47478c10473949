"""The input plan on the command line: --input, --dim and --value, as the pages' plan table sets them."""

from __future__ import annotations

import argparse
import contextlib
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from core import jobs
from core.cli.common import add_code_arguments, in_own_folder, ints, parse_input
from core.errors import UnsetDimError, WorkbenchError
from core.i18n import _, number
from core.jobs import IMAGE_INPUT, NPZ_INPUTS, Backend
from core.model.data import NORMALISATIONS, ImageRequest, NpzRequest, check_image_fits, image_layout
from core.model.inputs import (
    COMMAND_LINE,
    SET_ON_COMMAND_LINE,
    VALUE_KINDS,
    BenchInput,
    check_plan_memory,
    describe_values,
    dim_label,
    plan_inputs,
    resolve_free_dims,
    unset_dims,
)
from core.model.measured import MeasuredModel
from core.model.records import ModelRecord
from core.model.shapes import MAX_DIM
from core.model.torchload import source_of
from core.notes import note
from core.settings import load_settings

__all__ = [
    "add_measured_inputs",
    "add_model_arguments",
    "add_plan_arguments",
    "given_dims",
    "measured",
    "measured_model",
    "plan_from_args",
    "plan_json",
    "refuse_unset_dims",
]


def add_model_arguments(parser: Any, eager: str = "") -> None:
    """The model a command measures, as ``measured_model`` reads it: an .onnx path, or a PyTorch model exported
    first; where the command measures PyTorch eager beside ONNX Runtime (``eager``: what --no-eager does, in the
    command's words), the original behind an .onnx file (--torch) and --no-eager, else no eager side at all."""
    parser.add_argument("model", help="an .onnx path, or a PyTorch model (exported first with its defaults)")
    if eager:
        parser.add_argument("--torch", help="the PyTorch model behind an .onnx file (sample:NAME or a path)")
        parser.add_argument("--no-eager", action="store_true", help=eager)
    else:
        parser.set_defaults(torch=None, no_eager=True)


def add_measured_inputs(parser: Any) -> None:
    """What a measuring command feeds its model, as ``measured`` reads it: the seed of the generated inputs, the input
    plan (shapes, dims, values, real data) and, for a model given as its own code, how to build it."""
    parser.add_argument("--seed", type=int, default=0, help="seed of the generated inputs")
    add_plan_arguments(parser)
    add_code_arguments(parser)


def add_plan_arguments(parser: Any) -> None:
    parser.add_argument(
        "--input", action="append", default=[], metavar="NAME=1,3,640,640", help="an input's shape at batch 1"
    )
    parser.add_argument(
        "--dim", action="append", default=[], metavar="NAME=VALUE", help="a symbolic dim, on every input that has it"
    )
    parser.add_argument(
        "--value",
        action="append",
        default=[],
        metavar="NAME=16000",
        help="an input's values: a number (everywhere), normal, uniform:LOW,HIGH or ints:LOW,HIGH; for a string "
        "input, its text (repeat --value for several strings)",
    )
    parser.add_argument("--data", metavar="FILE.npz", help="real inputs: one array per input, named after it")
    parser.add_argument(
        "--image",
        metavar="[NAME=]PICTURE",
        help="real data for an image-shaped input (NAME: which, where there are several): resized to the plan's size",
    )
    parser.add_argument(
        "--normalise", choices=list(NORMALISATIONS), default="imagenet", help="how --image's pixels are scaled"
    )


def _assign(text: str, option: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name or not value:
        raise WorkbenchError(_("{option} {text}: expected NAME=VALUE").format(option=option, text=repr(text)))
    return name, value


def _set_values(spec: BenchInput, text: str) -> None:
    if spec.dtype == "str":  # a tensor(string): the text itself, each --value one more string
        spec.values, spec.texts, spec.why = "text", [*spec.texts, text], note(SET_ON_COMMAND_LINE)
        return
    word, _sep, bounds = text.partition(":")  # --value's word for a kind (core.model.values), then its range
    row = next((r for r in VALUE_KINDS.values() if r.option and r.option == word and r.ranged == bool(bounds)), None)
    if row is not None and not row.ranged:
        spec.values = row.name
    elif row is not None:
        try:
            low, high = (float(v) for v in bounds.split(","))
        except ValueError:
            raise WorkbenchError(
                _("--value {name}={text}: expected {kind}:LOW,HIGH, e.g. {kind}:0,10").format(
                    name=spec.name, text=text, kind=word
                )
            ) from None
        spec.values, spec.low, spec.high = row.name, low, high
    else:
        try:
            spec.values, spec.low = "constant", float(text)
        except ValueError:
            raise WorkbenchError(
                _("--value {name}={text}: give a number, normal, uniform:LOW,HIGH or ints:LOW,HIGH").format(
                    name=spec.name, text=text
                )
            ) from None
    spec.why = note(SET_ON_COMMAND_LINE)


def given_dims(record: ModelRecord, texts: list[str]) -> dict[str, int]:
    """--dim NAME=VALUE, each a whole number from 1 (0 for a language model's past: a prefill) to MAX_DIM."""
    dims = {}
    for text in texts:
        name, value = _assign(text, "--dim")
        cache = record.generative  # a language model's past may be empty (0: a prefill)
        least = 0 if cache is not None and name == cache.past_symbol else 1
        if not value.isdigit() or not least <= int(value) <= MAX_DIM:
            raise WorkbenchError(
                _("--dim {text}: the value must be a whole number from 1 to {most}").format(
                    text=repr(text), most=number(MAX_DIM)
                )
            )
        dims[name] = int(value)
    return dims


def plan_from_args(
    record: ModelRecord, torch_record: ModelRecord | None, args: argparse.Namespace, work_dir: Path
) -> list[BenchInput]:
    """The model's default plan with the command line's --dim, --input, --value and --data applied (in that
    order); the data's arrays are kept in ``work_dir`` for the command's life. A plan whose inputs, at the
    largest --batch, could not fit in a worker's memory is refused here, before anything runs."""
    plan = plan_inputs(record, torch_record)
    by_name = {spec.name: spec for spec in plan}
    plan = resolve_free_dims(plan, given_dims(record, args.dim))
    for text in args.input:
        name, shape = parse_input(text)
        spec = _input(by_name, name, "--input")
        if len(shape) != len(spec.shape):
            raise WorkbenchError(
                _("--input {name}: the model's input has {dims} dims, not {given}").format(
                    name=name, dims=len(spec.shape), given=len(shape)
                )
            )
        spec.shape = shape
        for dim in spec.free:
            dim.give(shape[dim.axis], note(SET_ON_COMMAND_LINE), note(COMMAND_LINE))
    for text in args.value:
        name, value = _assign(text, "--value")
        _set_values(_input(by_name, name, "--value"), value)
    if args.data:
        data = Path(args.data).expanduser().resolve()  # the caller's path, not the worker's
        if not data.is_file():
            raise WorkbenchError(_("--data {path}: no such file").format(path=repr(args.data)))
        (work_dir / "data").mkdir(parents=True, exist_ok=True)
        plan = jobs.run(NPZ_INPUTS, NpzRequest(path=str(data), inputs=plan, out_dir=str(work_dir / "data")))
    refuse_unset_dims(plan)
    memory = load_settings().worker_memory_mb << 20
    check_plan_memory(plan, _largest_batch(args), memory, _MEMORY_SETTING)
    if args.image:
        plan = _with_image(plan, args.image, args.normalise, work_dir, memory)
    return plan


_MEMORY_SETTING = " (setting WORKBENCH_WORKER_MEMORY_MB)"


def _with_image(plan: list[BenchInput], text: str, normalise: str, work_dir: Path, memory: int) -> list[BenchInput]:
    """The plan with --image's picture as the values of its image-shaped input, made in the worker; a plan that
    no picture can be made into in a worker's memory is refused here, before the picture is read."""
    images = [spec for spec in plan if image_layout(spec)]
    name, sep, rest = text.partition("=")
    if sep and name in {spec.name for spec in plan}:  # NAME=PICTURE
        spec, picture = next((s for s in images if s.name == name), None), rest
        if spec is None:
            raise WorkbenchError(
                _(
                    "--image {name}: that input is not shaped like an image (a float input of rank 4 with 1, 3 or 4 "
                    "channels)"
                ).format(name=name)
            )
    elif len(images) == 1:
        spec, picture = images[0], text
    elif not images:
        raise WorkbenchError(
            _("--image {text}: the model has no input shaped like an image; its inputs are {inputs}").format(
                text=repr(text), inputs=", ".join(s.name for s in plan)
            )
        )
    else:
        raise WorkbenchError(
            _(
                "--image {text}: the model has several inputs shaped like an image; write --image NAME=PICTURE with "
                "NAME one of {inputs}"
            ).format(text=repr(text), inputs=", ".join(s.name for s in images))
        )
    check_image_fits(spec, memory, _MEMORY_SETTING)  # before the picture is read
    path = Path(picture).expanduser().resolve()  # the caller's path, not the worker's
    if not path.is_file():
        raise WorkbenchError(_("--image {path}: no such file").format(path=repr(picture)))
    (work_dir / "image").mkdir(parents=True, exist_ok=True)
    request = ImageRequest(
        image=str(path),
        spec=spec,
        out_dir=str(work_dir / "image"),
        normalise=normalise,
        memory_bytes=memory,
        where=_MEMORY_SETTING,
    )
    made = jobs.run(IMAGE_INPUT, request)
    return [made if s.name == made.name else s for s in plan]


def refuse_unset_dims(plan: list[BenchInput]) -> None:
    """Refuse a plan with a dim nothing in the model sizes, naming the exact options that give it one."""
    missing = unset_dims(plan)
    if not missing:
        return
    options = []
    for spec, dim in missing:
        if dim.symbol != "?":
            options.append(f"--dim {dim.symbol}=N")
        else:
            shape = ",".join("N" if axis == dim.axis else str(d) for axis, d in enumerate(spec.shape))
            options.append(f"--input {spec.name}={shape}")
    listed = ", ".join(dim_label(s, d) for s, d in missing)
    raise UnsetDimError(
        _(
            "Nothing in the model says how large {dims} should be, and a made-up size would give numbers that mean "
            "nothing, so nothing was run. Add {options} (N: the size to run at, e.g. the width of your images or "
            "the length of your sequences)."
        ).format(dims=listed, options=" ".join(options))
    )


def _largest_batch(args: argparse.Namespace) -> int:
    """The largest batch the command runs at: bench's --batch sweep (1,8), profile's --batch, else 1."""
    batch = getattr(args, "batch", None)
    if isinstance(batch, int):
        return batch
    return max(ints(batch, "--batch") or [1])


def _input(by_name: dict[str, BenchInput], name: str, option: str) -> BenchInput:
    if name not in by_name:
        raise WorkbenchError(
            _("{option} {name}: the model has no input of that name; it has {inputs}").format(
                option=option, name=name, inputs=", ".join(by_name)
            )
        )
    return by_name[name]


def measured_model(args: argparse.Namespace, work_dir: Path, backend: Backend | None) -> MeasuredModel:
    """What ``bench`` and ``profile`` measure: the ONNX model (a PyTorch one exported first), its PyTorch
    original (``--torch``; none with ``--no-eager``), the name to report it under, and the input plan; for a
    cluster target, each in a folder of its own (core.cli.common.in_own_folder)."""
    from core.cli.common import as_onnx, code_choice, describe, parse_input

    shapes = dict(parse_input(text) for text in args.input)
    record, torch_record = as_onnx(args.model, work_dir, code_choice(args), shapes)
    if args.torch:
        torch_record = describe(args.torch)
        if not torch_record.is_pytorch:
            raise WorkbenchError(
                _("--torch {path} is a {format}, not a PyTorch model.").format(
                    path=repr(args.torch), format=_(torch_record.format_label)
                )
            )
    if args.no_eager:
        torch_record = None
    named = torch_record.name if torch_record and args.model.startswith("sample:") else record.name
    plan = plan_from_args(record, torch_record, args, work_dir)
    record = in_own_folder(record, work_dir, backend)
    torch_source = source_of(in_own_folder(torch_record, work_dir, backend)) if torch_record else None
    torch_id = torch_record.id if torch_record else ""
    return MeasuredModel(
        path=record.path, inputs=plan, name=named, id=record.id, torch_source=torch_source, torch_id=torch_id
    )


@contextlib.contextmanager
def measured(args: argparse.Namespace, backend: Backend | None) -> Iterator[MeasuredModel]:
    """``measured_model``, made in a temporary folder that is kept while the command measures it."""
    with tempfile.TemporaryDirectory(prefix="workbench-") as tmp:
        yield measured_model(args, Path(tmp), backend)


def plan_json(plan: list[BenchInput]) -> list[dict[str, Any]]:
    """The inputs a command ran on, for its JSON."""
    return [
        {
            "name": s.name,
            "dtype": s.dtype,
            "shape": s.shape,
            "batch_axis": s.batch_axis,
            "values": describe_values(s).english(),  # the JSON's words are English, whatever the language
            "free_dims": [
                {
                    "axis": d.axis,
                    "symbol": d.symbol,
                    "value": d.value,
                    "why": d.why.english(),
                    "from": d.source.english(),
                }
                for d in s.free
            ],
        }
        for s in plan
    ]
