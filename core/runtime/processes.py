"""Ending a child process that this program started: asked first, forced when it does not go."""

from __future__ import annotations

import subprocess
from typing import Any

__all__ = ["stop"]


def stop(process: subprocess.Popen[Any], grace_s: float = 10) -> None:
    """End ``process``: terminate it, give it ``grace_s`` seconds to exit, then kill it and reap it."""
    process.terminate()
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
