"""The sign-in gate without a browser: what a page shows when sign-in is off, or configured only half-way."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest


def _page() -> None:
    import streamlit as st

    from ui.auth import gate

    me = gate()
    st.write(f"page for {me.label}")


def test_without_sign_in_the_page_runs_for_anonymous_and_says_nothing_new() -> None:
    at = AppTest.from_function(_page).run()
    assert not at.exception and not at.error
    assert [m.value for m in at.markdown] == ["page for anonymous"]
    assert not at.sidebar.caption


def test_oidc_without_an_auth_section_stops_with_what_the_operator_must_add(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_AUTH", "oidc")
    at = AppTest.from_function(_page).run()
    (error,) = at.error
    assert "[auth]" in error.value and "secrets.toml" in error.value
    assert not [m for m in at.markdown if "page for" in m.value]


def test_oidc_with_an_auth_section_shows_only_the_sign_in_screen(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_AUTH", "oidc")
    at = AppTest.from_function(_page)
    at.secrets["auth"] = {"redirect_uri": "http://127.0.0.1:8501/oauth2callback", "cookie_secret": "test-only"}
    at.run()
    assert not at.exception and not at.error
    assert [b.label for b in at.button] == ["Sign in"]
    assert not [m for m in at.markdown if "page for" in m.value]


def test_an_identity_that_cannot_be_told_safely_stops_the_page_with_why(as_person: dict[str, str]) -> None:
    as_person["email"] = "ali\u200bce@acme.test"
    at = AppTest.from_function(_page, default_timeout=30).run()
    (error,) = at.error
    shown = error.value.replace("\\", "")
    assert "U+200B ZERO WIDTH SPACE" in shown and "never turns a name into another" in shown
    assert not [m for m in at.markdown if "page for" in m.value] and not at.button  # a proxy's: no sign-out here
    as_person["email"] = "Alice@ACME.test"
    at = AppTest.from_function(_page, default_timeout=30).run()
    assert not at.error and [m.value for m in at.markdown if "page for" in m.value] == ["page for alice@acme.test"]
