"""inspect: decode an ONNX model (header bytes, opsets, nodes, weights), as the Decode page does.

The command starts its job's worker first, with the files the model argument names (core.jobs.ahead), and only then
imports the job machinery, the records and what prints them (core.cli.inspect_text): the worker starts Python and
imports its modules while the command imports its own, side by side rather than one after the other (issue #51).
"""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["register", "run"]


def register(parser: Any) -> None:
    parser.add_argument(
        "model",
        help="an .onnx path ('model.onnx,model.onnx.data' with external data), or a Hugging Face folder (its ONNX "
        "files listed: FOLDER/onnx/model_q4.onnx names one)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    unpack_dir = "" if args.model.startswith("sample:") else _start_worker(args.model)
    from core.cli.inspect_text import inspect_model
    from core.jobs import ahead

    try:
        return inspect_model(args, unpack_dir)
    finally:
        ahead.stop()  # a worker no job took (the files were refused before it was sent one)


def _start_worker(model: str) -> str:
    """The inspect job's worker, started with the files ``model`` names and a fresh folder to unpack a .zip of a
    model folder into, which is returned: the job is given the same, and takes this worker when its paths are
    these (a file of a Hugging Face folder's onnx/ is read with its folder: its job starts a worker of its own)."""
    from core.cli.files import model_paths, unpack_folder
    from core.jobs import ahead

    unpack_dir = unpack_folder()
    ahead.start(model_paths(model), [unpack_dir])
    return unpack_dir
