"""Start the app headless on a free port and drive it with Debian's Chromium through Playwright."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from core.runtime.processes import stop

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts" / "e2e"
CHROMIUM = os.environ.get("WORKBENCH_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("workbench-data")


def wait_for_app(url: str, proc: subprocess.Popen, what: str, timeout: float = 60) -> None:  # type: ignore[type-arg]
    """Wait until the app at ``url`` answers its health check; RuntimeError (naming ``what`` to look at) when
    ``proc`` ends first or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok":
                return
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the app did not start; see {what}")
        time.sleep(0.25)


@contextmanager
def serve_app(log_dir: Path, env: dict[str, str], *args: str, script: str = "streamlit_app.py") -> Iterator[str]:
    """Start the app (or another ``script``, relative to the project) on a free port with ``env`` added to this
    environment (and more Streamlit ``args``)."""
    port = _free_port()
    log = (log_dir / "streamlit.log").open("w")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ui.server",  # as `python -m core serve` starts it
            "run",
            script,
            "--server.port",
            str(port),
            "--server.address",
            "127.0.0.1",
            # forget a closed tab's session after 2 s (default 120 s), so its cleanup can be seen in a test
            "--server.disconnectedSessionTTL",
            "2",
            *args,
        ],
        cwd=ROOT,
        env=dict(os.environ, **env),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_app(url, proc, log.name)
        yield url
    finally:
        stop(proc)
        log.close()


@pytest.fixture(scope="session")
def app_url(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Iterator[str]:
    # No pre-started worker here: each one imports torch (3-4 CPU-seconds on two cores), and one is started
    # again after every job, which made it a third of these tests' CPU. The hosted server of the sign-in and
    # team tests (signed_in_app) keeps the default, so the browser drives pre-started workers there.
    env = {"WORKBENCH_DATA_DIR": str(data_dir), "WORKBENCH_WARM_WORKERS": "0"}
    with serve_app(tmp_path_factory.mktemp("logs"), env) as url:
        yield url


@pytest.fixture(scope="session")
def signed_in_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """A second app server that signs people in through a local OpenID Connect provider (tests/e2e/oidc.py)."""
    from tests.e2e.oidc import signed_in_app_server

    with signed_in_app_server(tmp_path_factory.mktemp("oidc")) as app:
        yield app


# Streamlit's spinners and transitions keep the renderer painting while a test waits on a job: 0.12 CPU-s a
# second of Chromium's, half of it with them stopped (measured). Every page a test opens is shown without them;
# nothing a test checks moves.
STILL = """
document.addEventListener("DOMContentLoaded", () => {
  const style = document.createElement("style");
  style.textContent = "*, *::before, *::after { animation: none !important; transition: none !important; }";
  document.head.appendChild(style);
});
"""


class Lease:
    """A context lent to one test: it looks like a new one (its own pages, no cookies), but it is a context an
    earlier test closed, so Chromium's cache of Streamlit's scripts is warm. A first page load in a new context costs
    Chromium about 4 CPU-s; in one that loaded the app before, 0.3-1.5 (measured, this machine). Closing it closes
    its pages, forgets its cookies and permissions, and gives it back."""

    def __init__(self, pool: ContextPool, key: str, context: Any, viewport: dict[str, int]) -> None:
        self._pool, self._key, self._context, self._viewport = pool, key, context, viewport
        self._closed = False

    def new_page(self) -> Any:
        page = self._context.new_page()
        page.set_viewport_size(self._viewport)
        return page

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for page in list(self._context.pages):
            page.close()
        self._context.clear_cookies()
        self._context.clear_permissions()
        self._pool.give_back(self._key, self._context)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._context, name)


class ContextPool:
    """The session's Chromium, whose contexts show pages without animations (STILL) and are lent again once a test
    closes them (Lease). Contexts are kept apart by what a page cannot change (locale, offline, headers); the
    viewport is set on each page."""

    def __init__(self, browser: Any) -> None:
        self._browser = browser
        self._idle: dict[str, list[Any]] = {}

    def new_context(self, **options: Any) -> Lease:
        viewport = options.pop("viewport", None) or {"width": 1280, "height": 720}
        key = repr(sorted(options.items()))
        idle = self._idle.setdefault(key, [])
        if idle:
            context = idle.pop()
        else:
            context = self._browser.new_context(reduced_motion="reduce", **options)
            context.add_init_script(STILL)
        return Lease(self, key, context, viewport)

    def give_back(self, key: str, context: Any) -> None:
        self._idle[key].append(context)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._browser, name)


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail(f"Chromium is not at {CHROMIUM}; `make test` installs it (apt-get install chromium).")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield ContextPool(browser)
        browser.close()


@pytest.fixture
def page(browser, app_url: str):  # type: ignore[no-untyped-def]
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.goto(app_url)
    wait_idle(page)
    yield page
    context.close()


def wait_idle(page, timeout: float = 60_000) -> None:  # type: ignore[no-untyped-def]
    """Wait until Streamlit has finished running the script for the last interaction.

    First the rerun that an interaction triggers must begin (the app leaves "notRunning": a rerun requested, or
    running), awaited up to 600 ms, which is all the time a click with no rerun is given; then the app must stay
    idle for 400 ms, so that a run the script asks for next (st.rerun) is waited for too, even on a machine loaded
    enough that it starts late. Without that, a click can land between two runs and be lost."""
    idle = '[data-testid="stApp"][data-test-script-state="notRunning"]'
    with suppress(PlaywrightTimeout):
        page.wait_for_selector('[data-testid="stApp"]:not([data-test-script-state="notRunning"])', timeout=600)
    deadline = time.monotonic() + timeout / 1000
    while True:
        page.wait_for_selector(idle, timeout=max(1_000, (deadline - time.monotonic()) * 1000))
        page.wait_for_timeout(400)
        if page.locator(idle).count() or time.monotonic() > deadline:
            return


def shot(page, name: str) -> Path:  # type: ignore[no-untyped-def]
    """A screenshot of the whole page: Streamlit scrolls inside its main area, so the viewport is grown to fit."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    size = page.viewport_size
    height = page.evaluate(
        "() => Math.max(...[...document.querySelectorAll('[data-testid=stMain], section')].map(e => e.scrollHeight))"
    )
    page.set_viewport_size({"width": size["width"], "height": min(max(int(height) + 40, size["height"]), 8000)})
    page.wait_for_timeout(300)
    page.screenshot(path=str(path), full_page=True)
    page.set_viewport_size(size)
    return path


def offline_page(browser, width: int = 1400, height: int = 900):  # type: ignore[no-untyped-def]
    """A page of a context with no network (a file the app wrote, opened alone), and the errors its scripts raise,
    as they come: (context, page, errors)."""
    context = browser.new_context(viewport={"width": width, "height": height}, offline=True)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    return context, page, errors


def upload(page, *paths: Path, timeout: float = 120_000) -> None:  # type: ignore[no-untyped-def]
    """Put files in the Model page's upload box and wait for the app to read them."""
    page.locator('[data-testid="stFileUploader"] input[type="file"]').first.set_input_files([str(p) for p in paths])
    page.wait_for_timeout(500)
    wait_idle(page, timeout=timeout)


def choose(page, box: str, option: str) -> None:  # type: ignore[no-untyped-def]
    """Pick ``option`` in the select box labelled ``box``. Right after a file was put in a form's uploader, the
    first click on a select box of that form can go to the uploader's input, not open the list: it is clicked
    again until the list is open."""
    wanted = page.get_by_role("option", name=option, exact=True)
    for _attempt in range(3):
        page.get_by_role("combobox", name=box).click()
        try:
            wanted.wait_for(timeout=3_000)
            break
        except PlaywrightTimeout:
            continue
    wanted.click()


def go_to(page, name: str, timeout: float = 120_000) -> None:  # type: ignore[no-untyped-def]
    """Open a step of the walk-through from the sidebar and wait for its run to finish."""
    page.get_by_role("link", name=name, exact=True).click()
    page.get_by_role("heading", name=name, exact=True).wait_for(timeout=60_000)
    wait_idle(page, timeout=timeout)
