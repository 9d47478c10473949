"""In Chromium: markup in every string of a model stays text on every page, hostile uploads are refused, and
the app keeps serving other users meanwhile."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.adversarial import hostile
from tests.e2e.conftest import go_to, shot, upload, wait_idle

pytestmark = pytest.mark.e2e


def _clear_uploads(page) -> None:  # type: ignore[no-untyped-def]
    buttons = page.locator('[data-testid="stFileChipDeleteBtn"] button')
    while buttons.count():
        buttons.first.click()
        page.wait_for_timeout(300)
    wait_idle(page)


def test_markup_in_a_model_stays_text_on_every_page(page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    title = page.title()
    upload(page, *hostile.script_names(tmp_path))
    page.get_by_text("document.title='pwned'").first.wait_for(timeout=60_000)
    for name in ("Decode", "Partition"):
        go_to(page, name)
        page.locator(".graph-canvas[data-ready='true']").wait_for(timeout=60_000)
        page.get_by_placeholder("Find a node by name or op").fill("pwned")  # the graph view finds them by name
        assert "pwned" in page.locator(".gv-results").inner_text()
        assert page.get_by_text("pwned").count() > 0  # the names are shown...
        assert page.title() == title and dialogs == []  # ...and never run
        assert page.locator("img[src=x]").count() == 0
        assert page.locator("script", has_text="pwned").count() == 0
        shot(page, f"70-hostile-names-{name.lower()}")


def test_hostile_uploads_are_refused_and_others_keep_working(browser, app_url: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    victim = browser.new_context(viewport={"width": 1400, "height": 1000})
    other = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        page = victim.new_page()
        page.goto(app_url)
        wait_idle(page)
        cases = [
            (hostile.pickle_exploit(".pt"), "posix.system"),
            (hostile.zip_bomb, "bomb"),
            (hostile.external_dotdot, "outside the model's folder"),
        ]
        for n, (build, words) in enumerate(cases):
            folder = tmp_path / f"case{n}"
            folder.mkdir()
            _clear_uploads(page)  # the upload box keeps earlier files; a user removes them first
            upload(page, *build(folder))
            page.locator('[data-testid="stAlert"]').filter(has_text=words).first.wait_for(timeout=60_000)
            # meanwhile another user opens the app: it answers, with its own start sample
            bystander = other.new_page()
            bystander.goto(app_url)
            bystander.get_by_text("256,074").wait_for(timeout=60_000)
            bystander.close()
        shot(page, "71-hostile-refused")
        assert not (tmp_path / "canary").exists()
    finally:
        victim.close()
        other.close()
