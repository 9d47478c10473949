"""A new user in Chromium: opens the app, picks a sample, uploads an ONNX file, meets a clear error."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import builders
from tests.e2e.conftest import shot, upload, wait_idle

pytestmark = pytest.mark.e2e


def sidebar_text(page) -> str:  # type: ignore[no-untyped-def]
    return page.locator('[data-testid="stSidebar"]').inner_text()


def test_new_user_picks_a_sample_then_uploads_an_onnx_model(page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # a new session starts on the TinyCNN sample
    page.get_by_text("256,074").wait_for(timeout=60_000)
    wait_idle(page)
    assert page.get_by_text("starts with this sample").is_visible()
    assert "tinycnn" in sidebar_text(page)
    assert page.locator("table").get_by_text("1×3×112×112").is_visible()
    page.get_by_role("link", name="Next: export it to ONNX").wait_for(timeout=30_000)  # the footer comes last
    shot(page, "01-start-tinycnn")

    page.get_by_role("tab", name="Pick a sample").click()
    page.get_by_role("tabpanel", name="Pick a sample").get_by_test_id("stSelectbox").click()
    page.get_by_role("option", name="Tiny Transformer encoder").click()
    wait_idle(page)
    page.get_by_role("button", name="Use this sample").click()
    page.get_by_text("66,944").wait_for(timeout=60_000)
    wait_idle(page)
    assert "transformer" in sidebar_text(page)
    assert page.locator("table").get_by_text("seq (axis 1)").first.is_visible()
    shot(page, "02-sample-transformer")

    page.get_by_role("tab", name="Upload a file").click()
    model = builders.write(builders.mixed_inputs_model(), tmp_path / "bert_like.onnx")
    upload(page, model)
    page.get_by_text("input_ids").first.wait_for(timeout=60_000)
    wait_idle(page)  # the sidebar and the next steps come later in the same run
    sidebar = sidebar_text(page)
    assert "bert_like" in sidebar and "opset 17" in sidebar and "ONNX model" in sidebar
    assert page.get_by_role("link", name="Next: decode it, from the first bytes to the graph").is_visible()
    shot(page, "03-uploaded-onnx")


def test_upload_errors_are_specific_and_the_app_keeps_working(page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    empty = tmp_path / "empty.onnx"
    empty.write_bytes(b"")
    upload(page, empty)
    alert = page.locator('[data-testid="stAlert"]').filter(has_text="is empty")
    alert.wait_for(timeout=60_000)
    shot(page, "04-empty-upload-error")

    # a model with external data, uploaded as the .onnx and its data file together
    main = builders.save_with_external_data(builders.chain_model(20), tmp_path / "ext")
    upload(page, main, main.with_name("model.onnx.data"))
    page.get_by_text("model.onnx.data").first.wait_for(timeout=60_000)  # the upload box lists it at once...
    wait_idle(page, timeout=120_000)  # ...so wait for the run that reads it to finish
    assert page.locator('[data-testid="stAlert"]').filter(has_text="is empty").count() == 0
    shot(page, "05-external-data")


def test_a_reload_keeps_the_uploaded_model_and_its_link_opens_it_elsewhere(page, browser, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    page.get_by_text("256,074").wait_for(timeout=60_000)
    model = builders.write(builders.mixed_inputs_model(), tmp_path / "kept_model.onnx")
    upload(page, model)
    page.get_by_text("input_ids").first.wait_for(timeout=60_000)
    page.get_by_role("link", name="Decode", exact=True).click()
    wait_idle(page)
    assert "model=" in page.url and "key=" in page.url  # the link travels with every page
    link = page.url
    page.reload()
    wait_idle(page)
    page.get_by_text("ModelProto").first.wait_for(timeout=60_000)  # still on Decode, decoding the same model
    assert "kept_model" in sidebar_text(page) and "tinycnn" not in sidebar_text(page)
    shot(page, "04-after-reload")

    teammates, strangers = browser.new_context(viewport={"width": 1400, "height": 1000}), browser.new_context()
    teammate = teammates.new_page()  # a teammate given the link
    teammate.goto(link)
    wait_idle(teammate)
    assert "kept_model" in sidebar_text(teammate)
    stranger = strangers.new_page()  # the same id with a guessed key: nothing
    stranger.goto(link.split("key=")[0] + "key=guessed")
    wait_idle(stranger)
    assert "kept_model" not in sidebar_text(stranger) and stranger.get_by_text("not here any more").is_visible()
    teammates.close()  # back to the pool (page.context would close Chromium's own context)
    strangers.close()
