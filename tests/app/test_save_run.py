"""A run the history cannot take: the page keeps the results and says why they were not saved."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from core.errors import StoreError


def _page() -> None:
    import streamlit as st

    from ui import session

    st.session_state["saved"] = session.save_run(st.session_state["run"])


class _Gone:
    def save(self, run: object, owner: str = "", team: str = "") -> None:
        raise StoreError("the database at db.example is gone; the run waits in the spool")


def test_a_run_the_history_cannot_take_is_said_and_the_results_stay(monkeypatch: pytest.MonkeyPatch) -> None:
    from ui import session

    monkeypatch.setattr(session, "store", lambda: _Gone())
    at = AppTest.from_function(_page, default_timeout=60)
    at.session_state["run"] = object()
    at.run()
    assert not at.exception, at.exception
    assert at.session_state["saved"] is False
    [warning] = at.warning
    assert warning.value == (
        "The results are shown but were not saved to the history: the database at db\\.example is gone; the run "
        "waits in the spool"
    )
