"""A session's workspace folder exists while its tab is open and is removed after the tab closes."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.e2e.conftest import wait_idle

pytestmark = pytest.mark.e2e


def test_closing_the_tab_removes_the_sessions_workspace(browser, app_url: str, data_dir: Path) -> None:  # type: ignore[no-untyped-def]
    root = data_dir / "workspaces"
    before = set(root.iterdir()) if root.exists() else set()
    context = browser.new_context()
    page = context.new_page()
    page.goto(app_url)
    wait_idle(page)
    mine = set(root.iterdir()) - before
    assert len(mine) == 1, "opening the app should create exactly one workspace"
    folder = mine.pop()
    context.close()
    deadline = time.monotonic() + 60
    while folder.exists() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not folder.exists(), "the workspace of a closed session should be removed"
