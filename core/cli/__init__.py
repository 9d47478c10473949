"""The headless command line, ``python -m core COMMAND``: the same jobs as the pages, one module per command.

Each command module has ``register(parser)``, which adds its arguments to the command's parser, and
``run(args) -> exit code``. Errors a user can fix print one line on stderr and exit 2. What a person reads is in
the language ``--lang`` or the environment names (core.cli.language.choose_language); --json output and --help
stay English.

Only the module of the command given is imported (``python -m core samples`` does not import numpy, ONNX Runtime
or the benchmark's code for the other nineteen): the commands and their one-line help are listed here. A command
whose job's worker can start before its arguments are parsed (inspect) starts it first, before argparse is imported
and the parser built (issue #51).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from core.errors import WorkbenchError
from core.i18n import _, using

if TYPE_CHECKING:
    import argparse

__all__ = ["COMMANDS", "main", "parser"]

# name: (its module in core.cli, its line in --help), in the order --help lists them
COMMANDS: dict[str, tuple[str, str]] = {
    "samples": ("samples", "list the built-in sample models"),
    "info": ("info", "recognise a model file and print its record"),
    "inspect": ("inspect", "decode an ONNX model: header bytes, opsets, nodes, weights"),
    "graph": ("graph", "draw a model's graph into one HTML file that works offline"),
    "export": ("export", "export a PyTorch model to ONNX and verify it"),
    "partition": ("partition", "which execution provider runs which node; optimization levels"),
    "bench": ("bench", "PyTorch eager against ONNX Runtime: latency, throughput, speedup"),
    "generate": (
        "generate",
        "a language model token by token: time to first token, tokens/s, eager against ONNX Runtime per token",
    ),
    "history": ("history", "list the saved benchmark runs, newest first"),
    "profile": ("profile", "where the time goes: per ONNX Runtime node and per PyTorch layer"),
    "quantize": ("quantize", "INT8 and FP16 variants, with size, latency and accuracy"),
    "serve": ("serve", "start the web app with the upload limit and error details of the settings"),
    "targets": ("targets", "where jobs can run: the targets of the Ray cluster (cluster_address), with their hardware"),
    "runtimes": ("runtimes", "the builds of ONNX Runtime this machine has (make runtime-NAME), with their providers"),
    "upgrade": ("upgrade", "an old model brought to a newer opset, checked against the original"),
    "notebook": (
        "notebook",
        "a Jupyter notebook that redoes the walk-through on a model (torch, onnx, onnxruntime only)",
    ),
    "deploy": ("deploy", "write a FastAPI server (and a Triton repository) for the model"),
    "loadtest": ("loadtest", "load a served model over HTTP: requests/s and latency percentiles"),
    "browser-bench": (
        "browser",
        "write one HTML file that benchmarks the model in the browser that opens it (ONNX Runtime Web)",
    ),
    "diff": ("diff", "what differs between two ONNX models, node by node"),
    "tune": ("tune", "the fastest ONNX Runtime session settings surely faster than the defaults, within a budget"),
    "compare": ("compare", "two models tensor by tensor: errors, and the node that first diverges"),
}


def parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line: every command with its arguments; with ``only``, the arguments of that command alone
    (the others are listed, their modules not imported; "" for none)."""
    import argparse

    from core.cli.language import add_language_argument

    top = argparse.ArgumentParser(prog="python -m core", description="ONNX Workbench without a browser.")
    add_language_argument(top)
    sub = top.add_subparsers(dest="command", required=True)
    for name, (module, help_) in COMMANDS.items():
        command = sub.add_parser(name, help=help_)
        if only is None or only == name:
            importlib.import_module(f"core.cli.{module}").register(command)
    return top


def _command_at(argv: list[str]) -> int:
    """Where in ``argv`` the command is named (-1 when no known one is: argparse then says what is wrong, or prints
    help)."""
    skip = False
    for at, word in enumerate(argv):
        if skip:
            skip = False
        elif word == "--lang":
            skip = True
        elif not word.startswith("-"):
            return at if word in COMMANDS else -1
    return -1


def _command_in(argv: list[str]) -> str:
    """The command ``argv`` names ("" when none is known)."""
    at = _command_at(argv)
    return argv[at] if at >= 0 else ""


def _start_ahead(argv: list[str]) -> None:
    """The worker of inspect's job, started from its words alone, before argparse is imported and the parser built:
    its start no longer waits for them (about 20 ms of a command's fixed cost, issue #51). What argparse then reads
    decides as before; a worker it does not take is stopped (core.cli.inspect)."""
    at = _command_at(argv)
    if at >= 0 and argv[at] == "inspect":
        from core.cli.inspect import start_ahead

        start_ahead(argv[at + 1 :])


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    _start_ahead(argv)
    from core.cli.language import choose_language

    args = parser(_command_in(argv)).parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    with using(choose_language(args)):
        try:
            return func(args)
        except WorkbenchError as exc:
            print(_("error: {message}").format(message=exc), file=sys.stderr)
            return 2


if __name__ == "__main__":
    sys.exit(main())
