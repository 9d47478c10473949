"""The app's and the command line's side of the cluster: connect, list the targets, send a job to one.

A target is a node of the Ray cluster, named by a custom resource ``workbench-target:NAME`` given when the node
was started (``ray start --resources '{"workbench-target:gpu-a100": 1}'``); a node without one is named after
its address. On each target the client starts its own agent (core.jobs.cluster.agent) when it first needs it; the
agent dies with the client. ``Cluster.backend(name)`` is a ``Backend`` like the local one: the same jobs, handles
and errors.

A client joins only a cluster that uses Ray's token authentication, holding its token (core.jobs.cluster.auth),
unless the operator set ``cluster_insecure``; then ``Cluster.insecure`` says so, and the pages and the command line
warn.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import socket
import threading
import time
from dataclasses import dataclass
from subprocess import Popen
from typing import Any

from core.errors import JobError, TargetError
from core.extras import require
from core.i18n import _
from core.jobs.cluster import auth
from core.jobs.cluster.agent import POLICY
from core.jobs.process import JobHandle, JobSpec
from core.jobs.registry import JOBS, JobRegistry
from core.settings import Settings, load_settings

__all__ = ["LOCAL", "Cluster", "Target", "TargetBackend", "connect", "connected"]

LOCAL = "this server"  # what the pages and the command line call the app's own machine
RESOURCE = "workbench-target:"
NAMESPACE = "workbench"
CONNECT_TIMEOUT_S = 3.0
HARDWARE_TIMEOUT_S = 60.0  # a node's first agent imports onnxruntime on a busy machine

_connected: dict[str, Cluster] = {}
_connect_lock = threading.Lock()


@dataclass(frozen=True, kw_only=True)
class Target:
    """A node jobs can be sent to, as the user picks it."""

    name: str
    node_id: str
    address: str
    alive: bool
    hardware: Any = None  # core.runtime.hardware.Hardware, from the job cluster.hardware run on the node
    gpus: int = 0  # GPUs Ray found on the node (a sandboxed worker does not see them to list them itself)

    @property
    def status(self) -> str:
        return "alive" if self.alive else "gone"

    @property
    def providers(self) -> list[str]:
        return list(self.hardware.providers) if self.hardware else []


def _name_of(node: dict[str, Any]) -> str:
    for resource in node.get("Resources", {}):
        if resource.startswith(RESOURCE):
            return str(resource.removeprefix(RESOURCE))
    return f"node-{node.get('NodeManagerAddress', '?')}"


def _reachable(address: str, timeout: float) -> str:
    """Why ``address`` (host:port, or ray://host:port) cannot be reached, or "" when a connection opens."""
    if address in ("auto", "local"):
        return ""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout):
            return ""
    except ValueError:
        return f"'{address}' is not host:port"
    except OSError as exc:
        return str(exc) or type(exc).__name__


def connect(address: str, timeout: float = CONNECT_TIMEOUT_S, insecure: bool | None = None) -> Cluster:
    """The cluster at ``address`` (one connection per process); TargetError when it cannot be reached, or when this
    process has no token for it or it lets clients in without one, unless ``insecure`` (by default the setting
    ``cluster_insecure``)."""
    with _connect_lock:
        if address in _connected:
            return _connected[address]
        require("cluster", "ray", f"The Ray cluster at {address} (cluster_address)")
        why = _reachable(address, timeout)
        if why:
            raise TargetError(
                _(
                    "The Ray cluster at {address} cannot be reached ({why}). Check that it runs and that "
                    "cluster_address (WORKBENCH_CLUSTER_ADDRESS) names its head, or leave it empty to "
                    "run on this server."
                ).format(address=address, why=why)
            )
        allowed = load_settings().cluster_insecure if insecure is None else insecure
        has_token, probe = _check_token(address, allowed)
        import ray

        if not ray.is_initialized():
            try:
                ray.init(address=address, namespace=NAMESPACE, logging_level=logging.ERROR, log_to_driver=False)
            except Exception as exc:  # Ray raises ConnectionError, RuntimeError, ValueError… depending on the cause
                if probe is not None:
                    auth.stop_probe(probe)
                raise TargetError(
                    _("Could not join the Ray cluster at {address}: {scrub}").format(
                        address=address, scrub=auth.scrub(str(exc))
                    )
                ) from exc
        let_through = auth.let_through(probe) if probe is not None else not has_token
        if let_through is not False and not allowed:
            ray.shutdown()
            raise TargetError(_open_cluster(address, let_through))
        _connected[address] = cluster = Cluster(address, insecure=let_through is not False)
        return cluster


def _probeable(address: str) -> bool:
    """Whether ``address`` names a head's GCS (host:port), which can be asked without a token."""
    return not address.startswith("ray://") and address not in ("auto", "local")


def _check_token(address: str, insecure: bool) -> tuple[bool, Popen[str] | None]:
    """Whether this process holds a token the cluster accepts, and the probe without a token, under way (None for
    an address that cannot be probed). Refuses at once what would fail: a wrong token, or none for a cluster
    that requires one."""
    try:
        auth.client_token()
        has_token = True
    except TargetError:
        if not insecure:
            raise
        has_token = False
    if not _probeable(address):
        return has_token, None
    probe = auth.probe_without_token(address)
    if has_token and auth.token_accepted(address) is False:
        auth.stop_probe(probe)
        raise TargetError(
            _(
                "The Ray cluster at {address} refuses this process's token: give it the token the "
                "cluster's nodes were started with ({token_path} names the file it is read from)."
            ).format(address=address, token_path=auth.TOKEN_PATH)
        )
    if not has_token and auth.let_through(probe) is False:
        raise TargetError(
            _(
                "The Ray cluster at {address} requires its token: set {mode}=token and {token_path} "
                "to a file holding it."
            ).format(address=address, mode=auth.MODE, token_path=auth.TOKEN_PATH)
        )
    return has_token, None if not has_token else probe


def _open_cluster(address: str, let_through: bool | None) -> str:
    found = "lets in clients without a token" if let_through else "could not be shown to refuse clients without one"
    return (
        f"The Ray cluster at {address} {found}: anyone who reaches its port could run code on its nodes. Start "
        f"every node with {auth.MODE}=token and the cluster's token (docs/cluster.md: Who may use the cluster), or set "
        "cluster_insecure (WORKBENCH_CLUSTER_INSECURE=true) to use it all the same."
    )


def connected() -> Cluster | None:
    """The cluster this process joined, if any."""
    return next(iter(_connected.values()), None)


class Cluster:
    """A joined Ray cluster: its targets, and a backend per target."""

    def __init__(self, address: str, registry: JobRegistry = JOBS, *, insecure: bool = False) -> None:
        self.address = address
        self.insecure = insecure  # joined without token authentication, as cluster_insecure allowed
        self.registry = registry
        self._hardware: dict[str, Any] = {}
        self._asking: dict[str, JobHandle] = {}  # node id -> its cluster.hardware job, while it runs
        self._names: dict[str, str] = {}  # node id -> target name: a lost node's resources are no longer listed
        self._agents: dict[str, Any] = {}
        self._lock = threading.Lock()

    def targets(self, hardware: bool = True, wait_s: float = HARDWARE_TIMEOUT_S) -> list[Target]:
        """Every node the cluster knows, alive or gone (Ray remembers lost nodes for a while), by name; with
        ``hardware``, what each is made of, waiting up to ``wait_s`` for nodes not yet described (the pages
        wait little: a node still describing itself is shown without its hardware, and with it next time)."""
        import ray

        found: dict[str, Target] = {}
        for node in ray.nodes():
            node_id, alive = str(node["NodeID"]), bool(node.get("Alive"))
            name = self._name(node, node_id, alive)
            if name in found and found[name].alive and not alive:
                continue  # a node that came back under the same name: the live one wins
            gpus = int(node.get("Resources", {}).get("GPU", 0))
            found[name] = Target(
                name=name, node_id=node_id, address=str(node.get("NodeManagerAddress", "")), alive=alive, gpus=gpus
            )
        targets = sorted(found.values(), key=lambda t: t.name)
        if hardware:
            described = self._describe([t for t in targets if t.alive], time.monotonic() + wait_s)
            targets = [dataclasses.replace(t, hardware=described.get(t.node_id)) for t in targets]
        return targets

    def _name(self, node: dict[str, Any], node_id: str, alive: bool) -> str:
        """A node's target name. A lost node no longer lists its resources, so the names of live ones are kept
        in the cluster's own key-value store, where every client (a restarted app too) finds them."""
        from ray.experimental import internal_kv

        if node_id not in self._names:
            if alive:
                self._names[node_id] = _name_of(node)
                internal_kv._internal_kv_put(node_id, self._names[node_id], namespace=NAMESPACE)
            else:
                kept = internal_kv._internal_kv_get(node_id, namespace=NAMESPACE)
                return kept.decode() if kept else _name_of(node)
        return self._names[node_id]

    def target(self, name: str) -> Target:
        """The live target called ``name``; TargetError naming the others when there is none."""
        targets = self.targets(hardware=False)
        for target in targets:
            if target.name == name:
                if not target.alive:
                    raise TargetError(
                        _("The target '{name}' is gone from the cluster; pick another one.").format(name=name)
                    )
                return target
        names = ", ".join(t.name for t in targets if t.alive) or "none"
        raise TargetError(
            _("There is no target called '{name}' in the cluster at {address}; targets: {names}.").format(
                name=name, address=self.address, names=names
            )
        )

    def _describe(self, alive: list[Target], deadline: float) -> dict[str, Any]:
        """Each node's hardware (by node id), from the job ``cluster.hardware`` run there once, all at once."""
        from core.jobs.process import submit
        from core.jobs.registry import HARDWARE
        from core.runtime.hardware import HardwareRequest

        with self._lock:
            for target in alive:
                if target.node_id not in self._hardware and target.node_id not in self._asking:
                    with contextlib.suppress(TargetError, JobError):
                        backend = TargetBackend(self, target)
                        self._asking[target.node_id] = submit(HARDWARE, HardwareRequest(), backend).handle
        for node_id, handle in list(self._asking.items()):
            try:
                self._hardware[node_id] = handle.result(max(0.0, deadline - time.monotonic()))
            except TimeoutError:
                continue  # asked again next time
            except (TargetError, JobError):
                pass  # lost while asked: shown without hardware, and as gone once Ray notices
            self._asking.pop(node_id, None)
        return dict(self._hardware)

    def agent(self, target: Target) -> Any:
        """This client's agent on ``target``'s node, started there when first needed. Unnamed and owned by this
        client (it dies with it): a handle to an actor someone else made would be built by unpickling its class."""
        with self._lock:
            if target.node_id not in self._agents:
                import ray
                from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

                from core.jobs.cluster.agent import TargetAgent

                self._agents[target.node_id] = (
                    ray.remote(TargetAgent)
                    .options(
                        num_cpus=0,
                        max_concurrency=64,
                        scheduling_strategy=NodeAffinitySchedulingStrategy(target.node_id, soft=False),
                    )
                    .remote(target.name)
                )
            return self._agents[target.node_id]

    def forget_agent(self, target: Target) -> None:
        with self._lock:
            self._agents.pop(target.node_id, None)

    def backend(self, name: str, settings: Settings | None = None) -> TargetBackend:
        """Target ``name``'s backend, for jobs under ``settings``' limits (this process's settings by default)."""
        return TargetBackend(self, self.target(name), settings)


class TargetBackend:
    """Runs jobs on one target of the cluster, like ``ProcessBackend`` runs them here."""

    def __init__(self, cluster: Cluster, target: Target, settings: Settings | None = None) -> None:
        self.cluster = cluster
        self.target = target
        self.registry = cluster.registry
        # this app's limits travel with its jobs (core.jobs.cluster.agent.POLICY)
        mine = settings or load_settings()
        self.policy = {name: getattr(mine, name) for name in POLICY} | {"require_sandbox": mine.require_sandbox}

    def submit(self, spec: JobSpec) -> JobHandle:
        from core.jobs.cluster.job import ClusterJob

        return ClusterJob(self, spec)
