"""deploy: a folder that serves the model over HTTP (FastAPI, uvicorn), with a Triton model repository beside it."""

from __future__ import annotations

import argparse
import dataclasses
import json
import tempfile
from pathlib import Path
from typing import Any

from core import jobs
from core.cli.common import add_code_arguments, as_onnx, code_choice, provider_names, tokenizer_file
from core.cli.plan import add_plan_arguments, plan_from_args
from core.deploy import DeployRequest
from core.deploy.session import read_tuned
from core.errors import DeployError
from core.i18n import _
from core.jobs import DEPLOY
from core.jobs.wire import to_data
from core.runtime.session_config import SessionConfig

__all__ = ["register", "run", "tuned_options"]


def register(parser: Any) -> None:
    parser.add_argument("model", help="an .onnx path, or a PyTorch model (exported first with its defaults)")
    parser.add_argument("-o", "--output", required=True, metavar="DIR", help="an empty or new folder for the server")
    parser.add_argument(
        "--tuned", metavar="FILE.json", help="the session options Tune chose (what python -m core tune --json writes)"
    )
    parser.add_argument(
        "--runtime",
        help="the ONNX Runtime build the server runs (`python -m core runtimes`): its package is pinned in place of "
        "onnxruntime and its providers asked for (default: the one --tuned names, else the default)",
    )
    parser.add_argument(
        "--providers", help="the execution providers the server asks for, e.g. openvino,cpu (default: Tune's, else "
        "the runtime's own)",
    )  # fmt: skip
    parser.add_argument(
        "--tokenizer", metavar="PATH", help="a language model's tokenizer.json (or a folder holding one) to package, "
        "so /generate takes a prompt as text, when none lies beside the model",
    )  # fmt: skip
    add_code_arguments(parser)
    add_plan_arguments(parser)  # the inputs a variant Tune chose is made on, when its file is not beside --tuned
    parser.add_argument("--seed", type=int, default=0, help="the seed tune was given (default 0)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(func=run)


def tuned_options(path: str | None) -> SessionConfig | None:
    """The session configuration in ``path`` (None: ONNX Runtime's defaults)."""
    if not path:
        return None
    try:
        return read_tuned(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise DeployError(
            _("Cannot read the tuned session configuration {path}: {error}").format(path=path, error=exc.strerror)
        ) from exc


def run(args: argparse.Namespace) -> int:
    tuned = tuned_options(args.tuned)
    out = Path(args.output).resolve()
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise DeployError(
            _("{path} is not an empty folder; give an empty or new folder with -o.").format(path=args.output)
        )
    with tempfile.TemporaryDirectory(prefix="workbench-") as tmp:
        record, torch_record = as_onnx(args.model, Path(tmp), code_choice(args))
        runtime = args.runtime or (tuned.runtime if tuned else "default")
        request = DeployRequest(
            model=record.path, out_dir=str(out), name=record.name, tuned=tuned, zip=False, runtime=runtime,
            providers=provider_names(args.providers) or [],
            tokenizer=tokenizer_file(args.tokenizer) if args.tokenizer else "",
        )  # fmt: skip
        variant = tuned.variant if tuned else "fp32"
        beside = Path(args.tuned).with_name(f"{Path(args.tuned).stem}.{variant}.onnx") if args.tuned else None
        if beside is not None and variant != "fp32" and beside.is_file():  # what tune -o wrote: what Tune measured
            print(_("serving the {variant} variant Tune chose: {path}").format(variant=variant, path=beside))
            request = dataclasses.replace(request, model=str(beside), name=f"{record.name} ({variant})")
        elif variant != "fp32":  # made again from the model, as Tune made it
            plan = plan_from_args(record, torch_record, args, Path(tmp))
            request = dataclasses.replace(request, remake_variant=True, inputs=plan, seed=args.seed)
        out.mkdir(parents=True, exist_ok=True)  # after intake: a refused model leaves nothing behind
        report = jobs.run(DEPLOY, request)
    if args.json:
        print(json.dumps(to_data(report), indent=2))
        return 0
    print(_("wrote a server for {name} in {folder}:").format(name=record.name, folder=report.out_dir))
    for name in report.files:
        print(f"  {name}")
    print(_("start it with: cd {folder} && uvicorn app:app --port 8000").format(folder=report.out_dir))
    if report.generate:
        print(_("it streams tokens too: POST /generate (README.md says how)"))
    return 0
