"""Token authentication of the Ray cluster: the token file of a cluster this project starts, and what a client
checks before it joins one.

Ray (2.52 and later) refuses a client or node without the cluster's token when every node runs with
``RAY_AUTH_MODE=token`` and the token in ``RAY_AUTH_TOKEN`` or in the file named by ``RAY_AUTH_TOKEN_PATH`` (else
``~/.ray/auth_token``); these are the only variables read, by Ray itself. Before the app or the command line joins
a cluster (core.jobs.cluster.client.connect) it checks, unless the operator set ``cluster_insecure``:

- that its own Ray would send a token (a token mode with no token would make Ray abort the process);
- that the token is the cluster's: a request with it, and a made-up cluster id, is refused for the id, not the
  token (an instant answer, where ``ray.init`` with a wrong token retries for 20 s);
- that the cluster refuses a request without it: a separate process, started without any token, asks the head
  (its GCS) once. A cluster that answers it lets anyone who reaches its port run code on its nodes.

The token is never printed, logged or put on a command line; ``scrub`` takes it out of any message shown.
"""

from __future__ import annotations

import os
import secrets
import stat
import subprocess
import sys
from pathlib import Path

from core.errors import TargetError
from core.i18n import _

__all__ = [
    "MODE",
    "TOKEN",
    "TOKEN_PATH",
    "client_token",
    "let_through",
    "make_token_file",
    "node_environment",
    "probe_without_token",
    "scrub",
    "stop_probe",
    "token_accepted",
]

MODE, TOKEN, TOKEN_PATH = "RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"
TOKEN_BYTES = 32  # 256 random bits, as Ray's own `ray get-auth-token --generate` makes them
PROBE_TIMEOUT_S = 60.0  # the probe imports Ray's core (1.5 s; 8 s and more on a crowded machine), then asks once
# the answers of Ray's GCS to a request with a made-up cluster id: refused for its token, or let through to the id
REFUSED, LET_THROUGH = "InvalidAuthToken", "WrongClusterID"
_ASK = """
import secrets, sys
from ray._raylet import GcsClient
try:
    GcsClient(address=sys.argv[1], cluster_id=secrets.token_hex(28)).internal_kv_get(b"probe", None, timeout=5)
except Exception as exc:
    print(type(exc).__name__, " ".join(str(exc).split())[:300])
else:
    print("answered")
"""


def make_token_file(path: Path) -> Path:
    """The cluster's token file at ``path``, made once: 256 random bits as hex, readable by its owner only (0600).
    An existing file is kept when it holds a token that only its owner can read; anything else is an error."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        fd = -1
    if fd < 0:
        info = path.lstat()
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o077:
            raise TargetError(
                _(
                    "The cluster's token file {path} is not a file that only its owner can read; remove "
                    "it (a new token is made) or `chmod 600` it."
                ).format(path=path)
            )
        if len(path.read_text().strip()) < 2 * TOKEN_BYTES:
            raise TargetError(
                _("The cluster's token file {path} holds no token; remove it and a new one is made.").format(path=path)
            )
        return path
    with os.fdopen(fd, "w") as fh:
        os.fchmod(fh.fileno(), 0o600)  # whatever the umask
        fh.write(secrets.token_hex(TOKEN_BYTES))
    return path


def node_environment(token_file: Path) -> dict[str, str]:
    """What a node or a client of the cluster whose token is in ``token_file`` adds to its environment (a token
    given in RAY_AUTH_TOKEN would win over the file: leave it out)."""
    return {MODE: "token", TOKEN_PATH: str(token_file)}


def client_token() -> str:
    """The token this process's Ray would send; TargetError saying what to set when it would send none."""
    how = _(
        "set {mode}=token and {token_path} to a file holding the cluster's token (made with the cluster: "
        "`make cluster` keeps it in its folder), or, for a cluster on a network you trust, cluster_insecure "
        "(WORKBENCH_CLUSTER_INSECURE=true)"
    ).format(mode=MODE, token_path=TOKEN_PATH)
    if os.environ.get(MODE, "").strip().lower() != "token":
        raise TargetError(
            _("This process has no token for the Ray cluster ({mode} is not 'token'): {how}.").format(
                mode=MODE, how=how
            )
        )
    if token := os.environ.get(TOKEN, "").strip():
        return token
    named = os.environ.get(TOKEN_PATH, "")
    path = Path(named).expanduser() if named else Path.home() / ".ray" / "auth_token"
    try:
        token = path.read_text().strip()
    except OSError as exc:
        raise TargetError(
            _("The cluster's token file {path} cannot be read ({strerror}): {how}.").format(
                path=path, strerror=exc.strerror, how=how
            )
        ) from None
    if not token:
        raise TargetError(_("The cluster's token file {path} is empty: {how}.").format(path=path, how=how))
    return token


def scrub(text: str) -> str:
    """``text`` without this process's token in it (for messages built from Ray's errors)."""
    try:
        token = client_token()
    except TargetError:
        return text
    return text.replace(token, "<the cluster's token>")


def _verdict(answer: str) -> bool | None:
    if REFUSED in answer:
        return False
    if LET_THROUGH in answer or answer.strip() == "answered":
        return True
    return None


def token_accepted(address: str) -> bool | None:
    """Whether the cluster's head accepts this process's token (None: its answer said neither)."""
    from ray._raylet import GcsClient  # type: ignore[attr-defined]  # not in Ray's stubs

    try:
        GcsClient(address=address, cluster_id=secrets.token_hex(28)).internal_kv_get(b"probe", None, timeout=5)
    except Exception as exc:  # Ray's AuthenticationError for both answers, other errors for the rest
        return _verdict(str(exc))
    return True


def probe_without_token(address: str) -> subprocess.Popen[str]:
    """A process that asks the head at ``address`` once, without any token; read it with ``let_through`` (or end
    it with ``stop_probe``)."""
    env = {k: v for k, v in os.environ.items() if k not in (TOKEN, TOKEN_PATH)}
    env[MODE] = "disabled"
    return subprocess.Popen(
        [sys.executable, "-c", _ASK, address],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )


def stop_probe(probe: subprocess.Popen[str]) -> None:
    """End a probe whose answer is no longer needed."""
    probe.kill()
    probe.communicate()


def let_through(probe: subprocess.Popen[str]) -> bool | None:
    """Whether the head answered the probe's request without a token (None: it could not tell)."""
    try:
        out, _err = probe.communicate(timeout=PROBE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        stop_probe(probe)
        return None
    return _verdict(out)
