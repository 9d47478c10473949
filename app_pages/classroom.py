"""Classroom: the teacher sets a room (the model, the open pages, the language), opens it with a code, projects
its board, exports or clears its results and closes it; a participant sees the board of their room."""

from __future__ import annotations

import hmac

import streamlit as st

from core.classroom import RoomSetup, to_csv
from core.errors import WorkbenchError
from core.i18n import LANGUAGES, _
from core.model.zoo import SAMPLES
from ui import classroom_view, session
from ui.pages import PAGES
from ui.text import md_escape

st.title(_("Classroom"))
config = session.settings()
if not config.workshop:
    st.info(_("No workshop is on. Its operator turns one on with WORKBENCH_WORKSHOP=true (docs/classroom.md)."))
    st.stop()

place = classroom_view.joined()
if place is not None:  # a participant: their room's pooled results, nothing else
    joined_room = classroom_view.seen_room(place["code"])
    if joined_room is None:
        st.info(_("Room {code} has closed.").format(code=place["code"]))
        st.stop()
    classroom_view.board(joined_room, shared=True)
    st.stop()

if not config.facilitator_key:
    st.error(_("This page needs a facilitator key: set WORKBENCH_FACILITATOR_KEY and restart the app."))
    st.stop()
if not st.session_state.get("facilitator_in"):
    st.markdown(_("The teacher sets up the room here. Participants join from the sidebar with the room's code."))
    with st.form("facilitator"):
        key = st.text_input(_("Facilitator key"), type="password", key="facilitator_key")
        if st.form_submit_button(_("Open the Classroom page"), key="facilitator_button"):
            if hmac.compare_digest(key.encode(), config.facilitator_key.encode()):
                st.session_state["facilitator_in"] = True
                st.rerun()
            st.error(_("That is not the facilitator key."))
    st.stop()

saved = classroom_view.rooms().setups()
st.header(_("The room"), anchor=False)
if saved:
    st.caption(_("Open again with the same setting (a new code):"))
    for n, setup in enumerate(saved[:5]):
        if st.button(_("Open '{name}' again").format(name=md_escape(setup.name, 80)), key=f"reopen_{n}"):
            st.session_state["teacher_room"] = classroom_view.rooms().open(setup, config.room_hours).code

walk = {p.step: p.title for p in PAGES if p.step != "classroom"}
models = {f"sample:{name}": _("the sample {name}").format(name=name) for name in SAMPLES}
link = st.session_state.get("link") or {}
if link.get("model") and link.get("key"):
    current = session.current_model()
    label = current.name if current is not None else link["model"][:12]
    models[f"library:{link['model']}:{link['key']}"] = _("the current model, {name}").format(name=label)
languages = {"": _("each browser's own"), **{code: row.name for code, row in LANGUAGES.items()}}
with st.form("room_setup"):
    name = st.text_input(_("Name of this setting"), value=saved[0].name if saved else _("Workshop"), max_chars=128)
    model = st.selectbox(
        _("The model everyone starts from"), list(models), format_func=models.__getitem__, key="room_model"
    )
    open_pages = st.multiselect(
        _("Pages open to participants"),
        list(walk),
        default=list(walk),
        format_func=lambda s: _(walk[s]),
        key="room_pages",
    )
    lang = st.radio(
        _("Language"), list(languages), format_func=languages.__getitem__, horizontal=True, key="room_language"
    )
    if st.form_submit_button(_("Open a room"), type="primary", key="room_open"):
        setup = RoomSetup(name=name.strip() or _("Workshop"), model=model, pages=tuple(open_pages), language=lang)
        try:
            st.session_state["teacher_room"] = classroom_view.rooms().open(setup, config.room_hours).code
        except WorkbenchError as exc:
            st.error(md_escape(str(exc), 300))

if "teacher_room" not in st.session_state:  # a reload, another tab: the room still open from a saved setting
    still_open = (classroom_view.rooms().latest(s.name) for s in saved)
    st.session_state["teacher_room"] = next((r.code for r in still_open if r is not None), "")
code = st.session_state.get("teacher_room", "")
room = classroom_view.room_of(code) if code else None
if room is None:
    st.info(_("No room is open. Set it above and press Open a room."))
    st.stop()

st.markdown(
    _("Room code: **{code}** · open until {until} UTC · setting '{name}'").format(
        code=room.code, until=room.expires_at.strftime("%H:%M"), name=md_escape(room.setup.name, 80)
    )
)
st.caption(
    _("Participants type the code and a display name in the sidebar, or open the app with ?room={code}.").format(
        code=room.code
    )
)
classroom_view.board(room)
left, mid, right = st.columns(3)
left.download_button(
    _("Download the results (CSV)"),
    to_csv(room.code, classroom_view.rooms().entries(room.code)),
    file_name=f"room-{room.code}.csv",
    mime="text/csv",
    on_click="ignore",
)
if mid.button(_("Clear the results"), key="room_clear"):
    classroom_view.rooms().clear(room.code)
    classroom_view.forget(room.code)  # the participants' boards empty at their next page run
    st.rerun()
if right.button(_("Close the room"), key="room_close"):
    classroom_view.rooms().close(room.code)
    classroom_view.forget(room.code)  # the participants' pages open up at their next run
    del st.session_state["teacher_room"]
    st.rerun()
