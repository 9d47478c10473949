"""Run a worker job from a page: progress and queue place in a status box, cancel by any interaction, results
kept per model, and one way of showing what went wrong."""

from __future__ import annotations

import dataclasses
import shutil
import threading
import time
from collections import Counter, deque
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any, NoReturn

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from core.access import WRITE, map_paths, paths_in
from core.errors import JobError, JobFailed, WorkbenchError
from core.i18n import _, ngettext
from core.jobs.cluster.client import LOCAL
from core.jobs.process import submit
from core.jobs.registry import Job, Request, Result, signature_of
from core.jobs.wire import WireError, decode, encode
from ui import session, targets
from ui.hooks import ERROR_SHOWN, RESULT_KEPT
from ui.text import md_escape

__all__ = ["AHEAD_KEPT_S", "SessionJobs", "keep", "kept", "run", "show_error", "start", "stop_with_error"]


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
            self.release(session_id)

    def spare(self, session_id: str, limit: int) -> bool:
        """Take a slot for a job started ahead (``start``) only if one is left beside it for the job the page
        waits on first; whether it was taken (``release`` gives it back)."""
        with self._lock:
            if self.running[session_id] + 2 > limit:
                return False
            self.running[session_id] += 1
            return True

    def release(self, session_id: str) -> None:
        with self._lock:
            self.running[session_id] -= 1
            if self.running[session_id] <= 0:
                del self.running[session_id]


class Durations:
    """How long the last jobs of each kind took on this server, for the wait a queued job is told to expect."""

    def __init__(self, keep: int = 20) -> None:
        self._lock = threading.Lock()
        self._seen: dict[str, deque[float]] = {}
        self.keep = keep

    def record(self, name: str, seconds: float) -> None:
        with self._lock:
            self._seen.setdefault(name, deque(maxlen=self.keep)).append(seconds)

    def wait(self, name: str, ahead: int) -> float | None:
        """About how long ``ahead`` jobs of kind ``name`` take (the median of the last ones), None before any."""
        with self._lock:
            seen = sorted(self._seen.get(name, ()))
        return seen[len(seen) // 2] * ahead if seen else None


@st.cache_resource
def _durations() -> Durations:
    """One per server: durations of jobs, no user's data."""
    return Durations()


TOAST_AFTER_S = 3.0  # a job still running after this is announced in a toast, which shows wherever one has scrolled
QUICK_S = 0.25  # a job done within this (and before TOAST_AFTER_S) is shown finished, with no running box first


@st.cache_resource
def _session_jobs() -> SessionJobs:
    """One counter per server: it holds session ids and counts, nothing of any user's data."""
    return SessionJobs()


@dataclasses.dataclass(eq=False)
class _Started:
    """A job started ahead: what it was asked, its handle, its ``out_dir`` (a job that writes files), and every
    folder it was sent to write into (``out_dir`` and any other, such as Partition's ``levels_dir``)."""

    asked: tuple[str, bytes]
    handle: Any
    out: Path | None = None
    folders: tuple[str, ...] = ()
    keep_s: float = 60.0  # how long its result waits for a page to take it, once it has ended
    began: float = dataclasses.field(default_factory=time.monotonic)
    ended: float | None = None  # when it ended, as its thread saw it: a page says the job's own time, not its wait
    taken: bool = False  # by a page's run, which then owns its folders
    given_back: bool = False  # its slot, to its session (once: by whichever of the two sees it end first)


@st.cache_resource
def _started() -> tuple[threading.Lock, dict[tuple[str, str], _Started]]:
    """One per server: the jobs started ahead (``start``) by (session id, job name); handles hold threads, so they
    are kept here rather than in a session's state."""
    return threading.Lock(), {}


def _session_id() -> str:
    ctx = get_script_run_ctx()
    return ctx.session_id if ctx else ""


def _asked(job: Job[Any, Any], request: Any, model: str) -> tuple[str, bytes]:
    """What ``request`` asks of ``job`` for ``model``, where it runs, as bytes; the folders it writes into are not
    what it asks (a job started ahead wrote into its own, which the page's run takes as they are)."""
    place = targets.chosen() if job.targeted else LOCAL  # a result from another target is not this one
    asked = map_paths(request, type(request), lambda access, path: "" if access == WRITE else path)
    return (model, encode([asked, place]))


def start(
    job: Job[Request, Result], request: Request, *, model: str, once: bool = False, keep_s: float | None = None
) -> bool:
    """Start ``job`` on ``request`` now without waiting for it: the page's later ``run`` of the same job and
    request for ``model`` (with ``reuse``) waits on it instead of starting it then. A page calls it for a job
    that does not depend on the one it waits on first (Decode lays out the graph while the model is decoded), so
    that both run side by side. Nothing starts when the result is kept already, when the job writes files, or
    when the session has no slot to spare beside the next job (that ``run`` then starts it, as before). A job
    that writes files (``folder``) gets its fresh folder now, which the later ``run`` keeps as its own. A job
    started and never waited on (the person left the page) runs to its end, and its result waits a minute
    (``STARTED_KEPT_S``, or ``keep_s``) for a visit that takes it. With ``once``, a job this session started for
    the same request before is not started again (a page's every rerun offers the next step's). Whether it started
    now: a folder the caller made for it (other than ``out_dir``) is the caller's to remove when it did not."""
    asked = _asked(job, request, model)
    found = _kept_entry(job, model)
    if found is not None and found[0] == asked:
        return False
    if once and (job.name, asked) in st.session_state.get(ONCE_KEY, set()):
        return False
    sid = _session_id()
    lock, started = _started()
    with lock:
        earlier = started.get((sid, job.name))
        if earlier is not None and earlier.asked == asked:
            return False
    if not _session_jobs().spare(sid, session.settings().max_jobs_per_session):
        return False
    out = session.workspace().new_folder(job.folder) if job.folder else None
    sent = dataclasses.replace(request, out_dir=str(out)) if out is not None else request  # type: ignore[type-var]
    try:
        handle = submit(job, sent, targets.backend_for(job))
    except Exception:  # the page's own run of it will say what is wrong
        _session_jobs().release(sid)
        if out is not None:
            shutil.rmtree(out, ignore_errors=True)
        return False
    folders = tuple(path for access, path in paths_in(sent, type(sent)) if access == WRITE)
    entry = _Started(asked, handle, out, folders, keep_s=STARTED_KEPT_S if keep_s is None else keep_s)
    if once:
        st.session_state.setdefault(ONCE_KEY, set()).add((job.name, asked))
    with lock:
        earlier = started.get((sid, job.name))
        started[(sid, job.name)] = entry
    threading.Thread(target=_end_of_started, args=(entry, (sid, job.name)), name="started job", daemon=True).start()
    if earlier is not None:
        earlier.handle.cancel()  # asked something else since: nobody will wait on it
    return True


STARTED_KEPT_S = 60.0
ONCE_KEY = "jobs_started_once"  # in a session's state: (job name, what it asked) of the jobs ``start`` made ``once``
# a job started for the next step a page offers waits longer: a person reads a page for minutes before going on
AHEAD_KEPT_S = 600.0


def _end_of_started(entry: _Started, key: tuple[str, str]) -> None:
    """Once the job has ended: its slot back to the session; a minute later, its result dropped if no page took
    it (a result can be a large model's graph), and the folders it wrote into with it (a model's five optimized
    copies), unless a page took it."""
    entry.handle.wait(None)
    entry.ended = time.monotonic()
    _give_back(entry, key[0])
    time.sleep(entry.keep_s)
    lock, started = _started()
    with lock:
        if started.get(key) is entry:
            del started[key]
        dropped = not entry.taken
    if dropped:
        for folder in entry.folders:
            shutil.rmtree(folder, ignore_errors=True)


def _give_back(entry: _Started, session_id: str) -> None:
    """The slot of a job started ahead back to its session, once: as soon as the page that took it has its result
    (its next job may start ahead at once), or when it ends untaken (``_end_of_started``'s thread, which may wake
    later than the page goes on)."""
    lock, _started_jobs = _started()
    with lock:
        if entry.given_back:
            return
        entry.given_back = True
    _session_jobs().release(session_id)


def _take_started(job: Job[Any, Any], asked: tuple[str, bytes]) -> _Started | None:
    """The job started ahead of ``job`` for exactly ``asked`` in this session, taken out; else None."""
    lock, started = _started()
    key = (_session_id(), job.name)
    with lock:
        found = started.get(key)
        if found is None or found.asked != asked:
            return None
        del started[key]
        # another run of the session may have pruned its folders meanwhile (another model's job of the same kind):
        # its result would name files that are gone, so the page runs its own, and its thread drops this one
        found.taken = all(Path(folder).is_dir() for folder in found.folders)
    return found if found.taken else None


def show_error(exc: WorkbenchError) -> None:
    """A user's error, escaped (model text can hold Markdown and HTML); in local mode an unexpected failure
    also shows its traceback, as code; then what the views registered offers beneath it (ui.hooks.ERROR_SHOWN: a
    model too old for ONNX Runtime gets the offer to upgrade it)."""
    message = str(exc).strip()
    first, _newline, rest = message.partition("\n")  # a message that carries a traceback or a log: its first line,
    st.error(md_escape(first, 2000))  # escaped, and the rest as code (never as Markdown, which would eat it)
    details = "\n".join(part for part in (rest.strip(), exc.details if isinstance(exc, JobFailed) else "") if part)
    if details and not session.settings().hosted:
        with st.expander(_("Technical details")):
            st.code(details[-20_000:], language=None)
    for offer in ERROR_SHOWN:  # the way out, one click away
        offer(exc)


def stop_with_error(exc: WorkbenchError) -> NoReturn:
    show_error(exc)
    st.stop()
    raise AssertionError  # st.stop() does not return


def run(job: Job[Request, Result], request: Request, label: str, *, model: str = "", reuse: bool = False) -> Result:
    """Run ``job`` on ``request`` with a status box and return its typed result; its errors (WorkbenchError
    subclasses) propagate from a job kept for no model, and are shown (stopping the page) for one kept for a
    model.

    ``model``: the result is kept in this session for that model (and with the model's link, for the jobs that
    say so), where ``kept`` finds it; with ``reuse``, a result kept for this model from the same request on the
    same target is returned without running again (a page that makes its result on every visit). A job with a
    ``folder`` gets a fresh folder of this session's as its ``out_dir``; the earlier ones go once it succeeds,
    except those holding the current model or its PyTorch original.
    """
    if not model:
        return _with_slot(job, request, label)
    result = _run_kept(job, request, label, model, reuse, stop=True)
    assert result is not None  # a failure stopped the page
    return result


def run_or_show(
    job: Job[Request, Result], request: Request, label: str, *, model: str, reuse: bool = False
) -> Result | None:
    """As ``run`` for a job whose result only adds to a page (Partition's levels beside its partition): a failure is
    shown where the job's status box was and the page goes on without it (None), rather than stopping there."""
    return _run_kept(job, request, label, model, reuse, stop=False)


def _run_kept(
    job: Job[Request, Result], request: Request, label: str, model: str, reuse: bool, *, stop: bool
) -> Result | None:
    # one element on every run, whether or not the job runs now: its status box goes in it, and what the page
    # draws after it keeps its place from run to run (a graph view that moved would be mounted again)
    slot = st.container()
    asked = _asked(job, request, model)
    taken = None
    out: Path | None = None
    if reuse:
        found = _kept_entry(job, model)
        if found is not None and found[0] == asked:
            return found[1]
        taken = _take_started(job, asked)
        if taken is not None:
            out = taken.out  # a job started ahead ran in its own folder already
    if taken is None:
        out = session.workspace().new_folder(job.folder) if job.folder else None
    sent = dataclasses.replace(request, out_dir=str(out)) if out is not None and taken is None else request  # type: ignore[type-var]
    try:
        with slot:
            result = _run(job, sent, label, taken) if taken is not None else _with_slot(job, sent, label)
    except WorkbenchError as exc:
        if out is not None:
            shutil.rmtree(out, ignore_errors=True)
        if stop:
            stop_with_error(exc)
        with slot:
            show_error(exc)
        return None
    finally:
        if taken is not None:  # it has ended: its slot is free for the next job started ahead, this run
            _give_back(taken, _session_id())
    if out is not None:
        session.workspace().prune(job.folder, keep={out, *session.paths_in_use()})
    st.session_state[job.name] = (asked, result)
    _keep(job, model, result)
    for kept_hook in RESULT_KEPT:  # a workshop participant's benchmark or quantization goes to the room board
        kept_hook(job, result)
    return result


def keep(job: Job[Any, Result], model: str, result: Result, request: Any = None) -> None:
    """A result made of several jobs' (Tune across runtimes, one job per runtime) kept for ``model`` as ``run``
    keeps one job's, where ``kept`` finds it; with ``request``, as the result of that request (one made by another
    job, as Partition's levels made beside its partition), which a later ``run`` of it with ``reuse`` takes."""
    asked = _asked(job, request, model) if request is not None else (model, b"several")
    st.session_state[job.name] = (asked, result)
    _keep(job, model, result)


def kept(job: Job[Any, Result], model: str, request: Any = None) -> Result | None:
    """The result of ``job`` kept in this session (or with the model's link) for ``model``, if any; with
    ``request``, only the one kept for that request."""
    found = _kept_entry(job, model)
    if found is None or (request is not None and found[0] != _asked(job, request, model)):
        return None
    return found[1]


def _with_slot(job: Job[Request, Result], request: Request, label: str) -> Result:
    """Streamlit stops this script when the user clicks anything (that is how "Cancel" works); the
    ``finally`` of ``_run`` then kills the worker, so nothing keeps running for a page nobody is looking at."""
    with _session_jobs().slot(_session_id(), session.settings().max_jobs_per_session):
        return _run(job, request, label)


def _took(began: float, ahead: _Started | None) -> str:
    """A job's time, said in its box: a job started ahead's own (to when it ended), not the page's wait on it."""
    ended = ahead.ended if ahead is not None and ahead.ended is not None else time.monotonic()
    return f"{ended - began:.1f}"


def _run(job: Job[Request, Result], request: Request, label: str, ahead: _Started | None = None) -> Result:
    """Wait on the job with a status box: on ``ahead`` (a job ``start`` started, which holds its own slot of the
    session's; its box says its time from when it started), else on a job submitted now. While the page waits on
    a job of this machine's, no warm worker's replacement takes its cores (core.jobs.refill.Foreground)."""
    remote = job.targeted and targets.chosen() != LOCAL
    with nullcontext() if remote else session.backend().page_waits():
        return _wait(job, request, label, ahead, remote)


def _wait(job: Job[Request, Result], request: Request, label: str, ahead: _Started | None, remote: bool) -> Result:
    label = md_escape(label, 200)  # the status box renders Markdown, and labels carry the model's name
    handle = ahead.handle if ahead is not None else submit(job, request, targets.backend_for(job))
    where = _("target {name}").format(name=targets.chosen()) if remote else _("the machine")
    waited_from = time.monotonic()  # the page's wait: a toast says a job it has waited on for a while
    began = ran_from = ahead.began if ahead is not None else waited_from  # submitted; and out of the queue
    try:
        # a job done in a moment is drawn as its finished box at once: st.status sleeps 50 ms when it is made, a
        # fifth of a small page's answer; a click meanwhile reruns the page no later than this wait
        if handle.wait(min(QUICK_S, TOAST_AFTER_S)) and handle.state == "done":
            result = handle.result()
            if ahead is None:
                _durations().record(job.name, time.monotonic() - ran_from)
            _finished_box(label, _took(began, ahead))
            _warn(handle.warnings)
            return result
        # open while it runs, so its bar says how far it has got (a large model's Partition runs for minutes, and
        # the toast below sends the reader to this box); closed once it has ended, as a quick job's box is drawn
        with st.status(label, expanded=True) as status:
            bar = st.progress(0.0, text=_("starting the worker…"))
            shown: tuple[float, str] = (0.0, "")  # what the bar says: sent to the browser only when it changes
            told = False  # whether a toast said the job runs
            while not handle.done():
                position = handle.queue_position
                if position is not None:
                    ran_from = time.monotonic()
                    queued = ngettext(
                        "waiting for {where}: {count} job ahead of yours",
                        "waiting for {where}: {count} jobs ahead of yours",
                        position,
                    )
                    text = md_escape(queued.format(where=where, count=position), 300)
                    wait = _durations().wait(job.name, position + 1)  # the ones ahead and the one running
                    if wait is not None:  # each job ahead takes about as long as the last ones did
                        text += " · " + _("about {seconds} s to wait").format(seconds=f"{max(wait, 1):.0f}")
                    if (0.0, text) != shown:  # a place in the queue changes seldom: thirty waiting pages
                        status.update(label=f"{label} ({text})")  # each sending ten a second kept the server busy
                    now = (0.0, text)
                elif handle.progress is not None:
                    elapsed = f"{time.monotonic() - began:.0f}"
                    said = _("{message} ({seconds} s)").format(message=handle.progress.message, seconds=elapsed)
                    now = (round(handle.progress.fraction, 2), said)
                else:
                    now = (0.0, _("working… {seconds} s").format(seconds=f"{time.monotonic() - began:.0f}"))
                if now != shown:
                    bar.progress(now[0], text=now[1])
                    shown = now
                if not told and time.monotonic() - waited_from > TOAST_AFTER_S:
                    told = True  # the box may be below the window's edge, under the button that was clicked
                    st.toast(_("{label}: running; its box on the page shows how far it has got.").format(label=label))
                handle.wait(0.1)  # a tenth of a second at most, and no longer once the job has ended
            try:
                result = handle.result()
            except Exception:
                status.update(label=_("{label}: failed").format(label=label), state="error", expanded=False)
                if told:
                    st.toast(_("{label}: failed").format(label=label), icon=":material/error:")
                raise
            seconds = _took(began, ahead)
            if ahead is None:  # a job started ahead ran for longer than this page waited on it
                _durations().record(job.name, time.monotonic() - ran_from)  # its own time, not its wait
            bar.progress(1.0, text=_("done in {seconds} s").format(seconds=seconds))
            status.update(
                label=_("{label}: done in {seconds} s").format(label=label, seconds=seconds),
                state="complete",
                expanded=False,
            )
            if told:
                st.toast(
                    _("{label}: done in {seconds} s").format(label=label, seconds=seconds), icon=":material/check:"
                )
        _warn(handle.warnings)
        return result
    finally:
        if not handle.done():
            handle.cancel()


def _finished_box(label: str, seconds: str) -> None:
    """A job's box as ``st.status`` leaves it once the job is done (its label, the check mark, the full bar), made
    without the status box's pause: an expander, so the page keeps its layout whether the job took a moment or
    a minute."""
    with st.expander(_("{label}: done in {seconds} s").format(label=label, seconds=seconds), icon=":material/check:"):
        st.progress(1.0, text=_("done in {seconds} s").format(seconds=seconds))


def _warn(warnings: tuple[str, ...]) -> None:
    for warning in warnings:  # beside the closed status box, where it is seen
        st.warning(md_escape(warning, 2000))


def _kept_entry(job: Job[Any, Result], model: str) -> tuple[tuple[str, bytes], Result] | None:
    """(what it was asked, the result) kept for ``model``: in this session, else with the model's link."""
    found = st.session_state.get(job.name)
    if found is None or found[0][0] != model:
        found = _restored(job, model) or found
    return found if found is not None and found[0][0] == model else None


def _keep(job: Job[Any, Result], model: str, result: Result) -> None:
    """Results that name no file of the session's workspace are kept with the model in the library
    (core.model.library), so that a reload of the tab shows them at once; the others (Decode, Partition) are
    quick to make again. Only the keeping's owner keeps them there: a model opened by its link keeps its results
    in this session."""
    link = st.session_state.get("link") or {}
    if job.kept_with_link and link.get("model") == model:
        key = link.get("key", "")
        session.library().keep_result(model, key, job.name, encode(result), session.who(), session.owner_token())


def _restored(job: Job[Any, Result], model: str) -> tuple[tuple[str, bytes], Result] | None:
    """The result kept across a reload for this model and this link's key, as the session keeps results."""
    link = st.session_state.get("link") or {}
    if not job.kept_with_link or link.get("model") != model:
        return None
    data = session.library().result(model, link.get("key", ""), job.name)
    if data is None:
        return None
    try:
        result: Result = decode(data, signature_of(job.target).result)
    except WireError:  # kept by an earlier version of the app: run it again
        return None
    entry = ((model, b"kept"), result)
    st.session_state[job.name] = entry
    return entry
