"""A two-node Ray cluster on one machine, for trying the cluster backend, for its tests and its benchmarks.

Ray refuses a second node on loopback and swaps 127.0.0.1 for the machine's own interface address, so each node
runs in its own network namespace (``ip netns``, as root), joined by a veth pair with private addresses: the
head at 10.78.0.1, the second node at 10.78.0.2. Nothing leaves the machine. A third veth pair joins this
machine's own namespace (10.78.1.1) to the head's (10.78.1.2), so a browser here reaches an app served inside.
Clients (the app, the command line) run inside the head's namespace: ``ip netns exec wb-head ...``.

Each node is started under its own session (setsid) and stopped by killing that session's processes, which is
also how a test pulls the plug on a node like a real host. Every node is named as a target by a custom resource
(``workbench-target:NAME``) and keeps its data (file cache, locks, job folders) in its own folder.

    python -m core.jobs.cluster.local start|stop|status|kill NAME
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from core.settings import PROJECT_ROOT

__all__ = [
    "ADDRESS",
    "HEAD",
    "NODE2",
    "LocalCluster",
    "cut_off",
    "in_head",
    "kill_node",
    "restart_node",
    "start",
    "status",
    "stop",
]

HEAD, NODE2 = "head", "node2"
PORT = 6391
ADDRESS = f"10.78.0.1:{PORT}"
APP_ADDRESS = "10.78.1.2"  # the head's namespace, as this machine reaches it
NAMESPACES = {HEAD: "wb-head", NODE2: "wb-node2"}
_IPS = {HEAD: "10.78.0.1", NODE2: "10.78.0.2"}
_LINKS = (("wbh0", HEAD, "wbn0", NODE2), ("wbr0", None, "wbh1", HEAD))  # (end, its namespace or None: here) ×2
_ROOT_IPS = {"wbh0": "10.78.0.1/24", "wbn0": "10.78.0.2/24", "wbr0": "10.78.1.1/24", "wbh1": "10.78.1.2/24"}
DEFAULT_ROOT = Path("/tmp/wb-cluster")
OBJECT_STORE_BYTES = 256 << 20
READY_S = 90.0
HEALTH_CHECKS = {
    "RAY_health_check_period_ms": "1000",
    "RAY_health_check_timeout_ms": "1000",
    "RAY_health_check_failure_threshold": "3",
}


@dataclass(frozen=True)
class LocalCluster:
    """A running local cluster: its address (reachable from the head's namespace) and its folder."""

    address: str
    root: Path

    def data_dir(self, name: str) -> Path:
        return self.root / name / "data"


def in_head(command: list[str]) -> list[str]:
    """``command`` run inside the head's network namespace, where the cluster can be reached."""
    return ["ip", "netns", "exec", NAMESPACES[HEAD], *command]


def _ip(*args: str, check: bool = True) -> None:
    subprocess.run(["ip", *args], check=check, capture_output=True)


def _network() -> None:
    """The namespaces and links, made afresh."""
    _teardown_network()
    for ns in NAMESPACES.values():
        _ip("netns", "add", ns)
        _ip("-n", ns, "link", "set", "lo", "up")
    for end_a, ns_a, end_b, ns_b in _LINKS:
        _ip("link", "add", end_a, "type", "veth", "peer", "name", end_b)
        for end, owner in ((end_a, ns_a), (end_b, ns_b)):
            where = [] if owner is None else ["-n", NAMESPACES[owner]]
            if owner is not None:
                _ip("link", "set", end, "netns", NAMESPACES[owner])
            _ip(*where, "addr", "add", _ROOT_IPS[end], "dev", end)
            _ip(*where, "link", "set", end, "up")


def _teardown_network() -> None:
    for ns in NAMESPACES.values():
        _ip("netns", "del", ns, check=False)  # its links go with it
    _ip("link", "del", "wbr0", check=False)


def _session_pids(leader: int) -> list[int]:
    pids = []
    for proc in psutil.process_iter():
        with contextlib.suppress(psutil.Error, OSError):
            if os.getsid(proc.pid) == leader:
                pids.append(proc.pid)
    return pids


def _leader(root: Path, name: str) -> int | None:
    try:
        return int((root / name / "session").read_text())
    except (OSError, ValueError):
        return None


def kill_node(name: str, root: Path = DEFAULT_ROOT, sig: int = signal.SIGKILL) -> int:
    """Send ``sig`` to every process of node ``name`` at once (SIGKILL: like a host losing power); how many
    there were. After SIGKILL the node is forgotten."""
    leader = _leader(root, name)
    pids = _session_pids(leader) if leader is not None else []
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
    if sig == signal.SIGKILL:
        (root / name / "session").unlink(missing_ok=True)
    return len(pids)


def _start_node(root: Path, name: str, python: str) -> subprocess.Popen[bytes]:
    folder = root / name
    (folder / "data").mkdir(parents=True, exist_ok=True)
    head = name == HEAD
    ray = [python, "-c", "import sys; from ray.scripts.scripts import main; sys.exit(main())", "start"]
    where = ["--head", f"--port={PORT}"] if head else [f"--address={ADDRESS}"]
    command = [
        *ray,
        *where,
        f"--node-ip-address={_IPS[name]}",
        f"--resources={json.dumps({f'workbench-target:{name}': 1})}",
        "--num-cpus=2",
        f"--object-store-memory={OBJECT_STORE_BYTES}",
        "--disable-usage-stats",
        "--block",
    ]
    if head:
        command += ["--include-dashboard=false", f"--temp-dir={folder / 'ray'}"]
    env = {
        **os.environ,
        "PYTHONPATH": str(PROJECT_ROOT),
        "WORKBENCH_DATA_DIR": str(folder / "data"),
        "RAY_USAGE_STATS_ENABLED": "0",
        # a node that stops answering is declared dead after about 3 s (Ray's default waits about 15 s)
        **HEALTH_CHECKS,
    }
    log = (folder / "node.log").open("wb")
    proc = subprocess.Popen(
        ["ip", "netns", "exec", NAMESPACES[name], *command],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,  # its own session: stopped, or killed like a host, by that session's pids
        cwd=folder,
    )
    (folder / "session").write_text(str(proc.pid))
    return proc


def _wait_started(root: Path, name: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + READY_S
    log = root / name / "node.log"
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace")
        if "Ray runtime started" in text:
            return
        if proc.poll() is not None:
            raise RuntimeError(f"the Ray node {name!r} exited while starting:\n{text[-3000:]}")
        time.sleep(0.2)
    raise RuntimeError(f"the Ray node {name!r} did not start within {READY_S:g} s; see {log}")


def start(
    root: Path = DEFAULT_ROOT, python: str = sys.executable, names: tuple[str, ...] = (HEAD, NODE2)
) -> LocalCluster:
    """Start the cluster afresh (anything left of an earlier one is stopped first, its nodes' caches emptied);
    needs root and ``ip``."""
    stop(root)
    for name in names:
        shutil.rmtree(root / name, ignore_errors=True)
    _network()
    try:
        for name in names:
            _wait_started(root, name, _start_node(root, name, python))
    except BaseException:
        stop(root)
        raise
    return LocalCluster(ADDRESS, root)


def cut_off(name: str, connected: bool = False) -> None:
    """Take node ``name``'s link down (its processes live on, unreachable, as behind a failed switch), or up again."""
    link = {NODE2: "wbn0", HEAD: "wbh0"}[name]
    _ip("-n", NAMESPACES[name], "link", "set", link, "up" if connected else "down")


def restart_node(name: str, root: Path = DEFAULT_ROOT, python: str = sys.executable) -> None:
    """Start node ``name`` afresh (killed first if it runs; its link up)."""
    kill_node(name, root)
    cut_off(name, connected=True)
    _wait_started(root, name, _start_node(root, name, python))


def stop(root: Path = DEFAULT_ROOT) -> None:
    """Stop every node (second nodes first) and remove the namespaces and links; safe to call at any time."""
    for name in (NODE2, HEAD):
        kill_node(name, root, signal.SIGTERM)
    deadline = time.monotonic() + 2.0  # then the rest is killed
    while time.monotonic() < deadline and any(status(root).values()):
        time.sleep(0.1)
    for name in (NODE2, HEAD):
        kill_node(name, root)
    _teardown_network()


def status(root: Path = DEFAULT_ROOT) -> dict[str, int]:
    """How many processes each node runs (0: stopped)."""
    return {name: len(_session_pids(leader)) if (leader := _leader(root, name)) else 0 for name in (HEAD, NODE2)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m core.jobs.cluster.local", description=__doc__.split("\n")[0])
    parser.add_argument("action", choices=("start", "stop", "status", "kill"))
    parser.add_argument("name", nargs="?", default=NODE2, help="the node to kill (kill only)")
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT, help=f"the cluster's folder ({DEFAULT_ROOT})")
    args = parser.parse_args(argv)
    if args.action == "start":
        cluster = start(args.root)
        print(f"Ray cluster at {cluster.address}: targets {HEAD} ({_IPS[HEAD]}) and {NODE2} ({_IPS[NODE2]})")
        print(f"clients run in the head's namespace: ip netns exec {NAMESPACES[HEAD]} ...")
    elif args.action == "stop":
        stop(args.root)
    elif args.action == "kill":
        print(f"killed {kill_node(args.name, args.root)} processes of {args.name}")
    else:
        print(json.dumps(status(args.root)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
