"""Where a session's jobs run: "this server", or a target of the Ray cluster the settings name (cluster_address).

The sidebar's picker sets it for the session; Benchmark, Profile, Quantize and Partition send their jobs there
(the rest, such as reading an upload or exporting, always run here). A cluster that cannot be reached leaves
every job here, with a warning; a target that is gone stays in the list, marked gone, and says so if picked.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from core.errors import TargetError
from core.i18n import _, ngettext
from core.jobs import Backend, Job
from core.jobs.cluster.client import LOCAL, Cluster, Target, connect
from ui import session
from ui.text import md_escape

__all__ = ["backend_for", "chosen", "cores", "picker", "providers"]

RETRY_S = 30  # how long a cluster that could not be reached is left alone before the next try
KEY = "run_target"
HARDWARE_WAIT_S = 5.0  # how long a page waits for a new node to describe itself (then shows it next time)


@st.cache_resource(ttl=RETRY_S)
def _cluster(address: str) -> tuple[Cluster | None, str]:
    """The joined cluster, or why not; one per server (it holds no user's data). Kept for ``RETRY_S`` seconds
    when it failed, so a cluster that comes up later is found; a joined one stays joined."""
    try:
        return connect(address), ""
    except TargetError as exc:
        return None, str(exc)


def cluster() -> tuple[Cluster | None, str]:
    address = session.settings().cluster_address
    return _cluster(address) if address else (None, "")


def _targets() -> list[Target]:
    joined, _ = cluster()
    if joined is None:
        return []
    try:
        return joined.targets(wait_s=HARDWARE_WAIT_S)
    except Exception:  # Ray's own errors while the head is lost: no targets to offer
        return []


def chosen() -> str:
    """The session's target; "this server" unless the user picked one."""
    return str(st.session_state.get(KEY, LOCAL))


def _target(name: str) -> Target | None:
    return next((t for t in _targets() if t.name == name), None) if name != LOCAL else None


def backend_for(job: Job[Any, Any]) -> Backend:
    """The backend ``job`` runs on for this session: the chosen target's for the jobs that may run on one."""
    name = chosen()
    joined, why = cluster()
    if not job.targeted or name == LOCAL:
        return session.backend()
    if joined is None:
        raise TargetError(_("The target “{name}” cannot be used: {why}").format(name=name, why=why))
    try:
        return joined.backend(name, session.settings())
    except TargetError:
        raise
    except Exception as exc:  # Ray's own errors when the cluster's head is lost
        raise TargetError(
            _("The Ray cluster at {address} does not answer ({error}); pick “this server” to run here.").format(
                address=joined.address, error=exc
            )
        ) from exc


def providers() -> list[str] | None:
    """The execution providers of the chosen target's onnxruntime (None: this server's)."""
    target = _target(chosen())
    return target.providers if target is not None and target.hardware is not None else None


def cores() -> int | None:
    """The chosen target's logical cores (None: this server's)."""
    target = _target(chosen())
    return int(target.hardware.logical_cores) if target is not None and target.hardware is not None else None


def _label(targets: dict[str, Target]) -> Any:
    def label(name: str) -> str:
        target = targets.get(name)
        return name if target is None or target.alive else _("{name} (gone)").format(name=name)

    return label


def picker() -> None:
    """The sidebar's "Run on" select, with the chosen target's hardware; nothing when no cluster is set."""
    if not session.settings().cluster_address:
        return
    joined, why = cluster()
    if joined is None:
        st.sidebar.warning(md_escape(why, 600) + " " + _("Jobs run on this server."))
        return
    if joined.insecure:
        st.sidebar.warning(
            _(
                "The Ray cluster at {address} is used without token authentication (`cluster_insecure`): anyone "
                "who reaches it can run code on its nodes."
            ).format(address=md_escape(joined.address, 200))
        )
    targets = {t.name: t for t in _targets()}
    options = [LOCAL, *targets]
    if chosen() not in options:
        st.session_state[KEY] = LOCAL
    name = st.sidebar.selectbox(
        _("Run on"),
        options,
        key=KEY,
        format_func=_label(targets),
        help=_(
            "Benchmark, Profile, Quantize and Partition run on this target of the Ray cluster; benchmarks wait only "
            "for others on the same target."
        ),
    )
    target = targets.get(name)
    if target is None:
        return
    if not target.alive:
        st.sidebar.warning(
            _("The target '{name}' is gone from the cluster: pick another one.").format(name=md_escape(name, 200))
        )
    elif target.hardware is not None:
        shown = ", ".join(p.removesuffix("ExecutionProvider") for p in target.providers)
        many = ngettext("{count} GPU", "{count} GPUs", target.gpus).format(count=target.gpus)
        gpus = f", {many}" if target.gpus and not target.hardware.gpus else ""
        providers = _("providers: {names}").format(names=shown)
        st.sidebar.caption(md_escape(f"{target.hardware.summary}{gpus}; {providers}", 600))
