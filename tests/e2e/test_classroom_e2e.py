"""A classroom in Chromium: the teacher opens a room with the facilitator key, two participants join from the
sidebar with its code (one with a hostile display name), and the board the teacher projects shows their pooled
results with the name as text; the CSV holds it as text too."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from core.classroom import Entry, Rooms
from core.store import Store
from tests.e2e.conftest import serve_app, shot, wait_idle

pytestmark = pytest.mark.e2e

KEY = "a long facilitator phrase"
HOSTILE = "<img src=x onerror=alert(1)>Eve"


@pytest.fixture(scope="module")
def workshop(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    data = tmp_path_factory.mktemp("classroom-data")
    env = {
        "WORKBENCH_DATA_DIR": str(data),
        "WORKBENCH_WARM_WORKERS": "0",
        "WORKBENCH_WORKSHOP": "true",
        "WORKBENCH_FACILITATOR_KEY": KEY,
    }
    with serve_app(tmp_path_factory.mktemp("classroom-logs"), env) as url:
        yield url, data


def _join(browser, url: str, code: str, name: str):  # type: ignore[no-untyped-def]
    context = browser.new_context(viewport={"width": 1300, "height": 900})
    page = context.new_page()
    page.goto(f"{url}/?room={code}")  # the link the teacher shares fills the code in
    page.get_by_text("256,074").wait_for(timeout=60_000)
    page.get_by_role("textbox", name="Display name").fill(name)
    page.get_by_role("button", name="Join", exact=True).click()
    page.get_by_text(f"In room {code} as").wait_for(timeout=60_000)
    wait_idle(page)
    return context, page


def test_a_teacher_and_two_participants_share_a_board_that_shows_names_as_text(browser, workshop) -> None:  # type: ignore[no-untyped-def]
    url, data = workshop
    teachers = browser.new_context(viewport={"width": 1400, "height": 1000})
    teacher = teachers.new_page()
    teacher.goto(f"{url}/classroom")
    teacher.get_by_role("textbox", name="Facilitator key").fill(KEY)
    teacher.get_by_role("button", name="Open the Classroom page").click()
    teacher.get_by_role("button", name="Open a room").click()
    teacher.get_by_text("Room code:").wait_for(timeout=60_000)
    code = re.search(r"Room code: (\w{6})", teacher.get_by_text("Room code:").inner_text()).group(1)

    contexts = []
    for name in (HOSTILE, "Bob"):
        context, page = _join(browser, url, code, name)
        contexts.append(context)
        sidebar = page.locator('[data-testid="stSidebar"]').inner_text()
        assert name in sidebar  # as typed, as text
        assert page.locator("img[src='x']").count() == 0
    rooms = Rooms(Store(f"sqlite:///{data / 'history.sqlite'}").engine)
    for name, participant, value in ((HOSTILE, "p1", 4.2), ("Bob", "p2", 7.9)):
        rooms.add(code, Entry(name=name, participant=participant, kind="benchmark", created_at=datetime.now(),
                              value=value, low=value - 0.2, high=value + 0.2, machine="lab"))  # fmt: skip

    teacher.reload()
    teacher.get_by_role("textbox", name="Facilitator key").fill(KEY)  # a reload is a new session: the key again
    teacher.get_by_role("button", name="Open the Classroom page").click()
    teacher.get_by_text(f"Room code: {code}").wait_for(timeout=60_000)  # the room still open, found again
    teacher.get_by_text("this room measured 4.2–7.9×").wait_for(timeout=60_000)
    teacher.locator('[data-testid="stPlotlyChart"]').get_by_text(HOSTILE).first.wait_for(timeout=60_000)
    assert teacher.locator("img[src='x']").count() == 0
    shot(teacher, "classroom-01-teacher")
    for context in (teachers, *contexts):
        context.close()
