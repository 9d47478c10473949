"""ONNX Workbench: the router. Page config, the walk-through navigation and the sidebar."""

from __future__ import annotations

import streamlit as st

from ui import auth, pages, session, targets
from ui.cards import sidebar_model

st.set_page_config(page_title="ONNX Workbench", page_icon="🧪", layout="wide")

# Hosted: a crash shows a generic message, never a traceback (paths, code); local: everything, for debugging.
st.set_option("client.showErrorDetails", "none" if session.settings().hosted else "full")
me = auth.gate()  # with sign-in configured: the sign-in screen for a stranger (and stop), else who is signed in
page = pages.navigation()  # the table of pages, ui/pages.py
session.start()  # this session's folder, and the model its address names (else the start sample)
if st.session_state.pop("link_gone", False):
    config = session.settings()
    hours = config.library_max_age_h if me.signed_in else config.workspace_max_age_h
    shared = " or not shared with you," if session.settings().auth else ""
    st.warning(
        f"The model this link names is not here any more (a model is kept for {hours:g} hours after its last use), "
        f"the link is incomplete,{shared} or it was deleted. Upload it again, or pick a sample."
    )
if "library_full" in st.session_state:
    st.warning(st.session_state.pop("library_full"))
st.sidebar.title("ONNX Workbench")
st.sidebar.caption("From a PyTorch or ONNX model to a measured deployment.")
auth.sidebar(me)
sidebar_model(session.current_model())
targets.picker()  # with a Ray cluster (cluster_address): where Benchmark, Profile, Quantize and Partition run
sandboxed, why_not = session.sandbox()
if not sandboxed and session.settings().require_sandbox:
    st.error(
        f"This instance opens uploaded models only in a sandbox, and {why_not}. Its operator must install "
        "bubblewrap (or, for a local instance, set WORKBENCH_REQUIRE_SANDBOX=false)."
    )
    st.stop()
if not sandboxed:
    st.sidebar.warning(f"No sandbox: {why_not}. Models are opened in worker processes without one.")
if session.settings().hosted:
    st.sidebar.caption("Hosted mode: uploads are limited and code archives are refused.")
page.run()
