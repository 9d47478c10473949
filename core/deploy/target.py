"""The server a load test loads: the folder Deploy wrote, started with uvicorn on a loopback port of the job's own (its
sandbox has no other network) and stopped after, or an address; either way its ``GET /health`` must be the generated
server's and name the model given (NotAModelServer otherwise), and says whether it streams tokens (/generate)."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from core.errors import LoadtestError, NotAModelServer
from core.i18n import _
from core.runtime.processes import stop

__all__ = ["check_server", "started_app"]

START_S = 60.0  # how long the app may take to answer /health
HEALTH_S = 5.0  # how long an address's /health may take to answer before it is refused
HEALTH_BYTES = 1 << 20  # the most of a /health answer read (the generated server's is a few hundred bytes)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _dies_with_us() -> None:
    """In the server's process before it starts: killed when the load test's process dies, however it dies."""
    import ctypes
    import signal

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG


@contextlib.contextmanager
def started_app(folder: str, timeout_s: float = START_S) -> Iterator[str]:
    """The server Deploy wrote in ``folder``, started with uvicorn on a free loopback port by this process's Python (a
    runtime's, when the job runs in one: the server then imports that build of ONNX Runtime); yields its address;
    stopped after. The port is named, not handed over as a bound socket: uvicorn takes a socket given with
    ``--fd`` for a Unix one, so its TCP connections kept Nagle's algorithm and every answer waited about 40 ms
    for the client's delayed ACK (52 ms against 4 ms a request at one concurrency, for a four-number model)."""
    import httpx

    if not (Path(folder) / "app.py").is_file():
        raise LoadtestError(
            _("{folder} holds no app.py: give a folder that python -m core deploy wrote.").format(folder=folder)
        )
    host, port = "127.0.0.1", _free_port()
    command = [sys.executable, "-m", "uvicorn", "app:app", "--app-dir", folder, "--host", host, "--port", str(port)]
    command += ["--log-level", "warning", "--no-access-log"]
    proc = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        env={"PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1", "HOME": "/tmp"}, preexec_fn=_dies_with_us,
    )  # fmt: skip
    url = f"http://{host}:{port}"
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if proc.poll() is not None:
                error = (proc.stderr.read() if proc.stderr else b"").decode(errors="replace")[-600:]
                raise LoadtestError(_("The server did not start: {error}").format(error=error.strip()))
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/health", timeout=2, trust_env=False).json().get("status") == "ok":
                    break
            if time.monotonic() > deadline:
                raise LoadtestError(_("The server did not answer /health within {s} s.").format(s=int(timeout_s)))
            time.sleep(0.1)
        yield url
    finally:
        stop(proc)


def _health(base: str) -> Any:
    """What ``base``'s ``GET /health`` answers, read as JSON (at most HEALTH_BYTES of it), or NotAModelServer."""
    import httpx

    way_out = _(
        "Give the address of a running server that python -m core deploy wrote (its GET /health answers "
        '{"status": "ok"} with the model\'s inputs and outputs), or the folder deploy wrote.'
    )
    try:
        with httpx.stream("GET", f"{base}/health", timeout=HEALTH_S, trust_env=False) as response:
            content = b""
            for chunk in response.iter_bytes():
                content += chunk
                if len(content) > HEALTH_BYTES:
                    break
    except httpx.HTTPError as exc:
        raise NotAModelServer(
            _("Nothing answers at {url} ({error}). {way_out}").format(
                url=base[:200], error=f"{type(exc).__name__}: {exc}"[:200], way_out=way_out
            )
        ) from None
    said = content[:120].decode("utf-8", "replace").strip()
    if response.status_code != 200:
        raise NotAModelServer(
            _("{url}/health answered HTTP {status} ({body}): the address is not a model server. {way_out}").format(
                url=base[:200], status=response.status_code, body=repr(said), way_out=way_out
            )
        )
    try:
        return json.loads(content)
    except ValueError:
        raise NotAModelServer(
            _("{url}/health answered {body}, not JSON: the address is not a model server. {way_out}").format(
                url=base[:200], body=repr(said), way_out=way_out
            )
        ) from None


def _signature(specs: Any) -> list[tuple[str, str]] | None:
    """(name, dtype) of each tensor a /health answer lists, or None when it lists none as the generated server does."""
    if not isinstance(specs, list) or not specs:
        return None
    found = [(s.get("name"), s.get("dtype", "")) for s in specs if isinstance(s, dict)]
    named = [(n, d) for n, d in found if isinstance(n, str) and isinstance(d, str)]
    return sorted(named) if len(named) == len(specs) else None


def _listed(tensors: list[tuple[str, str]]) -> str:
    return ", ".join(f"{name} ({dtype})" if dtype else name for name, dtype in tensors)[:400]


def check_server(base: str, feeds: dict[str, np.ndarray], outputs: list[str]) -> dict[str, Any]:
    """Refuse ``base`` (NotAModelServer) unless its ``GET /health`` is the generated server's, ready ("ok"), and
    names the inputs (with their dtypes) and outputs of the model given: nothing is loaded before. Returns what
    /health said (a language model's server lists ``generate``)."""
    health = _health(base)
    inputs = _signature(health.get("inputs")) if isinstance(health, dict) else None
    served_outputs = _signature(health.get("outputs")) if isinstance(health, dict) else None
    if not isinstance(health, dict) or inputs is None or served_outputs is None:
        raise NotAModelServer(
            _(
                "{url}/health does not list a model's inputs and outputs ({body}): the address is not a server "
                "python -m core deploy wrote. Give such a server's address, or the folder deploy wrote."
            ).format(url=base[:200], body=json.dumps(health)[:120])
        )
    if health.get("status") != "ok":
        raise NotAModelServer(
            _("The server at {url} is not ready (/health says {status}); load it once it says ok.").format(
                url=base[:200], status=json.dumps(health.get("status"))[:60]
            )
        )
    wanted = sorted((name, str(value.dtype)) for name, value in feeds.items())
    served = sorted((name, "") for name, _dtype in served_outputs)
    if inputs != wanted or served != sorted((name, "") for name in outputs):
        raise NotAModelServer(
            _(
                "The server at {url} serves another model than the one given: it takes {served_inputs} and answers "
                "{served_outputs}; the model given takes {inputs} and answers {outputs}. Give the model it serves."
            ).format(
                url=base[:200], served_inputs=_listed(inputs), served_outputs=_listed(served),
                inputs=_listed(wanted), outputs=_listed(sorted((name, "") for name in outputs)),
            )
        )  # fmt: skip
    return dict(health)
