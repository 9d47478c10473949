"""ONNX Workbench: the router. Page config, the language, the walk-through navigation and the sidebar."""

from __future__ import annotations

import streamlit as st

from core.i18n import _, ngettext, number
from ui import (  # noqa: F401
    auth,
    classroom_view,
    decode_view,
    language,
    pages,
    partition_view,
    session,
    targets,
    upgrade_view,
)
from ui.cards import sidebar_model

# the views that cut across pages registered their hooks as they were imported (ui/hooks.py): the classroom's
# pages and board, the upgrade offered under an old model's refusal, Decode's and Partition's jobs started ahead
session.freeze_imports()  # what was imported stays out of the garbage collector's walk after every run
st.set_page_config(page_title="ONNX Workbench", page_icon=pages.PAGE_ICON, layout="wide")

# Hosted: a crash shows a generic message, never a traceback (paths, code); local: everything, for debugging.
st.set_option("client.showErrorDetails", "none" if session.settings().hosted else "full")
lang = language.choose()  # ?lang= in the address, else the one picked, else the browser's (ui/language.py)
me = auth.gate()  # with sign-in configured: the sign-in screen for a stranger (and stop), else who is signed in
page = pages.navigation()  # the table of pages, ui/pages.py
session.start()  # this session's folder, and the model its address names (else the start sample)
if st.session_state.pop("link_gone", False):
    config = session.settings()
    hours = config.library_max_age_h if me.signed_in else config.workspace_max_age_h
    kept = ngettext(  # a whole number of hours takes its plural form; a fraction takes the plural too
        "a model is kept for {hours} hour after its last use",
        "a model is kept for {hours} hours after its last use",
        int(hours) if hours == int(hours) else 2,
    ).format(hours=number(hours))
    message = (
        _(
            "The model this link names is not here any more ({kept}), the link is incomplete, or it is not shared "
            "with you, or it was deleted. Upload it again, or pick a sample."
        )
        if session.settings().auth
        else _(
            "The model this link names is not here any more ({kept}), the link is incomplete, or it was deleted. "
            "Upload it again, or pick a sample."
        )
    )
    st.warning(message.format(kept=kept))
if "library_full" in st.session_state:
    st.warning(st.session_state.pop("library_full"))
st.sidebar.title("ONNX Workbench")
st.sidebar.caption(_("From a PyTorch or ONNX model to a measured deployment."))
language.picker(lang)
classroom_view.sidebar()  # with a workshop on: join a room by its code, or the room joined
auth.sidebar(me)
sidebar_model(session.current_model())
targets.picker()  # with a Ray cluster (cluster_address): where Benchmark, Profile, Quantize and Partition run
sandboxed, why_not = session.sandbox()
if not sandboxed and session.settings().require_sandbox:
    st.error(
        _(
            "This instance opens uploaded models only in a sandbox, and {reason}. Its operator must install "
            "bubblewrap (or, for a local instance, set WORKBENCH_REQUIRE_SANDBOX=false)."
        ).format(reason=_(why_not))
    )
    st.stop()
if not sandboxed:
    st.sidebar.warning(
        _("No sandbox: {reason}. Models are opened in worker processes without one.").format(reason=_(why_not))
    )
if session.settings().hosted:
    st.sidebar.caption(_("Hosted mode: uploads are limited and code archives are refused."))
if pages.closed(page):  # typed into the address: a participant's room keeps this page shut
    st.info(_("Your teacher has not opened this page in this room."))
    pages.link(pages.first_open())
    st.stop()
try:
    page.run()
finally:  # it ran until now, even when it stopped or asked for a rerun (core.jobs.refill.Foreground)
    session.backend().page_runs()
