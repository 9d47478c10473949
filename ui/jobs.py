"""Run a worker job from a page: progress and queue place in a status box, cancel by any interaction."""

from __future__ import annotations

import time
from typing import Any

import streamlit as st

from core.jobs import JobSpec, submit
from ui import session

__all__ = ["run_with_status"]


def run_with_status(name: str, args: dict[str, Any], label: str) -> Any:
    """Run job ``name`` and return its result; its errors (WorkbenchError subclasses) propagate.

    Streamlit stops this script when the user clicks anything (that is how "Cancel" works); the
    ``finally`` then kills the worker, so nothing keeps running for a page nobody is looking at.
    """
    handle = submit(JobSpec(name, args), session.backend())
    started = time.monotonic()
    try:
        with st.status(label, expanded=False) as status:
            bar = st.progress(0.0, text="starting the worker…")
            while not handle.done():
                position = handle.queue_position
                if position is not None:
                    text = f"waiting for the machine: {position} job(s) ahead of yours"
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
            return result
    finally:
        if not handle.done():
            handle.cancel()
