"""What a session keeps: its workspace, its current model; and the process-wide settings and backend."""

from __future__ import annotations

import streamlit as st

from core.jobs import ProcessBackend
from core.model import ModelRecord
from core.settings import Settings, load_settings
from core.workspace import Workspace, sweep_workspaces

__all__ = ["settings", "backend", "workspace", "current_model", "set_current_model"]


@st.cache_resource
def settings() -> Settings:
    """Read once per server process (restart the app to apply a change)."""
    return load_settings()


@st.cache_resource
def backend() -> ProcessBackend:
    """The job backend; shared by every session because it holds no per-user state."""
    return ProcessBackend(settings())


def workspace() -> Workspace:
    """This session's folder; the first call per session also sweeps workspaces abandoned long ago."""
    ws = st.session_state.get("workspace")
    if ws is None or ws.closed:
        config = settings()
        sweep_workspaces(config.workspace_root, config.workspace_max_age_h * 3600)
        ws = Workspace(config.workspace_root)
        st.session_state["workspace"] = ws
    ws.touch()
    return ws


def current_model() -> ModelRecord | None:
    return st.session_state.get("model")


def set_current_model(record: ModelRecord) -> None:
    """Make ``record`` current and run the app again, so the sidebar (drawn before the page) shows it."""
    st.session_state["model"] = record
    st.rerun()
