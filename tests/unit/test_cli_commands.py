"""The command line imports only the module of the command it runs: a quick command does not pay for numpy, ONNX
Runtime or the other commands' code (``python -m core samples`` took 0.36 s, 0.18 s since)."""

from __future__ import annotations

import argparse
import subprocess
import sys

from core.cli import COMMANDS, parser
from core.settings import PROJECT_ROOT


def _commands(top: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_a_command_imports_its_own_module_and_nothing_heavy() -> None:
    script = """
import sys
from core.cli import main
main(["samples"])
heavy = ("numpy", "onnx", "onnxruntime", "torch", "core.cli.bench", "core.cli.compare", "core.cli.export")
print(sorted(m for m in heavy if m in sys.modules), "core.cli.samples" in sys.modules)
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=60)
    assert done.stdout.splitlines()[-1] == "[] True", done.stdout + done.stderr
    assert "tinycnn" in done.stdout  # and it ran


def test_the_parser_of_one_command_is_the_whole_ones() -> None:
    whole = _commands(parser())
    assert list(whole) == list(COMMANDS)
    for name in ("bench", "browser-bench", "samples"):
        alone = _commands(parser(name))
        assert [a.dest for a in alone[name]._actions] == [a.dest for a in whole[name]._actions]
        assert [a.dest for a in alone["compare" if name != "compare" else "diff"]._actions] == ["help"]


def test_help_lists_every_command_with_its_line() -> None:
    text = parser("").format_help()
    for name, (_module, line) in COMMANDS.items():
        assert name in text and line.split(":")[0].split("(")[0].strip()[:30] in " ".join(text.split())
