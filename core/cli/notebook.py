"""notebook: a Jupyter notebook that redoes the walk-through on a model with public libraries only (.ipynb), or
that notebook zipped with the model's files (-o NAME.zip)."""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
from pathlib import Path
from typing import Any

from core import jobs
from core.cli.common import add_code_arguments, choose_language, code_choice, describe, parse_input, split
from core.cli.plan import given_dims, refuse_unset_dims
from core.errors import NotebookError
from core.i18n import LANGUAGES, _
from core.jobs import NOTEBOOK
from core.model.inputs import resolve_free_dims
from core.notebook import STEPS, NotebookRequest, default_plan, model_files, notebook_bytes

__all__ = ["register", "run"]


def register(parser: Any) -> None:
    parser.add_argument("model", help="an .onnx path, a PyTorch file, model.py,weights.pt, or sample:NAME")
    parser.add_argument(  # the same --lang as before the command (it sets what the command prints too)
        "--lang",
        default=argparse.SUPPRESS,
        choices=sorted(LANGUAGES),
        help="the lessons' language",
    )
    parser.add_argument("--steps", help=f"which steps, in any order (default: all): {','.join(STEPS)}")
    parser.add_argument(
        "-o", "--output", default="walk.ipynb", help="the .ipynb to write, or a .zip to hold it with the model's files"
    )
    parser.add_argument("--repeat", type=int, default=100, help="timed runs per measurement (default: 100)")
    parser.add_argument("--warmup", type=int, default=10, help="untimed runs before them (default: 10)")
    parser.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="NAME=DIMS",
        help="an input's shape, e.g. x=1,3,224,224 (for TorchScript and a model's own code, which keep none)",
    )
    parser.add_argument(
        "--dim", action="append", default=[], metavar="NAME=VALUE", help="a symbolic dim, on every input that has it"
    )
    add_code_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.repeat < 1 or args.warmup < 0:
        raise NotebookError(_("--repeat must be at least 1 and --warmup at least 0."))
    record = describe(args.model, code_choice(args))
    given = dict(parse_input(text) for text in args.input)
    if given:
        specs = [
            dataclasses.replace(s, shape=list[int | str](given[s.name])) if s.name in given else s
            for s in record.inputs
        ]
        record = dataclasses.replace(record, inputs=specs)
    dims = given_dims(record, args.dim)  # before any work: a typo is named at once
    plan = default_plan(record, split(args.steps) or list(STEPS), choose_language(args))
    inputs = resolve_free_dims(plan.inputs, dims)
    refuse_unset_dims(inputs)  # a notebook times what it runs: never a size nothing said
    plan = dataclasses.replace(plan, inputs=inputs, repeat=args.repeat, warmup=args.warmup)
    output = Path(args.output).expanduser().resolve()
    files = model_files(record, plan.inputs)
    if output.suffix.lower() == ".zip":
        with tempfile.TemporaryDirectory(prefix="workbench-notebook-") as tmp:
            request = NotebookRequest(plan=plan, files=files, out_dir=tmp, name=output.stem)
            made = jobs.run(NOTEBOOK, request)
            output.parent.mkdir(parents=True, exist_ok=True)
            output.write_bytes(Path(made.path).read_bytes())
        print(_("wrote {path} ({members})").format(path=output, members=", ".join(made.members)))
        return 0
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_bytes(notebook_bytes(plan))
    print(_("wrote {path} (steps: {steps})").format(path=output, steps=", ".join(plan.steps)))
    if files:
        names = ", ".join(Path(f).name for f in files)
        print(
            _("note: the notebook loads {names} from beside itself; copy them there, or write a .zip").format(
                names=names
            ),
            file=sys.stderr,
        )
    return 0
