"""The language in Chromium: ``?lang=zh`` survives moving between pages and a reload, the browser's own language is
followed when the address names none, and the sidebar's picker switches back."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import shot, wait_idle

pytestmark = pytest.mark.e2e


def _sidebar(page) -> str:  # type: ignore[no-untyped-def]
    return page.locator('[data-testid="stSidebar"]').inner_text()


def test_chinese_in_the_address_survives_moving_from_model_to_decode_and_a_reload(browser, app_url: str) -> None:  # type: ignore[no-untyped-def]
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, locale="en-US")
    page = context.new_page()
    try:
        page.goto(f"{app_url}/?lang=zh")
        page.get_by_role("heading", name="模型", exact=True).wait_for(timeout=60_000)
        page.get_by_text("256,074").wait_for(timeout=60_000)
        wait_idle(page)
        assert page.get_by_role("tab", name="上传文件").is_visible()
        assert "当前模型" in _sidebar(page)
        shot(page, "lang-01-model-zh")

        page.get_by_role("link", name="解析", exact=True).click()  # the sidebar's navigation, in Chinese
        page.get_by_role("heading", name="解析", exact=True).wait_for(timeout=60_000)
        wait_idle(page)
        assert "/decode" in page.url and "lang=zh" in page.url
        sidebar = _sidebar(page)
        assert "当前模型" in sidebar and "图分区" in sidebar and "Current model" not in sidebar
        shot(page, "lang-02-decode-zh")

        page.reload()
        page.get_by_role("heading", name="解析", exact=True).wait_for(timeout=60_000)
        wait_idle(page)
        assert "lang=zh" in page.url and "当前模型" in _sidebar(page)

        page.get_by_role("link", name="模型", exact=True).click()
        page.get_by_role("heading", name="模型", exact=True).wait_for(timeout=60_000)
        wait_idle(page)
        page.locator('[data-testid="stSidebar"]').get_by_role("radio", name="English").click()
        page.get_by_role("heading", name="Model", exact=True).wait_for(timeout=60_000)
        wait_idle(page)
        assert "lang=en" in page.url and "Current model" in _sidebar(page)
    finally:
        context.close()


def test_a_chinese_browser_gets_chinese_without_lang_in_the_address(browser, app_url: str) -> None:  # type: ignore[no-untyped-def]
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, locale="zh-CN")
    page = context.new_page()
    try:
        page.goto(app_url)
        page.get_by_role("heading", name="模型", exact=True).wait_for(timeout=60_000)
        wait_idle(page)
        assert "lang=" not in page.url  # the browser chose; a link made here leaves the choice to its reader
    finally:
        context.close()
