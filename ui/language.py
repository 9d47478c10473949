"""The language of each run: ``?lang=`` in the address wins, then the one picked earlier in this session, then the
browser's; the sidebar's picker sets it and puts it in the address, where every page, reload and permalink keeps
it (core.i18n translates)."""

from __future__ import annotations

import streamlit as st

from core.i18n import LANGUAGES, _, from_locale, set_language

__all__ = ["choose", "param", "picker"]

_CHOSEN = "lang"  # session_state: a language asked for by the address or the picker (not the browser's guess)


def choose() -> str:
    """Bind this run to its language and return it. The address's ``?lang`` is read on every run, so a link
    with ``?lang=zh`` switches an open session too."""
    asked = st.query_params.get("lang", "")
    if asked in LANGUAGES:
        st.session_state[_CHOSEN] = asked
    code = st.session_state.get(_CHOSEN) or from_locale(st.context.locale)
    set_language(code)
    return code


def param() -> dict[str, str]:
    """``{"lang": code}`` for the address and permalinks when a language was asked for; else nothing, and the
    reader's browser decides."""
    code = st.session_state.get(_CHOSEN, "")
    return {"lang": code} if code else {}


def _picked() -> None:
    code = st.session_state.get("lang_picker")
    if code in LANGUAGES:
        st.session_state[_CHOSEN] = code
        st.query_params["lang"] = code


def picker(code: str) -> None:
    """The sidebar's language switch; a change reruns the app in the new language, kept in the address."""
    st.session_state["lang_picker"] = code
    st.sidebar.segmented_control(
        _("Language"),
        list(LANGUAGES),
        format_func=lambda code: LANGUAGES[code].name,
        key="lang_picker",
        on_change=_picked,
        label_visibility="collapsed",
    )
