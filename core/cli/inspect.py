"""inspect: decode an ONNX model (header bytes, opsets, nodes, weights), as the Decode page does.

The command starts its job's worker first, with the files the model argument names (core.jobs.ahead), and only then
imports the job machinery, the records and what prints them (core.cli.inspect_text): the worker starts Python and
imports its modules while the command imports its own, side by side rather than one after the other (issue #51).
``python -m core inspect MODEL`` starts it from its words (``start_ahead``), before argparse is imported and the
parser built, and the worker imports onnx and the job's modules before the request comes, not after.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse

__all__ = ["register", "run"]

# what the job (core.decode.inspected) imports, onnx among them: its worker imports these while the command builds
# the request, instead of after it came
_JOB_IMPORTS = ("onnx", "core.decode.inspected", "core.decode.decoder", "core.model.intake")
# a model argument's worker started from the command's words (start_ahead): its unpack folder, for run
_started: dict[str, str] = {}


def register(parser: Any) -> None:
    parser.add_argument(
        "model",
        help="an .onnx path ('model.onnx,model.onnx.data' with external data), or a Hugging Face folder (its ONNX "
        "files listed: FOLDER/onnx/model_q4.onnx names one)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(func=run)


def start_ahead(words: list[str]) -> None:
    """Start the job's worker from the words after ``inspect`` (``MODEL``, with ``--json`` before or after it),
    before they are parsed; anything else (an option, a second argument, help, a sample) is left to argparse and
    ``run``. ``run`` takes this start when argparse reads the same model."""
    models = [word for word in words if word != "--json"]
    if len(words) > 2 or len(models) != 1 or models[0].startswith(("-", "sample:")):
        return
    try:
        _started[models[0]] = _start_worker(models[0])
    except (OSError, ValueError):  # a name the system refuses: run says what is wrong
        return


def run(args: argparse.Namespace) -> int:
    unpack_dir = ""  # a sample's record needs no worker
    if not args.model.startswith("sample:"):  # the worker started from the words, else one started now
        unpack_dir = _started.pop(args.model, "") or _start_worker(args.model)
    from core.cli.inspect_text import inspect_model
    from core.jobs import ahead

    try:
        return inspect_model(args, unpack_dir)
    finally:
        ahead.stop()  # a worker no job took (the files were refused before it was sent one)


def _start_worker(model: str) -> str:
    """The inspect job's worker, started with the files ``model`` names and a fresh folder to unpack a .zip of a
    model folder into, which is returned: the job is given the same, and takes this worker when its paths are
    these. A file of a Hugging Face folder's onnx/ is read with its folder (core.cli.common.intake_request): its
    worker is started with the folder."""
    from core.cli.files import model_paths, unpack_folder
    from core.jobs import ahead

    unpack_dir = unpack_folder()
    paths = model_paths(model)
    if len(paths) == 1 and paths[0].suffix == ".onnx" and paths[0].parent.name == "onnx":
        from core.model.hf_folder import relative_member  # only here: it costs a command 10 ms (hashlib)

        member = relative_member(paths[0])
        paths = paths if member is None else [member[0]]
    ahead.start(paths, [unpack_dir], imports=_JOB_IMPORTS)
    return unpack_dir
