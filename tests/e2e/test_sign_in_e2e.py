"""Signing in on a hosted instance: through OpenID Connect (a local test provider), or a trusted proxy's header."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.conftest import serve_app, shot, wait_idle

pytestmark = [pytest.mark.e2e]

VIEWPORT = {"width": 1400, "height": 1000}


@pytest.fixture
def context(browser):  # type: ignore[no-untyped-def]
    context = browser.new_context(viewport=VIEWPORT)
    yield context
    context.close()


def test_a_stranger_signs_in_stays_signed_in_across_a_reload_and_signs_out(context, signed_in_app) -> None:  # type: ignore[no-untyped-def]
    page = context.new_page()
    page.goto(signed_in_app.url)
    wait_idle(page)
    page.get_by_role("button", name="Sign in").wait_for()
    assert page.get_by_text("Sign in to see your team's models").is_visible()
    assert page.get_by_role("link", name="Model").count() == 0  # no walk-through before signing in
    shot(page, "90-sign-in")

    signed_in_app.sign_in(page, "alice@acme.test", "Alice Example")
    sidebar = page.get_by_test_id("stSidebar")
    assert sidebar.get_by_text("Signed in as Alice Example").is_visible()
    assert sidebar.get_by_text("alice@acme.test").is_visible()
    page.get_by_role("heading", name="Model", exact=True).wait_for()
    shot(page, "91-signed-in")

    page.reload()
    wait_idle(page)
    page.get_by_text("Signed in as Alice Example").wait_for()
    page.get_by_role("heading", name="Model", exact=True).wait_for()

    sidebar.get_by_role("button", name="Sign out").click()
    page.get_by_role("button", name="End session").click()  # the provider asks to end its session too
    page.get_by_role("button", name="Sign in").wait_for(timeout=60_000)
    wait_idle(page)
    assert page.get_by_text("Signed in as").count() == 0


def test_an_email_the_provider_has_not_verified_does_not_sign_anyone_in(context, signed_in_app) -> None:  # type: ignore[no-untyped-def]
    """At a provider where people choose their email, Mallory gives hers as Alice's: the app refuses, says why,
    and offers to sign out."""
    page = context.new_page()
    page.goto(signed_in_app.url)
    wait_idle(page)
    signed_in_app.authorize(page, "mallory", {"email": "alice@acme.test", "name": "Alice Example"})
    page.get_by_text("does not say it is verified").wait_for(timeout=60_000)
    wait_idle(page)
    assert page.get_by_text("Signed in as").count() == 0 and page.get_by_role("link", name="Model").count() == 0
    shot(page, "90b-unverified-email-refused")
    page.get_by_role("button", name="Sign out").click()
    page.get_by_role("button", name="End session").click()
    page.get_by_role("button", name="Sign in").wait_for(timeout=60_000)


@pytest.fixture(scope="module")
def proxy_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """An app behind a (pretend) sign-in proxy that names the person in X-Forwarded-Email."""
    folder = tmp_path_factory.mktemp("proxy")
    env = {
        "WORKBENCH_AUTH": "proxy",
        "WORKBENCH_PROXY_USER_HEADER": "X-Forwarded-Email",
        "WORKBENCH_PROXY_TEAM_HEADER": "X-Forwarded-Groups",
        "WORKBENCH_TEAM_DOMAINS": "acme.test",
        "WORKBENCH_DATA_DIR": str(folder / "data"),
        "WORKBENCH_START_SAMPLE": "",
        "WORKBENCH_WARM_WORKERS": "0",
    }
    with serve_app(folder, env) as url:
        yield url


def _open(browser, url: str, headers: dict[str, str]):  # type: ignore[no-untyped-def]
    context = browser.new_context(viewport=VIEWPORT, extra_http_headers=headers)
    page = context.new_page()
    page.goto(url)
    wait_idle(page)
    return page


def test_the_proxy_header_names_the_person_when_configured(browser, proxy_app: str) -> None:  # type: ignore[no-untyped-def]
    page = _open(browser, proxy_app, {"X-Forwarded-Email": "bob@acme.test", "X-Forwarded-Groups": "vision"})
    try:
        page.get_by_text("Signed in as bob@acme.test").wait_for()
        assert page.get_by_role("button", name="Sign out").count() == 0  # the proxy signs people out, not us
        shot(page, "92-proxy-signed-in")
    finally:
        page.context.close()


def test_without_the_header_a_proxy_instance_refuses(browser, proxy_app: str) -> None:  # type: ignore[no-untyped-def]
    page = _open(browser, proxy_app, {})
    try:
        page.get_by_text("The sign-in proxy did not say who you are").wait_for()
        assert page.get_by_role("link", name="Model").count() == 0
        shot(page, "93-proxy-refused")
    finally:
        page.context.close()


def test_without_sign_in_configured_the_header_is_ignored(browser, app_url: str) -> None:  # type: ignore[no-untyped-def]
    page = _open(browser, app_url, {"X-Forwarded-Email": "mallory@acme.test"})
    try:
        page.get_by_text("the X-Forwarded-Email header is ignored").wait_for()
        assert page.get_by_text("Signed in as").count() == 0
        assert page.get_by_text("mallory").count() == 0
    finally:
        page.context.close()


def _first_run(url: str, headers: list[tuple[str, str]]) -> list[str]:
    """What the app's first run shows to a session opened with these request headers (a name may come twice),
    through Streamlit's own websocket as the browser opens it: the text of every heading, alert and markdown."""
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
    from websockets.sync.client import connect

    stream = url.replace("http://", "ws://") + "/_stcore/stream"
    with connect(stream, subprotocols=["streamlit"], origin=url, additional_headers=headers) as ws:  # type: ignore[arg-type]
        rerun = BackMsg()
        rerun.rerun_script.query_string = ""
        ws.send(rerun.SerializeToString())
        shown = []
        while True:
            message = ForwardMsg()
            message.ParseFromString(ws.recv(timeout=60))
            if message.WhichOneof("type") == "script_finished":
                return shown
            if message.WhichOneof("type") == "delta" and message.delta.WhichOneof("type") == "new_element":
                element = message.delta.new_element
                body = getattr(element, element.WhichOneof("type") or "", None)
                shown.append(str(getattr(body, "body", "")).replace("\\", ""))


def test_a_repeated_or_listed_proxy_header_is_refused_on_a_real_request(proxy_app: str) -> None:
    """The client sends X-Forwarded-Email itself and the proxy adds the real one after it (or the client sends a
    list): the app cannot tell which is true, so it lets nobody in, and says why."""
    alice, mallory = ("X-Forwarded-Email", "alice@acme.test"), ("X-Forwarded-Email", "mallory@evil.test")
    for headers in ([alice, mallory], [mallory, alice]):
        shown = "\n".join(_first_run(proxy_app, headers))
        assert "X-Forwarded-Email header arrived 2 times" in shown and "Signed in as" not in shown
    shown = "\n".join(_first_run(proxy_app, [("X-Forwarded-Email", "mallory@evil.test, alice@acme.test")]))
    assert "holds a list" in shown and "Signed in as" not in shown
    shown = "\n".join(_first_run(proxy_app, [mallory]))  # once, the proxy's alone: signed in
    assert "Signed in as **mallory\u200b@evil.test**" in shown and "arrived" not in shown
