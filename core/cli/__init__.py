"""The headless command line, ``python -m core COMMAND``: the same jobs as the pages, one module per command.

Each command module has ``register(subparsers)``, which adds its arguments, and ``run(args) -> exit code``.
Errors a user can fix print one line on stderr and exit 2. What a person reads is in the language ``--lang`` or
the environment names (core.cli.common.choose_language); --json output and --help stay English.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from core.cli import (
    bench,
    browser,
    compare,
    deploy,
    diff,
    export,
    graph,
    history,
    info,
    inspect,
    loadtest,
    notebook,
    partition,
    profile,
    quantize,
    samples,
    serve,
    targets,
    tune,
    upgrade,
)
from core.cli.common import add_language_argument, choose_language
from core.errors import WorkbenchError
from core.i18n import _, using

__all__ = ["main", "parser"]

COMMANDS = [samples, info, inspect, graph, export, partition, bench, history, profile, quantize, serve, targets]
COMMANDS += [upgrade, notebook, deploy, loadtest, browser, diff]
COMMANDS += [tune, compare]


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="python -m core", description="ONNX Workbench without a browser.")
    add_language_argument(top)
    sub = top.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.register(sub)
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    with using(choose_language(args)):
        try:
            return func(args)
        except WorkbenchError as exc:
            print(_("error: {message}").format(message=exc), file=sys.stderr)
            return 2


if __name__ == "__main__":
    sys.exit(main())
