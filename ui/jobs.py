"""Run a worker job from a page: progress and queue place in a status box, cancel by any interaction, results
kept per model, and one way of showing what went wrong."""

from __future__ import annotations

import shutil
import threading
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, NoReturn

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from core.errors import JobError, JobFailed, WorkbenchError
from core.jobs import JobSpec, submit
from core.jobs.cluster.client import LOCAL
from core.jobs.wire import encode
from ui import session, targets
from ui.text import md_escape

__all__ = ["SessionJobs", "job_result", "run_with_status", "show_error", "stop_with_error"]


class SessionJobs:
    """How many jobs each browser session runs right now, against the per-session limit."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.running: Counter[str] = Counter()

    @contextmanager
    def slot(self, session_id: str, limit: int) -> Iterator[None]:
        with self._lock:
            if self.running[session_id] >= limit:
                raise JobError(
                    f"This session already runs {self.running[session_id]} job(s), the most one session may run at "
                    "once here. Wait for it to finish (or reload the page to cancel it), then try again."
                )
            self.running[session_id] += 1
        try:
            yield
        finally:
            with self._lock:
                self.running[session_id] -= 1
                if self.running[session_id] <= 0:
                    del self.running[session_id]


@st.cache_resource
def _session_jobs() -> SessionJobs:
    """One counter per server: it holds session ids and counts, nothing of any user's data."""
    return SessionJobs()


def show_error(exc: WorkbenchError) -> None:
    """A user's error, escaped (model text can hold Markdown and HTML); in local mode an unexpected failure
    also shows its traceback, as code."""
    message = str(exc).strip()
    first, _, rest = message.partition("\n")  # a message that carries a traceback or a log: its first line,
    st.error(md_escape(first, 2000))  # escaped, and the rest as code (never as Markdown, which would eat it)
    details = "\n".join(part for part in (rest.strip(), exc.details if isinstance(exc, JobFailed) else "") if part)
    if details and not session.settings().hosted:
        with st.expander("Technical details"):
            st.code(details[-20_000:], language=None)


def stop_with_error(exc: WorkbenchError) -> NoReturn:
    show_error(exc)
    st.stop()
    raise AssertionError  # st.stop() does not return


def run_with_status(name: str, args: dict[str, Any], label: str) -> Any:
    """Run job ``name`` and return its typed result; its errors (WorkbenchError subclasses) propagate.

    Streamlit stops this script when the user clicks anything (that is how "Cancel" works); the
    ``finally`` then kills the worker, so nothing keeps running for a page nobody is looking at.
    """
    ctx = get_script_run_ctx()
    with _session_jobs().slot(ctx.session_id if ctx else "", session.settings().max_jobs_per_session):
        return _run(name, args, label)


def _run(name: str, args: dict[str, Any], label: str) -> Any:
    label = md_escape(label, 200)  # the status box renders Markdown, and labels carry the model's name
    handle = submit(JobSpec(name, args), targets.backend_for(name))
    where = "the machine" if targets.chosen() == LOCAL or name not in targets.TARGETED else f"target {targets.chosen()}"
    started = time.monotonic()
    try:
        with st.status(label, expanded=False) as status:
            bar = st.progress(0.0, text="starting the worker…")
            while not handle.done():
                position = handle.queue_position
                if position is not None:
                    text = md_escape(f"waiting for {where}: {position} job(s) ahead of yours", 300)
                    bar.progress(0.0, text=text)
                    status.update(label=f"{label} ({text})")
                elif handle.progress is not None:
                    elapsed = time.monotonic() - started
                    bar.progress(handle.progress.fraction, text=f"{handle.progress.message} ({elapsed:.0f} s)")
                else:
                    bar.progress(0.0, text=f"working… {time.monotonic() - started:.0f} s")
                time.sleep(0.1)
            try:
                result = handle.result()
            except Exception:
                status.update(label=f"{label}: failed", state="error")
                raise
            bar.progress(1.0, text=f"done in {time.monotonic() - started:.1f} s")
            status.update(label=f"{label}: done in {time.monotonic() - started:.1f} s", state="complete")
        for warning in handle.warnings:  # beside the closed status box, where it is seen
            st.warning(md_escape(warning, 2000))
        return result
    finally:
        if not handle.done():
            handle.cancel()


def job_result(
    key: str,
    model_id: str,
    name: str,
    args: Mapping[str, Any],
    label: str,
    *,
    run: bool | None = None,
    identity: Any = None,
    folder: str = "",
) -> Any:
    """The result of job ``name`` for the current model, kept in this session under ``key``.

    ``run``: None runs the job unless a result for this model and these arguments is kept (``identity``
    stands for the arguments when some of them change on every run); True always runs it (a button was
    pressed); False never does and returns the kept result for this model, or None. ``folder``: the job gets a
    fresh folder of this session's (as ``out_dir``) for the files its result names, and the folders of earlier
    runs under the same name are removed once it succeeds. A user's error is shown and stops the page.
    """
    # one element on every run, whether or not the job runs now: its status box goes in it, and what the page
    # draws after it keeps its place from run to run (a graph view that moved would be mounted again)
    slot = st.container()
    shown = identity if identity is not None else dict(args)
    place = targets.chosen() if name in targets.TARGETED else LOCAL  # a result from another target is not this one
    request = (model_id, encode([shown, place]))  # arguments and where they run, as bytes
    kept = st.session_state.get(key)
    if kept is None or kept[0][0] != model_id:
        kept = _restored(key, model_id, name) or kept
    if run is False or (run is None and kept is not None and kept[0] == request):
        return kept[1] if kept is not None and kept[0][0] == model_id else None
    args = dict(args)
    out = session.workspace().new_folder(folder) if folder else None
    if out is not None:
        args["out_dir"] = str(out)
    try:
        with slot:
            result = run_with_status(name, args, label)
    except WorkbenchError as exc:
        if out is not None:
            shutil.rmtree(out, ignore_errors=True)
        stop_with_error(exc)
    if out is not None:
        session.workspace().prune(folder, keep={out})
    st.session_state[key] = (request, result)
    _keep(key, model_id, result)
    return result


# Results that name no file of the session's workspace, kept with the model in the library (core.model.library)
# so that a reload of the tab shows them at once; the others (Decode, Partition) are quick to make again.
KEPT_ACROSS_RELOADS = {"bench", "profile"}


def _keep(key: str, model_id: str, result: Any) -> None:
    link = st.session_state.get("link") or {}
    if key in KEPT_ACROSS_RELOADS and link.get("model") == model_id:
        session.library().keep_result(model_id, link.get("key", ""), key, encode(result))


def _restored(key: str, model_id: str, name: str) -> tuple[tuple[str, bytes], Any] | None:
    """The result kept across a reload for this model and this link's key, as the session keeps results."""
    link = st.session_state.get("link") or {}
    if key not in KEPT_ACROSS_RELOADS or link.get("model") != model_id:
        return None
    data = session.library().result(model_id, link.get("key", ""), key)
    if data is None:
        return None
    from core.jobs.registry import JOBS, signature_of
    from core.jobs.wire import WireError, decode

    try:
        result = decode(data, signature_of(JOBS.get(name).target).result)
    except WireError:  # kept by an earlier version of the app: run it again
        return None
    st.session_state[key] = ((model_id, b"kept"), result)
    return st.session_state[key]  # type: ignore[no-any-return]
