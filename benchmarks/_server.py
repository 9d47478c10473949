"""Start the app on a free port for a benchmark script, and stop it afterwards."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@contextmanager
def running_app(
    data_dir: Path, root: Path = ROOT, env: dict[str, str] | None = None, **settings: str
) -> Iterator[tuple[str, int]]:
    """The app's URL and server pid, started with `python -m core serve` and WORKBENCH_<NAME> settings (and more of
    its environment in ``env``, such as a Streamlit option's STREAMLIT_ variable), from the checkout at ``root``
    (another one, such as the commit before a change, to measure both in one run)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # a cache of its own, empty at first (core.export.reuse): the first export of a sample is made, as on a new machine
    env = dict(os.environ, WORKBENCH_DATA_DIR=str(data_dir), WORKBENCH_CACHE_DIR=str(data_dir / "cache"), **(env or {}))
    env.update({f"WORKBENCH_{name.upper()}": value for name, value in settings.items()})
    server = subprocess.Popen(
        [sys.executable, "-m", "core", "serve", "--port", str(port), "--address", "127.0.0.1"],
        cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok":
                    break
            except OSError:
                time.sleep(0.25)
        else:
            raise RuntimeError("the app did not start within 60 s")
        yield url, server.pid
    finally:
        server.terminate()
        server.wait(timeout=30)
