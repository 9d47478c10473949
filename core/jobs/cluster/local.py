"""A two-node Ray cluster on one machine, for trying the cluster backend, for its tests and its benchmarks.

Ray refuses a second node on loopback and swaps 127.0.0.1 for the machine's own interface address, so each node
runs in its own network namespace (``ip netns``, as root), joined by a veth pair with private addresses. Nothing
leaves the machine. A third veth pair joins this machine's own namespace to the head's, so a browser here reaches
an app served inside. Clients (the app, the command line) run inside the head's namespace: ``exec`` below.

Several such clusters run at once (a developer's ``make cluster``, a test run, another checkout's): each takes a
free slot K, handed out under a lock in ``/run/onnx-workbench-clusters`` (each claim names the cluster's folder),
and the slot gives it its own namespaces (``wbK-head``, ``wbK-node2``), links and addresses: the head at
10.78.2K.1, the second node at 10.78.2K.2, this machine at 10.78.2K+1.1 and the head's namespace, as it sees it, at
10.78.2K+1.2. A cluster's folder is its identity: starting it again restarts it, in the same slot if it is free.

Every node runs with Ray's token authentication: the token is made once, in the cluster's folder (``auth_token``,
mode 0600), and every node and client is given the file's path (never the token: not on a command line, not in a
log). Each node is started under its own session (setsid) and stopped by killing that session's processes, which
is also how a test pulls the plug on a node like a real host. Every node is named as a target by a custom resource
(``workbench-target:NAME``) and keeps its data (file cache, locks, job folders) in its own folder.

    python -m core.jobs.cluster.local start|stop|status|kill NAME|exec -- COMMAND...|serve --port PORT
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil

from core.errors import TargetError
from core.i18n import _
from core.jobs.cluster import auth
from core.settings import PROJECT_ROOT

__all__ = [
    "DEFAULT_ROOT",
    "HEAD",
    "NODE2",
    "LocalCluster",
    "Slot",
    "cut_off",
    "find",
    "kill_node",
    "restart_node",
    "start",
    "status",
    "stop",
]

HEAD, NODE2 = "head", "node2"
NAMES = (HEAD, NODE2)
PORT = 6391
_CHECKOUT = hashlib.sha256(str(PROJECT_ROOT).encode()).hexdigest()[:8]
DEFAULT_ROOT = Path(f"/tmp/wbc-{_CHECKOUT}")  # this checkout's: short, Ray's socket paths live under it
REGISTRY = Path("/run/onnx-workbench-clusters")  # the slots' claims; /run is emptied at boot, as namespaces are
SLOTS = 64
OBJECT_STORE_BYTES = 256 << 20
READY_S = 90.0
HEALTH_CHECKS = {
    "RAY_health_check_period_ms": "1000",
    "RAY_health_check_timeout_ms": "1000",
    "RAY_health_check_failure_threshold": "3",
}


@dataclass(frozen=True)
class Slot:
    """One cluster's place on this machine: its namespaces, links and addresses."""

    number: int

    def namespace(self, name: str) -> str:
        return f"wb{self.number}-{name}"

    def ip(self, name: str) -> str:
        return f"10.78.{2 * self.number}.{1 if name == HEAD else 2}"

    @property
    def app_ip(self) -> str:
        """The head's namespace as this machine reaches it (where ``serve`` listens)."""
        return f"10.78.{2 * self.number + 1}.2"

    @property
    def links(self) -> tuple[tuple[str, str | None, str, str | None], ...]:
        """(end, its node or None: this machine, other end, its node), with the addresses in ``address_of``."""
        k = self.number
        return ((f"wb{k}h0", HEAD, f"wb{k}n0", NODE2), (f"wb{k}r0", None, f"wb{k}h1", HEAD))

    def address_of(self, end: str) -> str:
        k, kind = self.number, end.removeprefix(f"wb{self.number}")
        subnet = f"10.78.{2 * k}" if kind in ("h0", "n0") else f"10.78.{2 * k + 1}"
        return f"{subnet}.{1 if kind in ('h0', 'r0') else 2}/24"

    def link_of(self, name: str) -> str:
        return f"wb{self.number}{'h0' if name == HEAD else 'n0'}"


@dataclass(frozen=True)
class LocalCluster:
    """A running local cluster: its folder and its slot (its address, reachable from the head's namespace)."""

    root: Path
    slot: Slot

    @property
    def address(self) -> str:
        return f"{self.slot.ip(HEAD)}:{PORT}"

    @property
    def app_address(self) -> str:
        return self.slot.app_ip

    @property
    def token_file(self) -> Path:
        return self.root / "auth_token"

    def data_dir(self, name: str) -> Path:
        return self.root / name / "data"

    def client_env(self) -> dict[str, str]:
        """What a client of this cluster adds to its environment: the address, and where the token is."""
        return {"WORKBENCH_CLUSTER_ADDRESS": self.address, **auth.node_environment(self.token_file)}

    def in_namespace(self, command: list[str], name: str = HEAD) -> list[str]:
        """``command`` run inside node ``name``'s network namespace (the head's: where the cluster is reached)."""
        return ["ip", "netns", "exec", self.slot.namespace(name), *command]


def _ip(*args: str, check: bool = True) -> None:
    subprocess.run(["ip", *args], check=check, capture_output=True)


def _network(slot: Slot) -> None:
    """The slot's namespaces and links, made afresh."""
    _teardown_network(slot)
    for name in NAMES:
        _ip("netns", "add", slot.namespace(name))
        _ip("-n", slot.namespace(name), "link", "set", "lo", "up")
    for end_a, node_a, end_b, node_b in slot.links:
        _ip("link", "add", end_a, "type", "veth", "peer", "name", end_b)
        for end, node in ((end_a, node_a), (end_b, node_b)):
            where = [] if node is None else ["-n", slot.namespace(node)]
            if node is not None:
                _ip("link", "set", end, "netns", slot.namespace(node))
            _ip(*where, "addr", "add", slot.address_of(end), "dev", end)
            _ip(*where, "link", "set", end, "up")


def _teardown_network(slot: Slot) -> None:
    for name in NAMES:
        _ip("netns", "del", slot.namespace(name), check=False)  # its links go with it
    _ip("link", "del", slot.links[1][0], check=False)


# -- slots: which cluster (folder) holds which --------------------------------------------------------------------
@contextlib.contextmanager
def _registry() -> Iterator[Path]:
    """The slots' folder, locked for the caller (handing out and giving back slots is quick)."""
    REGISTRY.mkdir(mode=0o700, parents=True, exist_ok=True)
    with (REGISTRY / ".lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield REGISTRY


def _record(root: Path) -> dict[str, int]:
    try:
        data = json.loads((root / "cluster.json").read_text())
        return {"slot": int(data["slot"]), "pid": int(data["pid"]), "hold": int(data.get("hold", 0))}
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def _alive(pid: int) -> bool:
    return pid > 0 and psutil.pid_exists(pid)


def _abandoned(owner: Path, number: int) -> bool:
    """Whether the cluster in ``owner`` no longer holds slot ``number``: its record names no such slot, or none of
    its nodes runs and the process that started (or holds) it is gone."""
    record = _record(owner)
    if record.get("slot") != number:
        return True
    return not any(status(owner).values()) and not _alive(record["pid"])


def _claim(root: Path, earlier: int | None, hold: bool) -> Slot:
    """A free slot for the cluster in ``root`` (``earlier`` when it is free), taken from an abandoned cluster if
    need be; TargetError when every slot is held. ``hold``: this process keeps it (see ``start``)."""
    with _registry() as registry:
        order = [earlier] if earlier is not None and 0 <= earlier < SLOTS else []
        for number in [*order, *(k for k in range(SLOTS) if k != earlier)]:
            claim = registry / str(number)
            owner = Path(claim.read_text()) if claim.is_file() else None
            if owner is None or owner == root or _abandoned(owner, number):
                _teardown_network(Slot(number))  # whatever an abandoned cluster left
                claim.write_text(str(root))
                record = {"slot": number, "pid": os.getpid(), "hold": int(hold)}
                (root / "cluster.json").write_text(json.dumps(record))
                return Slot(number)
        held = ", ".join(sorted({p.read_text() for p in registry.glob("[0-9]*")}))
    raise TargetError(
        _(
            "All {slots} local cluster slots of this machine are taken (by the clusters in "
            "{held}); stop one with `python -m core.jobs.cluster.local stop --root FOLDER` "
            "(`make cluster-stop` for this checkout's)."
        ).format(slots=SLOTS, held=held)
    )


def _release(root: Path) -> None:
    """Give back the slot ``root``'s cluster holds, with its namespaces and links (not one someone took since)."""
    number = _record(root).get("slot")
    if number is None:
        return
    with _registry() as registry:
        claim = registry / str(number)
        if claim.is_file() and Path(claim.read_text()) == root:
            _teardown_network(Slot(number))
            claim.unlink()
    (root / "cluster.json").unlink(missing_ok=True)


def find(root: Path = DEFAULT_ROOT) -> LocalCluster | None:
    """The cluster whose folder is ``root``, if it holds a slot."""
    number = _record(root).get("slot")
    return LocalCluster(root, Slot(number)) if number is not None else None


# -- nodes ---------------------------------------------------------------------------------------------------------
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


def _start_node(cluster: LocalCluster, name: str, python: str) -> subprocess.Popen[bytes]:
    folder = cluster.root / name
    (folder / "data").mkdir(parents=True, exist_ok=True)
    head = name == HEAD
    ray = [python, "-c", "import sys; from ray.scripts.scripts import main; sys.exit(main())", "start"]
    where = ["--head", f"--port={PORT}"] if head else [f"--address={cluster.address}"]
    command = [
        *ray,
        *where,
        f"--node-ip-address={cluster.slot.ip(name)}",
        f"--resources={json.dumps({f'workbench-target:{name}': 1})}",
        "--num-cpus=2",
        f"--object-store-memory={OBJECT_STORE_BYTES}",
        "--disable-usage-stats",
        "--block",
    ]
    if head:
        command += ["--include-dashboard=false", f"--temp-dir={folder / 'ray'}"]
    env = {k: v for k, v in os.environ.items() if k != auth.TOKEN}  # the file below is the token, not a variable
    env |= {
        "PYTHONPATH": str(PROJECT_ROOT),
        "WORKBENCH_DATA_DIR": str(folder / "data"),
        "RAY_USAGE_STATS_ENABLED": "0",
        # a node that stops answering is declared dead after about 3 s (Ray's default waits about 15 s)
        **HEALTH_CHECKS,
        **auth.node_environment(cluster.token_file),
    }
    log = (folder / "node.log").open("wb")
    proc = subprocess.Popen(
        cluster.in_namespace(command, name),
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
    root: Path = DEFAULT_ROOT, python: str = sys.executable, names: tuple[str, ...] = NAMES, *, hold: bool = False
) -> LocalCluster:
    """Start the cluster in ``root`` afresh (anything left of an earlier one there is stopped first, its nodes'
    caches emptied) in a free slot; needs root and ``ip``. ``hold``: this process uses it (a test run) and no
    other may restart it meanwhile. TargetError when another live process holds it."""
    record = _record(root)
    if record.get("hold") and _alive(record["pid"]) and record["pid"] != os.getpid():
        raise TargetError(
            _(
                "The local cluster in {root} is in use by process {pid} (a test run?); wait for it "
                "to end, or stop it with `python -m core.jobs.cluster.local stop --root {root}`."
            ).format(root=root, pid=record["pid"])
        )
    stop(root)
    for name in names:
        shutil.rmtree(root / name, ignore_errors=True)
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    auth.make_token_file(root / "auth_token")
    cluster = LocalCluster(root, _claim(root, record.get("slot"), hold))
    try:
        _network(cluster.slot)
        for name in names:
            _wait_started(root, name, _start_node(cluster, name, python))
    except BaseException:
        stop(root)
        raise
    return cluster


def cut_off(cluster: LocalCluster, name: str, connected: bool = False) -> None:
    """Take node ``name``'s link down (its processes live on, unreachable, as behind a failed switch), or up again."""
    _ip("-n", cluster.slot.namespace(name), "link", "set", cluster.slot.link_of(name), "up" if connected else "down")


def restart_node(cluster: LocalCluster, name: str, python: str = sys.executable) -> None:
    """Start node ``name`` afresh (killed first if it runs; its link up)."""
    kill_node(name, cluster.root)
    cut_off(cluster, name, connected=True)
    _wait_started(cluster.root, name, _start_node(cluster, name, python))


def stop(root: Path = DEFAULT_ROOT) -> None:
    """Stop every node (second nodes first) and give back the slot with its namespaces and links; safe to call at
    any time."""
    for name in (NODE2, HEAD):
        kill_node(name, root, signal.SIGTERM)
    deadline = time.monotonic() + 2.0  # then the rest is killed
    while time.monotonic() < deadline and any(status(root).values()):
        time.sleep(0.1)
    for name in (NODE2, HEAD):
        kill_node(name, root)
    _release(root)


def status(root: Path = DEFAULT_ROOT) -> dict[str, int]:
    """How many processes each node runs (0: stopped)."""
    return {name: len(_session_pids(leader)) if (leader := _leader(root, name)) else 0 for name in NAMES}


def _running(root: Path) -> LocalCluster:
    cluster = find(root)
    if cluster is None or not status(root)[HEAD]:
        raise TargetError(_("No local cluster runs in {root}: start it with `make cluster`.").format(root=root))
    return cluster


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m core.jobs.cluster.local", description=__doc__.split("\n")[0])
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT, help=f"the cluster's folder ({DEFAULT_ROOT})")
    actions = parser.add_subparsers(dest="action", required=True)
    actions.add_parser("start", help="start the cluster afresh (restart it when it runs)")
    actions.add_parser("stop", help="stop its nodes and remove its namespaces")
    actions.add_parser("status", help="its slot, address and how many processes each node runs, as JSON")
    kill = actions.add_parser("kill", help="kill a node like a host losing power")
    kill.add_argument("name", nargs="?", default=NODE2)
    run = actions.add_parser("exec", help="run a command in the head's namespace as a client of the cluster")
    run.add_argument("command", nargs=argparse.REMAINDER)
    serve = actions.add_parser("serve", help="serve the app in the head's namespace, joined to the cluster")
    serve.add_argument("--port", type=int, default=8501)
    args = parser.parse_args(argv)
    try:
        return _act(args)
    except TargetError as exc:
        print(exc, file=sys.stderr)
        return 2


def _act(args: argparse.Namespace) -> int:
    if args.action == "start":
        cluster = start(args.root)
        print(f"Ray cluster at {cluster.address} (token authentication; its token: {cluster.token_file}), ", end="")
        print(f"targets {HEAD} ({cluster.slot.ip(HEAD)}) and {NODE2} ({cluster.slot.ip(NODE2)})")
        print("clients: python -m core.jobs.cluster.local exec -- COMMAND; the app: make cluster-run, at ", end="")
        print(f"http://{cluster.app_address}:8501")
    elif args.action == "stop":
        stop(args.root)
    elif args.action == "kill":
        print(f"killed {kill_node(args.name, args.root)} processes of {args.name}")
    elif args.action == "status":
        found = find(args.root)
        where = {"address": found.address, "app": found.app_address, "slot": found.slot.number} if found else {}
        print(json.dumps({"root": str(args.root), **where, "nodes": status(args.root)}))
    else:
        cluster = _running(args.root)
        command = getattr(args, "command", [])
        command = command[1:] if command[:1] == ["--"] else command
        if args.action == "serve":
            command = [sys.executable, "-m", "core", "serve", "--port", str(args.port)]
            command += ["--address", cluster.app_address]
        if not command:
            raise TargetError(_("exec needs a command: python -m core.jobs.cluster.local exec -- COMMAND..."))
        env = {k: v for k, v in os.environ.items() if k != auth.TOKEN} | cluster.client_env()
        os.execvpe("ip", cluster.in_namespace(command), env)
    return 0


if __name__ == "__main__":
    sys.exit(main())
