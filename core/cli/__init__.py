"""The headless command line, ``python -m core COMMAND``: the same jobs as the pages, one module per command.

Each command module has ``register(subparsers)``, which adds its arguments, and ``run(args) -> exit code``.
Errors a user can fix print one line on stderr and exit 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from core.cli import (
    bench,
    export,
    graph,
    history,
    info,
    inspect,
    notebook,
    partition,
    profile,
    quantize,
    samples,
    serve,
    targets,
    upgrade,
)
from core.errors import WorkbenchError

__all__ = ["main", "parser"]

COMMANDS = [samples, info, inspect, graph, export, partition, bench, history, profile, quantize, serve, targets]
COMMANDS += [upgrade, notebook]


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="python -m core", description="ONNX Workbench without a browser.")
    sub = top.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.register(sub)
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        return func(args)
    except WorkbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
