"""In Chromium: quantize TinyCNN dynamically and see the comparison with the float32 original, then tune its
session settings on the Deploy page, download a server for it and load it."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import go_to, shot, wait_idle

pytestmark = pytest.mark.e2e


def test_dynamic_int8_of_tinycnn_then_its_tuned_session_settings(page) -> None:  # type: ignore[no-untyped-def]
    page.get_by_text("256,074").wait_for(timeout=60_000)
    page.get_by_role("link", name="Quantize", exact=True).click()
    page.get_by_role("button", name="Export with the defaults and continue").click()
    page.get_by_role("button", name="Quantize and compare").wait_for(timeout=120_000)
    wait_idle(page)
    # only the dynamic variant: remove the two other defaults
    variants = page.locator('[data-testid="stMultiSelect"]').first
    for label in ("Static INT8, QDQ, MinMax", "FP16 (float32 inputs and outputs kept)"):
        variants.get_by_role("button", name=f"Remove {label}").click()
    page.get_by_role("button", name="Quantize and compare").click()
    page.get_by_text("Size against latency").wait_for(timeout=180_000)
    wait_idle(page)
    table = page.locator('[data-testid="stDataFrame"]').first
    table.wait_for()
    assert page.get_by_text("Where the integer ops ran").is_visible()
    assert page.locator('[data-testid="stTable"]').get_by_text("ConvInteger").first.is_visible()
    assert page.get_by_role("button", name="Make it the current model").count() == 0  # fp32 is chosen first
    shot(page, "60-quantize-dynamic")
    # then the Deploy page on the same export: its session settings tuned within a short budget, no variants
    go_to(page, "Deploy")
    page.get_by_role("button", name="Tune", exact=True).wait_for(timeout=60_000)
    variants = page.locator('[data-testid="stMultiSelect"]').first
    for label in ("Dynamic INT8 (QInt8 weights)", "FP16 (float32 inputs and outputs kept)"):
        variants.get_by_role("button", name=f"Remove {label}").click()
    budget = page.get_by_label("Time budget (s)")
    budget.fill("5")
    budget.press("Enter")
    page.get_by_role("button", name="Tune", exact=True).click()
    page.get_by_role("heading", name="Tuned session settings").wait_for(timeout=120_000)
    wait_idle(page)
    shot(page, "65-deploy-tuned")
    stay, use = "ONNX Runtime's defaults stay", "as fast as ONNX Runtime's defaults"
    assert page.get_by_text(stay).or_(page.get_by_text(use)).first.is_visible()
    assert page.locator('[data-testid="stPlotlyChart"]').first.is_visible()  # every candidate's median
    assert page.get_by_text("The chosen configuration").is_visible()
    assert page.get_by_text('"intra_op_threads"').first.is_visible()
    # the server for it, as a zip, and its latency under load at one concurrency for a second
    page.get_by_role("button", name="Prepare the server (.zip)").click()
    with page.expect_download(timeout=120_000) as download:
        page.get_by_role("button", name="Download the server (.zip)").click(timeout=120_000)
    assert download.value.suggested_filename == "server.zip"
    load = page.locator('[data-testid="stMultiSelect"]').filter(has_text="16")
    for n in ("4", "16"):
        load.get_by_role("button", name=f"Remove {n}").click()
    page.get_by_role("slider", name="Seconds per concurrency").press("Home")  # 1 s
    page.get_by_role("button", name="Run the load test").click()
    page.get_by_text("ONNX Runtime in-process, one call at a time").wait_for(timeout=120_000)
    wait_idle(page)
    shot(page, "66-deploy-load")
    table = page.locator('[data-testid="stTable"]').filter(has_text="requests/s")
    assert table.get_by_text("0", exact=True).count() >= 1  # no errors
    assert page.locator('[data-testid="stPlotlyChart"]').count() >= 3  # the candidates, latency and throughput
