"""What a session keeps: its workspace, its current model; and the process-wide settings and backend."""

from __future__ import annotations

import gc
import os
import secrets
import sys
import threading
import time
import uuid
from pathlib import Path

import streamlit as st
from streamlit.runtime import Runtime
from streamlit.runtime.scriptrunner import get_script_run_ctx

from core.errors import WorkbenchError
from core.i18n import _
from core.identity import ANONYMOUS, Identity
from core.jobs import SAMPLE, ProcessBackend, run
from core.model import ModelRecord, cards
from core.model.library import LibraryFull, ModelLibrary
from core.model.zoo import SampleRequest, check_start_sample
from core.runtime.runs import AnyRun
from core.settings import Settings, load_settings
from core.store import Store, open_history
from core.workspace import Workspace, sweep_closed_sessions, sweep_workspaces
from ui import language

__all__ = [
    "freeze_imports",
    "settings",
    "backend",
    "workspace",
    "current_model",
    "torch_model",
    "set_current_model",
    "small_onnx_model",
    "sample_record",
    "start",
    "who",
    "owner_token",
    "store",
    "saved_run",
    "page_param",
    "set_page_param",
]


_frozen_at = 0  # how many modules were imported at the last freeze
_freezing = threading.Lock()


def freeze_imports() -> None:
    """Take the objects of every module imported so far out of the garbage collector's walks (``gc.freeze``).

    Streamlit collects garbage after every script run (``runner.postScriptGC``), and a full collection walks
    every object the server holds: about 165,000 once the app is imported, a tenth of a CPU-second with the GIL
    held, per page run of every session (py-spy: a fifth of a classroom server's time). Modules live as long
    as the server, so after new ones were imported (a page opened for the first time) they are collected once
    and frozen, and each run's collection walks what the runs made. A frozen object is still freed when nothing
    refers to it; only a reference cycle alive at a freeze is never collected, and freezes stop once every page
    was opened."""
    global _frozen_at
    if len(sys.modules) == _frozen_at:
        return
    with _freezing:
        if len(sys.modules) != _frozen_at:
            gc.collect()
            gc.freeze()
            _frozen_at = len(sys.modules)


@st.cache_resource
def settings() -> Settings:
    """Read once per server process (restart the app to apply a change); a start sample that is no sample is
    refused here, as a setting out of its range is by load_settings."""
    found = load_settings()
    check_start_sample(found.start_sample)
    return found


@st.cache_resource
def sandbox() -> tuple[bool, str]:
    """Whether workers run in a sandbox here, and why not (checked once per server)."""
    from core.jobs.sandbox import sandbox_state

    return sandbox_state(settings())


@st.cache_resource
def backend() -> ProcessBackend:
    """The job backend; shared by every session because it holds no per-user state."""
    return ProcessBackend(settings(), warm=settings().warm_workers)


@st.cache_resource
def _server_token() -> str:
    """Marks the workspaces of this server process, so its sweeper never touches another server's."""
    return f"{os.getpid()}-{uuid.uuid4().hex}"


@st.cache_resource
def _closed_session_sweeper() -> threading.Thread:
    """One thread per server: removes a workspace once its browser session has gone.

    Streamlit keeps a closed tab's session for server.disconnectedSessionTTL seconds so that it can
    reconnect; after that grace its files are deleted.
    """
    root, owner = settings().workspace_root, _server_token()
    grace = float(st.get_option("server.disconnectedSessionTTL"))
    state: dict[str, float] = {}

    def loop() -> None:
        while Runtime.exists():
            runtime = Runtime.instance()
            sweep_closed_sessions(root, owner, runtime.is_active_session, grace, state)
            time.sleep(min(5.0, max(grace / 2, 0.5)))

    thread = threading.Thread(target=loop, name="workspace-sweeper", daemon=True)
    thread.start()
    return thread


def workspace() -> Workspace:
    """This session's folder; the first call per session also sweeps workspaces abandoned long ago."""
    ws = st.session_state.get("workspace")
    if ws is None or ws.closed:
        config = settings()
        sweep_workspaces(config.workspace_root, config.workspace_max_age_h * 3600)
        ctx = get_script_run_ctx()
        ws = Workspace.open(config.workspace_root, ctx.session_id if ctx else None, owner=_server_token())
        st.session_state["workspace"] = ws
        if Runtime.exists():
            _closed_session_sweeper()
    ws.touch()
    return ws


def current_model() -> ModelRecord | None:
    return st.session_state.get("model")


def small_onnx_model(max_nodes: int, max_bytes: int) -> ModelRecord | None:
    """The current model if it is ONNX and within these sizes, its nodes counted as ONNX Runtime runs it (local
    functions inlined, every subgraph); None otherwise, and for a record whose nodes were not counted so (one an
    earlier version kept): what a job may be started for unasked (a step offered next)."""
    record = current_model()
    if record is None or record.is_pytorch or record.runtime_nodes is None:
        return None
    return record if record.runtime_nodes <= max_nodes and record.size_bytes <= max_bytes else None


def torch_model() -> ModelRecord | None:
    """The PyTorch model behind the current one: itself, or the model it was exported from."""
    return st.session_state.get("torch_model")


def paths_in_use() -> set[Path]:
    """The files of the current model and of its PyTorch original: a job's older folders holding them stay."""
    records = (current_model(), torch_model())
    return {Path(p) for r in records if r is not None for p in [r.path, *r.files] if p}


def set_current_model(
    record: ModelRecord,
    exported_from: ModelRecord | None = None,
    rerun: bool = True,
    link: dict[str, str] | None = None,
) -> None:
    """Make ``record`` current and run the app again, so the sidebar (drawn before the page) shows it.

    The PyTorch original stays at hand for an ONNX model exported from it (the eager side of a benchmark);
    any other ONNX model has none.
    """
    st.session_state["model"] = record
    st.session_state["torch_model"] = record if record.is_pytorch else exported_from
    _remember(record, None if record.is_pytorch else exported_from, link)
    if rerun:
        st.rerun()


@st.cache_resource
def library() -> ModelLibrary:
    """Models kept by content, so that a link or a reload opens them again (core.model.library)."""
    config = settings()
    return ModelLibrary(
        Path(config.data_dir) / "models",
        max_age_s=config.workspace_max_age_h * 3600,
        owned_max_age_s=config.library_max_age_h * 3600,
        quota_bytes=config.library_quota_mb << 20,
        session_share=config.library_session_share,
    )


@st.cache_resource
def store() -> Store:
    """The benchmark history (core.store), opened once per server; runs that could not be saved while the
    database was away wait in the spool folder and are saved when it is back."""
    return open_history(settings())


@st.cache_data(max_entries=2000, show_spinner=False)
def _saved_run(url: str, run_id: str) -> AnyRun:
    return store().load(run_id)


def saved_run(run_id: str) -> AnyRun:
    """A run from the history, of its kind, with who saved it; runs never change once saved, so each is read once
    per server."""
    return _saved_run(settings().store_url, run_id)


def save_run(run: AnyRun) -> bool:
    """Save a run to the history as the person of this session and their team; where the history cannot take it,
    the page says so (the results stay shown) and this returns False."""
    from ui.text import md_escape

    who_saves = who()
    try:
        store().save(run, owner=who_saves.user, team=who_saves.team)
    except WorkbenchError as exc:
        st.warning(
            _("The results are shown but were not saved to the history: {error}").format(error=md_escape(str(exc), 600))
        )
        return False
    return True


def who() -> Identity:
    """Who uses this session: the person signed in, or anonymous (ui.auth)."""
    from ui.auth import identity

    return identity() if settings().auth else ANONYMOUS


def _one_person() -> bool:
    """A laptop's one person: local mode without a workshop, whose every anonymous keeping is theirs. A hosted
    instance, or a workshop's (local mode on a classroom's network), is shared by strangers."""
    config = settings()
    return not config.hosted and not config.workshop


def owner_token() -> str | None:
    """This browser session's secret owner token: what makes an anonymous keeping this session's to rename, tag or
    delete (core.model.library.owns). Never the link's key, which is sent to others; never in an address. None
    on a laptop, whose one user owns every anonymous keeping."""
    if _one_person():
        return None
    token: str = st.session_state.setdefault("owner_token", secrets.token_urlsafe(32))
    return token


def kept_keys() -> set[str] | None:
    """The keepings an anonymous visitor of a shared instance may list: those their session made or opened (on
    a laptop, or signed in, the library lists by owner)."""
    if who().signed_in or _one_person():
        return None
    return set(st.session_state.setdefault("kept_keys", set()))


def _remember(record: ModelRecord, exported_from: ModelRecord | None, link: dict[str, str] | None) -> None:
    """Put the current model in the page's address: a sample by name, any other model kept in the library
    with a key of its own (or the ``link`` it was opened by), so that a reload or the link opens it again."""
    if link is not None:
        st.session_state["link"] = link
    elif record.format == "sample":
        st.session_state["link"] = {"sample": record.name}
    else:
        try:  # on a shared instance an anonymous session makes room only among what it kept itself
            key = library().keep(record, exported_from, who(), session=owner_token())
        except LibraryFull as exc:
            st.session_state["library_full"] = str(exc)
            key = None
        st.session_state["link"] = {"model": record.id, "key": key} if key else {}
    if st.session_state["link"].get("key"):
        st.session_state.setdefault("kept_keys", set()).add(st.session_state["link"]["key"])
    sync_address()


LINK_KEYS = ("sample", "model", "key", "lang")


def sync_address() -> None:
    """The current model's link in the address bar, on every page (a page switch may clear it), beside the
    page's own state (``page_param``); and the language, when one was asked for (ui.language)."""
    link = (st.session_state.get("link") or {}) | language.param()
    params = dict(st.query_params)
    wanted = {k: v for k, v in params.items() if k not in LINK_KEYS} | link
    if params != wanted:
        st.query_params.from_dict(wanted)


def page_param(name: str) -> str:
    """A page's own state from the address (the level shown, the node selected, the run opened); "" if none."""
    return st.query_params.get(name, "")


def set_page_param(name: str, value: str) -> None:
    """Put a page's state in the address, so a reload or a link shows the same; "" takes it out."""
    if value and st.query_params.get(name) != value:
        st.query_params[name] = value
    elif not value and name in st.query_params:
        del st.query_params[name]


def _from_address() -> bool:
    """Open the model the address names (a reload, or a link someone shared); False when it names none, or
    one that is gone or not theirs (then the page says so)."""
    params = st.query_params
    if "model" in params:
        kept = library().open(params.get("model", ""), params.get("key", ""), who())
        if kept is None:
            st.session_state["link_gone"] = True
            return False
        link = {"model": params.get("model", ""), "key": params.get("key", "")}
        set_current_model(kept.record, exported_from=kept.exported_from, rerun=False, link=link)
        return True
    name = params.get("sample", "")
    if name:
        try:
            set_current_model(sample_record(name), rerun=False)
        except WorkbenchError:
            st.session_state["link_gone"] = True
            return False
        return True
    return False


@st.cache_data(show_spinner=False)
def _sample_data(name: str) -> ModelRecord:
    """Samples are the same for everyone, so their records are cached across sessions by name (st.cache_data
    hands each caller its own copy). The committed card needs no worker; without one, a worker computes it."""
    card = cards.known(name)
    return card if card is not None else run(SAMPLE, SampleRequest(name=name), backend())


_SAMPLE_LOCK = threading.Lock()


def sample_record(name: str) -> ModelRecord:
    # st.cache_data does not merge calls that arrive together: without the lock, a workshop of 30 opening the
    # app at once would build the sample 30 times. The first caller builds it; the others wait and reuse it.
    with _SAMPLE_LOCK:
        return _sample_data(name)


def start() -> None:
    """First run of a session: its workspace, and the model its address names (a reload or a shared link),
    else the start sample as current model (if one is set). Every run: the current model's link in the
    address."""
    backend().page_runs()  # replacement workers wait until the page is drawn (core.jobs.refill.Foreground)
    workspace()
    if "model" not in st.session_state and not st.session_state.get("started"):
        st.session_state["started"] = True
        if _from_address():
            return
        name = settings().start_sample
        if name:
            with st.spinner(_("Loading the '{name}' sample…").format(name=name)):
                set_current_model(sample_record(name), rerun=False)
        return
    sync_address()
