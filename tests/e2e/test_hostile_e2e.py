"""In Chromium: hostile uploads are refused, and the app keeps serving other users meanwhile (markup in a model's
strings is crawled across every page in test_markup_crawl_e2e)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.adversarial import hostile
from tests.e2e.conftest import shot, upload, wait_idle

pytestmark = pytest.mark.e2e


def _clear_uploads(page) -> None:  # type: ignore[no-untyped-def]
    buttons = page.locator('[data-testid="stFileChipDeleteBtn"] button')
    while buttons.count():
        buttons.first.click()
        page.wait_for_timeout(300)
    wait_idle(page)


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
