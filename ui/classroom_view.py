"""The classroom in the app (core.classroom): a participant's join form and place in a room (the model, pages and
language the teacher set), their results pooled into the room where a job's result arrives (ui/jobs.py), and the
room board the teacher projects."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from sqlalchemy.exc import SQLAlchemyError

from core.classroom import (
    BASELINES,
    EAGER,
    TITLES,
    DeviceGroup,
    Entry,
    Room,
    Rooms,
    Spread,
    bench_entry,
    browser_entry,
    choices,
    clean_code,
    clean_name,
    device_groups,
    empty_sentence,
    latencies,
    machines,
    new_participant,
    quantize_entry,
    range_sentence,
    spread,
    tutorial_figure,
)
from core.errors import RoomError, WorkbenchError
from core.i18n import LANGUAGES, _, ngettext, number
from core.jobs import BENCH, QUANTIZE
from core.jobs.cluster.client import LOCAL
from core.jobs.registry import Job
from core.tutorial import TUTORIAL_MODEL
from ui import session, targets
from ui.charts import escaped
from ui.hooks import PAGES_SHOWN, RESULT_KEPT
from ui.text import escaped_frame, md_escape

__all__ = [
    "board",
    "board_figure",
    "device_figure",
    "devices_board",
    "forget",
    "joined",
    "pool",
    "pool_browser",
    "room_of",
    "rooms",
    "seen_room",
    "sidebar",
    "visible",
]

_JOINED = "classroom"  # session_state: {"code", "name", "participant"} once joined
# How long a room and its board, as read, serve every participant's page runs: thirty participants clicking need
# not each ask the database several times a run. A teacher's change on this server shows at once (forget); one
# made elsewhere (another server of a team, a room that expires) within this.
_SEEN_S = 2.0
_T = TypeVar("_T")


class _Seen:
    """The rooms and boards as last read, shared by every session of this server: (store, what, code) -> (when
    read, what was read)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.found: dict[tuple[str, str, str], tuple[float, Any]] = {}


@st.cache_resource
def _seen() -> _Seen:
    return _Seen()


def _shared(what: str, code: str, read: Callable[[], _T]) -> _T:
    """``read()``, as read at most _SEEN_S ago by any session."""
    key, cache, now = (session.settings().store_url, what, code), _seen(), time.monotonic()
    with cache.lock:
        hit = cache.found.get(key)
    if hit is not None and now - hit[0] < _SEEN_S:
        found: _T = hit[1]
        return found
    value = read()
    with cache.lock:
        for stale in [k for k, (when, _value) in cache.found.items() if now - when >= _SEEN_S]:
            del cache.found[stale]  # rooms closed long ago are not kept
        cache.found[key] = (now, value)
    return value


def forget(code: str) -> None:
    """Drop what was read of room ``code`` (the teacher opened, cleared or closed it; a result was pooled): every
    participant's next page run reads it again."""
    cache = _seen()
    with cache.lock:
        for key in [k for k in cache.found if k[2] == code]:
            del cache.found[key]


@st.cache_resource
def _rooms(url: str) -> Rooms:
    return Rooms(session.store().engine)


def rooms() -> Rooms:
    """The rooms, in the history's database."""
    return _rooms(session.settings().store_url)


def joined() -> dict[str, str] | None:
    """This session's place in a room: its code, the display name, the participant's random id."""
    found = st.session_state.get(_JOINED)
    return found if session.settings().workshop and isinstance(found, dict) else None


def room_of(code: str) -> Room | None:
    try:
        return rooms().room(code)
    except SQLAlchemyError:
        return None


def seen_room(code: str) -> Room | None:
    """A participant's room as read at most a few seconds ago (by any session): the navigation, the sidebar and
    every link ask for it on each run. The teacher's page reads it afresh (room_of)."""
    return _shared("room", code, lambda: room_of(code))


@PAGES_SHOWN.register
def visible(rows: tuple[Any, ...]) -> list[Any]:
    """The pages to list: the Classroom page only with a workshop on; a participant's room, only its pages."""
    if not session.settings().workshop:
        return [r for r in rows if r.step != "classroom"]
    place = joined()
    room = seen_room(place["code"]) if place else None
    if room is None or not room.setup.pages:
        return list(rows)
    return [r for r in rows if r.step in room.setup.pages or r.step == "classroom"]


def _start(room: Room) -> None:
    """Where the teacher said to start: the language and the model of the room."""
    if room.setup.language in LANGUAGES:
        st.session_state["lang"] = room.setup.language
        st.query_params["lang"] = room.setup.language
    kind, _sep, rest = room.setup.model.partition(":")
    if kind == "sample" and rest:
        session.set_current_model(session.sample_record(rest), rerun=False)
    elif kind == "library" and ":" in rest:
        model_id, key = rest.split(":", 1)
        kept = session.library().open(model_id, key, session.who())
        if kept is None:
            raise RoomError(_("The room's model is not in the library any more: ask the teacher to set it again."))
        link = {"model": model_id, "key": key}
        session.set_current_model(kept.record, exported_from=kept.exported_from, rerun=False, link=link)


def _join(code: str, name: str) -> None:
    room = rooms().join(code, name)
    _start(room)
    st.session_state[_JOINED] = {"code": room.code, "name": clean_name(name), "participant": new_participant()}


def sidebar() -> None:
    """With a workshop on: the join form (a room code and a display name, no account), or the room joined."""
    if not session.settings().workshop:
        return
    place = joined()
    if place is not None:
        if seen_room(place["code"]) is None:
            st.sidebar.warning(_("Room {code} has closed; your results stay on its board.").format(code=place["code"]))
        else:
            st.sidebar.caption(
                _("In room {code} as {name}: your benchmarks and quantizations go to the room board.").format(
                    code=place["code"], name=md_escape(place["name"], 60)
                )
            )
        if st.sidebar.button(_("Leave the room"), key="room_leave"):
            del st.session_state[_JOINED]
            st.rerun()
        return
    with st.sidebar.form("room_join"):
        st.markdown("**" + _("Join a workshop") + "**")
        asked = clean_code(st.query_params.get("room", ""))[:16]  # a link the teacher shared: ?room=CODE
        code = st.text_input(_("Room code"), value=asked, max_chars=16, key="room_code")
        name = st.text_input(
            _("Display name"), max_chars=40, key="room_name", help=_("Shown on the room board; no account, no email.")
        )
        if st.form_submit_button(_("Join"), key="room_join_button"):
            try:
                _join(code, name)
            except WorkbenchError as exc:
                st.error(md_escape(str(exc), 300))
            else:
                st.rerun()


def _place(job: Job[Any, Any]) -> str:
    chosen = targets.chosen() if job.targeted else LOCAL
    return chosen if chosen != LOCAL else socket.gethostname()


@RESULT_KEPT.register
def pool(job: Job[Any, Any], result: Any) -> None:
    """A joined participant's benchmark or quantization goes to the room board (called where ui.jobs.run keeps a
    result: ui.hooks.RESULT_KEPT): the speedup with its interval, the quantization chosen, and where it ran; never
    the model."""
    place = joined()
    if place is None or job.name not in (BENCH.name, QUANTIZE.name):
        return
    name, participant = place["name"], place["participant"]
    entry = (
        bench_entry(result, name, participant)
        if job.name == BENCH.name
        else quantize_entry(result, name, participant, _place(job))
    )
    if entry is None:
        return
    try:
        rooms().add(place["code"], entry)
        forget(place["code"])  # the participant sees their result on the board at once
    except (SQLAlchemyError, WorkbenchError) as exc:
        st.warning(_("Your result could not be added to the room board: {reason}").format(reason=md_escape(str(exc))))


def pool_browser(report: Any) -> None:
    """A joined participant's "In this browser" run goes to the room board (called once per run where
    ui/browser_bench.py saves it): the median with its interval and the kind of device, never the model."""
    place = joined()
    if place is None:
        return
    entry = browser_entry(report, place["name"], place["participant"])
    if entry is None:
        return
    try:
        rooms().add(place["code"], entry)
    except (SQLAlchemyError, WorkbenchError) as exc:
        st.warning(_("Your result could not be added to the room board: {reason}").format(reason=md_escape(str(exc))))
    else:
        forget(place["code"])  # the participant sees their result on the board at once


def _labels(rows: list[Spread]) -> list[str]:
    """One label a participant: the display name, numbered where two typed the same one."""
    seen: dict[str, int] = {}
    labels = []
    for r in rows:
        seen[r.name] = seen.get(r.name, 0) + 1
        labels.append(r.name if seen[r.name] == 1 else f"{r.name} ({seen[r.name]})")
    return labels


@escaped
def board_figure(rows: list[Spread], against: str = EAGER, model: str = TUTORIAL_MODEL) -> go.Figure:
    """Everyone's speedup against ``against``: each participant's median with its interval, and the tutorial's figure
    as a line in a room on the tutorial's model (beside another model's it says nothing of them)."""
    labels = _labels(rows)
    medians = [r.median for r in rows]
    plus = [(r.high - r.median) if r.high is not None else 0.0 for r in rows]
    minus = [(r.median - r.low) if r.low is not None else 0.0 for r in rows]
    fig = go.Figure(
        go.Scatter(
            x=medians,
            y=labels,
            mode="markers",
            marker={"size": 11},
            error_x={"type": "data", "symmetric": False, "array": plus, "arrayminus": minus},
            hovertext=[f"{label}: {m:.2f}× · {r.machine}" for label, m, r in zip(labels, medians, rows, strict=True)],
            hoverinfo="text",
            name=_("participants"),
        )
    )
    figure = tutorial_figure(against, model)
    if figure is not None:
        fig.add_vline(
            x=figure.value, line_dash="dash", annotation_text=_("the tutorial: {value}×").format(value=figure.value)
        )
    fig.update_layout(
        title=_(TITLES[against]),
        xaxis_title=_("speedup (×)"),
        yaxis_title=None,
        height=max(260, 28 * len(rows) + 120),
        showlegend=False,
    )
    return fig


def _device_label(group: DeviceGroup) -> str:
    count = ngettext("{n} participant", "{n} participants", group.count).format(n=group.count)
    return f"{group.device} ({count})"


@escaped
def device_figure(groups: list[DeviceGroup]) -> go.Figure:
    """The browsers' results by device: each participant's median as a point on their device's row (the spread),
    the device's middle as a diamond, and the count of participants in the row's label."""
    labels = [_device_label(g) for g in groups]
    ys = [label for g, label in zip(groups, labels, strict=True) for _m in g.medians]
    fig = go.Figure(
        go.Scatter(
            x=[m for g in groups for m in g.medians],
            y=ys,
            mode="markers",
            marker={"size": 10, "opacity": 0.7},
            hovertext=[f"{n}: {m:.3g} ms" for g in groups for n, m in zip(g.names, g.medians, strict=True)],
            hoverinfo="text",
            name=_("participants"),
        )
    )
    fig.add_trace(
        go.Scatter(
            x=[g.middle for g in groups],
            y=labels,
            mode="markers",
            marker={"size": 14, "symbol": "diamond-open", "line": {"width": 2}},
            hovertext=[f"{label}: {g.middle:.3g} ms" for g, label in zip(groups, labels, strict=True)],
            hoverinfo="text",
            name=_("the device's median"),
        )
    )
    fig.update_layout(
        title=_("In this browser: each participant's median call time, by device"),
        xaxis_title=_("median call time (ms)"),
        xaxis_rangemode="tozero",
        yaxis_title=None,
        yaxis_autorange="reversed",  # the fastest device on top, as in the table below
        height=max(240, 40 * len(groups) + 140),
        showlegend=False,
    )
    return fig


def devices_board(entries: list[Any]) -> None:
    """The participants' browser runs, grouped by the kind of device (browser, OS, cores, backend), with the spread
    and the count of each group; nothing when no one ran in a browser."""
    groups = device_groups(entries)
    if not groups:
        return
    st.markdown("**" + _("In their browsers, by device") + "**")
    st.plotly_chart(device_figure(groups), key="board_devices", config={"displaylogo": False})
    frame = pd.DataFrame(
        {
            _("device"): [g.device for g in groups],
            _("participants"): [g.count for g in groups],
            _("median (ms)"): [number(g.middle, 2) for g in groups],
            _("fastest–slowest (ms)"): [f"{number(min(g.medians), 2)}–{number(max(g.medians), 2)}" for g in groups],
        }
    )
    st.table(escaped_frame(frame), hide_index=True)


def _latency_board(entries: list[Entry]) -> None:
    """The benchmarks that measured no speedup (no baseline: one level, or providers side by side): each
    participant's fastest configuration and its median."""
    rows = latencies(entries)
    if not rows:
        return
    st.markdown("**" + _("Benchmarks without a baseline: the fastest configuration of each") + "**")
    frame = pd.DataFrame(
        {
            _("participant"): [r.name for r in rows],
            _("configuration"): [r.configuration for r in rows],
            _("median (ms)"): [number(r.median_ms, 3) for r in rows],
            _("machine or target"): [r.machine for r in rows],
        }
    )
    st.table(escaped_frame(frame), hide_index=True)


def _participants(title: str, counts: dict[str, int], what: str, none: str) -> None:
    """How many participants chose each ``what`` (``counts``), as a table under ``title``; ``none`` when empty."""
    st.markdown("**" + title + "**")
    if counts:
        frame = pd.DataFrame({what: list(counts), _("participants"): list(counts.values())})
        st.table(escaped_frame(frame), hide_index=True)
    else:
        st.caption(none)


def board(room: Room, shared: bool = False) -> None:
    """The room board: pooled results only (display names as text, never a model). ``shared``: as read at most a
    few seconds ago by any participant (the teacher's board reads them afresh)."""

    def read() -> list[Entry]:
        return rooms().entries(room.code)

    entries = _shared("entries", room.code, read) if shared else read()
    model = room.setup.model
    charts = [(against, rows) for against in BASELINES if (rows := spread(entries, against))]
    if not charts:  # an ONNX model's room measures against DISABLE_ALL; a browser's run has no baseline
        st.subheader(md_escape(empty_sentence(entries, model), 300), anchor=False)
    for against, rows in charts:
        st.subheader(md_escape(range_sentence(rows, against, model), 300), anchor=False)
        key = f"board_{room.code}" if against == EAGER else f"board_{room.code}_{BASELINES.index(against)}"
        st.plotly_chart(board_figure(rows, against, model), key=key, config={"displaylogo": False})
    _latency_board(entries)
    devices_board(entries)
    left, right = st.columns(2)
    picked, where = choices(entries), machines(entries)
    with left:
        _participants(_("Quantization chosen"), picked, _("variant"), _("No quantization yet."))
    with right:
        _participants(_("Where they ran"), where, _("machine or target"), _("No result yet."))
