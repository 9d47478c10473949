"""Ending a child process: asked first, forced when it does not go, reaped either way."""

from __future__ import annotations

import subprocess
import sys

from core.runtime.processes import stop


def test_a_process_that_ignores_terminate_is_killed_after_the_grace_and_reaped() -> None:
    deaf = (
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); time.sleep(60)"
    )
    process = subprocess.Popen([sys.executable, "-c", deaf], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    stop(process, grace_s=0.2)
    assert process.returncode == -9  # SIGKILL: terminate was ignored


def test_a_process_that_heeds_terminate_ends_on_it() -> None:
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    stop(process)
    assert process.returncode == -15  # SIGTERM
