"""Running ``python -m core``: in this process (``main(argv)``, fast, for what each command maps its
arguments to), or as a real subprocess (for the smoke test that the module runs on its own)."""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
from dataclasses import dataclass

from core.cli import main
from core.settings import PROJECT_ROOT

__all__ = ["CliResult", "cli", "cli_process"]


@dataclass
class CliResult:
    returncode: int
    stdout: str
    stderr: str


def cli(*args: str) -> CliResult:
    """``python -m core ARGS`` in this process: the exit code and what it printed. Settings come from the
    environment as usual (tests set them with monkeypatch)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse refusing the arguments
            code = exc.code if isinstance(exc.code, int) else 2
    return CliResult(code, out.getvalue(), err.getvalue())


def cli_process(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> CliResult:
    """``python -m core ARGS`` as its own process."""
    done = subprocess.run(
        [sys.executable, "-m", "core", *args],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    return CliResult(done.returncode, done.stdout, done.stderr)
