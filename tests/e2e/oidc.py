"""A local OpenID Connect provider (oidc-provider-mock) and an app server that signs people in through it.

The provider runs in a thread of the test process on 127.0.0.1; the app gets it as Streamlit's ``[auth]``
section in a secrets file of its own (``--secrets.files``), so no real secrets file is read or needed.
"""

from __future__ import annotations

import json
import secrets
import threading
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.e2e.conftest import serve_app, wait_idle

__all__ = ["SignedInApp", "oidc_provider", "signed_in_app_server"]


@contextmanager
def oidc_provider() -> Iterator[str]:
    """The provider's address, listening on 127.0.0.1 on a free port until the block ends."""
    import oidc_provider_mock
    import werkzeug.serving

    server = werkzeug.serving.make_server("127.0.0.1", 0, oidc_provider_mock.app(), threaded=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@dataclass(frozen=True)
class SignedInApp:
    url: str
    provider: str
    data_dir: Path  # the app's data folder (its history database, its model library)

    def sign_in(self, page, email: str, name: str) -> None:  # type: ignore[no-untyped-def]
        """Sign in as ``email`` (verified by the provider) called ``name``: the app's button, then the provider's
        form, back to the app."""
        self.authorize(page, email, {"email": email, "email_verified": True, "name": name})
        page.get_by_text(f"Signed in as {name}").wait_for(timeout=60_000)
        wait_idle(page)

    def authorize(self, page, sub: str, claims: dict[str, object]) -> None:  # type: ignore[no-untyped-def]
        """Give the provider's user ``sub`` these ``claims`` (the provider lets anyone choose them), and sign in as
        them: the app's button, then the provider's form; back to the app."""
        request = urllib.request.Request(
            f"{self.provider}/users/{urllib.parse.quote(sub)}",
            data=json.dumps(claims).encode(),
            method="PUT",
            headers={"Content-Type": "application/json"},
        )
        urllib.request.urlopen(request, timeout=10).close()
        page.get_by_role("button", name="Sign in").click()
        page.locator('input[name="sub"]').fill(sub)
        page.get_by_role("button", name="Authorize").click()


def _secrets_file(folder: Path, provider: str) -> Path:
    path = folder / "secrets.toml"
    path.write_text(
        "[auth]\n"
        'redirect_uri = "http://127.0.0.1:{port}/oauth2callback"\n'  # Streamlit fills in its own port
        f'cookie_secret = "{secrets.token_hex(16)}"\n'
        'client_id = "workbench-tests"\n'
        f'client_secret = "{secrets.token_hex(16)}"\n'
        f'server_metadata_url = "{provider}/.well-known/openid-configuration"\n'
    )
    return path


@contextmanager
def signed_in_app_server(folder: Path) -> Iterator[SignedInApp]:
    """The app with WORKBENCH_AUTH=oidc, its own data folder, and the test provider as its [auth] provider; the
    people of acme.test and of other.test are two teams."""
    with oidc_provider() as provider:
        env = {
            "WORKBENCH_AUTH": "oidc",
            "WORKBENCH_DATA_DIR": str(folder / "data"),
            "WORKBENCH_TEAM_DOMAINS": "acme.test, other.test",  # each a team named by its domain
        }
        with serve_app(folder, env, "--secrets.files", str(_secrets_file(folder, provider))) as url:
            yield SignedInApp(url, provider, folder / "data")
