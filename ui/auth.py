"""Who is using the app: signed in through OpenID Connect (``st.login``) or named by a trusted sign-in proxy.

``gate()`` runs before every page: with sign-in configured and nobody signed in, it shows the sign-in screen (or
the proxy's failure) and stops the run; once someone is signed in, the sidebar says who.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NoReturn

import streamlit as st
from streamlit.delta_generator import DeltaGenerator
from streamlit.errors import StreamlitAuthError

from core.errors import IdentityRefused, MissingExtraError
from core.extras import require
from core.i18n import _
from core.identity import ANONYMOUS, Identity, from_claims, from_headers
from ui import session
from ui.text import md_escape

__all__ = ["gate", "identity", "sidebar"]

# Headers well-known sign-in proxies set (oauth2-proxy, Pomerium, Authelia...): seen while auth is "", the
# page says they are ignored, so an operator who forgot the setting learns why everyone is anonymous.
_PROXY_HEADERS = ("X-Forwarded-Email", "X-Forwarded-User", "X-Auth-Request-Email", "X-Auth-Request-User", "Remote-User")


def _headers() -> Mapping[str, list[str]]:
    """The headers of the request that opened this session, each name (lower case) with every value it came with:
    ``st.context.headers[name]`` would give only the first of a repeated header, the one a client sent before the
    proxy added its own. Values arrive decoded as Latin-1; a proxy sends UTF-8, so they are read as that."""
    given = st.context.headers
    return {name.lower(): [_utf8(value) for value in given.get_all(name)] for name in given}


def _utf8(value: str) -> str:
    try:
        return value.encode("latin-1").decode("utf-8")
    except UnicodeError:
        return value  # not UTF-8: as it came (its odd characters are refused, never cleaned)


def identity() -> Identity:
    """The person using this session; anonymous when sign-in is off or nobody is signed in. Raises
    IdentityRefused when who it is cannot be told safely (``gate`` shows why and stops)."""
    settings = session.settings()
    if settings.auth == "oidc" and _oidc_configured():
        claims = st.user.to_dict()
        if not claims.get("is_logged_in"):
            return ANONYMOUS
        return from_claims(claims, settings.team_claim, settings.teams_by_domain, settings.trusted_issuers)
    if settings.auth == "proxy":
        return from_headers(
            _headers(), settings.proxy_user_header, settings.proxy_team_header, settings.teams_by_domain
        )
    return ANONYMOUS


def gate() -> Identity:
    """Let the run go on only for someone signed in (when sign-in is configured)."""
    settings = session.settings()
    if settings.auth == "oidc":
        try:
            require("team", "authlib", "Sign-in with OpenID Connect (auth = oidc)")
        except MissingExtraError as exc:
            _refuse(md_escape(str(exc), 2000))
    if settings.auth == "oidc" and not _oidc_configured():
        _refuse(
            "This instance is set to sign people in with OpenID Connect (auth = oidc), but `.streamlit/secrets.toml` "
            "has no `[auth]` section. Its operator must add one (see docs/hosting.md, Signing in), or unset auth."
        )
    try:
        me = identity()
    except IdentityRefused as exc:
        _refuse(md_escape(str(exc), 2000), can_sign_out=settings.auth == "oidc")
    if settings.auth == "oidc" and not me.signed_in:
        _sign_in_screen()
    if settings.auth == "proxy" and not me.signed_in:
        _refuse(
            "The sign-in proxy did not say who you are, so this instance cannot open. Open it through your "
            "organisation's sign-in address (not the server's own), or ask its operator to check the proxy."
        )
    return me


def sidebar(me: Identity) -> None:
    """Who is signed in (and the way out), or why a sign-in proxy's header was ignored."""
    if me.signed_in:
        _who(me, can_sign_out=session.settings().auth == "oidc")
        if session.settings().auth == "oidc":
            _back_to_the_link()
    elif not session.settings().auth:
        _note_ignored_proxy_header()


def _oidc_configured() -> bool:
    try:
        return st.secrets.load_if_toml_exists() and bool(st.secrets.get("auth"))
    except FileNotFoundError:  # a secrets file that does not parse
        return False


# Streamlit's sign-in always comes back to the app's root, so a link opened before signing in (a teammate's
# permalink) would be lost: the sign-in screen keeps the address in the tab's sessionStorage, and the first page
# after signing in goes back to it. Only a same-origin path is kept and followed.
_RETURN_JS = """
export default function(component) {
  const key = "workbench-return-to";
  const here = window.location.pathname + window.location.search;
  if (component.data && component.data.remember) {
    if (window.location.search) sessionStorage.setItem(key, here);
    return;
  }
  const back = sessionStorage.getItem(key);
  sessionStorage.removeItem(key);
  if (back && back.startsWith("/") && !back.startsWith("//") && back !== here) window.location.replace(back);
}
"""


@st.cache_resource
def _return_link() -> Any:
    return st.components.v2.component("workbench_return_link", js=_RETURN_JS)


def _back_to_the_link() -> None:
    """Once per session after signing in: back to the address the person opened before signing in, if any."""
    if not st.session_state.get("returned_to_link"):
        st.session_state["returned_to_link"] = True
        _return_link()(data={"remember": False}, key="return_link")


def _sign_in_screen() -> None:
    _return_link()(data={"remember": True}, key="return_link")
    with _card():
        st.write(_("Sign in to see your team's models and benchmark runs."))
        if st.button(_("Sign in"), type="primary", icon=":material/login:"):
            try:
                st.login()
            except StreamlitAuthError as exc:  # a key missing from [auth]; its message names the key, not values
                st.error(
                    _("Sign-in is not set up correctly on this instance: {error} Its operator must fix it.").format(
                        error=exc
                    )
                )
    st.stop()


def _refuse(message: str, can_sign_out: bool = False) -> NoReturn:
    with _card():
        st.error(message)
        if can_sign_out and st.button(_("Sign out"), icon=":material/logout:"):
            st.logout()
    st.stop()


def _card() -> DeltaGenerator:
    """A narrow box in the middle of the wide layout, under the app's name: what a stranger sees."""
    _left, middle, _right = st.columns([1, 2, 1])
    middle.title("ONNX Workbench")
    return middle.container(border=True)


def _plain(text: str, limit: int) -> str:
    """Escaped, an email kept from becoming a mailto link (md_escape puts a zero-width space before the @)."""
    return md_escape(text, limit)


def _who(me: Identity, can_sign_out: bool) -> None:
    line = _("Signed in as {name}").format(name=f"**{_plain(me.label, 80)}**")
    if me.user != me.label:
        line += f"  \n{_plain(me.user, 120)}"
    st.sidebar.caption(line)
    if can_sign_out and st.sidebar.button(_("Sign out"), icon=":material/logout:", type="tertiary"):
        st.logout()


def _note_ignored_proxy_header() -> None:
    headers = _headers()
    seen = [name for name in _PROXY_HEADERS if any(headers.get(name.lower(), []))]
    if seen:
        st.sidebar.caption(
            _("Sign-in is not configured here, so the {header} header is ignored and you are anonymous.").format(
                header=md_escape(seen[0])
            )
        )
