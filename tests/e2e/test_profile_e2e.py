"""In Chromium: the start sample (TinyCNN), exported in one click, profiled in both engines; the headline, the
op-type chart, the layer-by-layer comparison, the treemap and the graph coloured by latency. Then a real text
detector (PaddleOCR's, from rapidocr) profiled at a real image size, ONNX Runtime only."""

from __future__ import annotations

import re

import pytest

from tests.e2e.conftest import shot, upload, wait_idle
from tests.real_models import real_model

pytestmark = pytest.mark.e2e


def _profile(page, calls: int = 100) -> None:  # type: ignore[no-untyped-def]
    page.get_by_role("link", name="Profile", exact=True).click()
    page.get_by_role("heading", name="Profile", exact=True).wait_for(timeout=60_000)
    wait_idle(page)
    export = page.get_by_role("button", name="Export with the defaults and continue")
    if export.count():
        export.click()
        page.get_by_role("button", name="Profile", exact=True).wait_for(timeout=120_000)
        wait_idle(page)
    if calls != 100:
        page.get_by_label("Profiled calls per engine").fill(str(calls))
        page.get_by_label("Warm-up calls", exact=True).fill("2")
    page.get_by_role("button", name="Profile", exact=True).click()
    page.get_by_text(re.compile(r"^ONNX Runtime \(ALL\): .* ms per call")).wait_for(timeout=180_000)
    wait_idle(page)


def test_tinycnn_profile_in_both_engines(page) -> None:  # type: ignore[no-untyped-def]
    page.get_by_text("256,074").wait_for(timeout=60_000)
    _profile(page)
    headline = page.get_by_text(re.compile(r"^ONNX Runtime \(ALL\): ")).inner_text()
    assert "Conv takes the most" in headline and "PyTorch eager:" in headline
    assert page.get_by_text("Layer by layer", exact=True).is_visible()
    charts = page.locator('[data-testid="stPlotlyChart"]')
    charts.nth(2).wait_for(timeout=30_000)  # op types, layers, treemap
    page.locator(".graph-canvas[data-ready='true']").wait_for(timeout=30_000)  # and the graph, by latency
    legend = page.get_by_text(re.compile("≥ 20 % of the call|5–20 %"))  # the graph's legend: latency colours
    assert legend.first.is_visible()  # (its hottest bin: TinyCNN's Conv is at or just under 20 % of a call)
    shot(page, "80-profile-tinycnn")


def test_a_real_detector_is_profiled_at_a_real_image_size(page) -> None:  # type: ignore[no-untyped-def]
    upload(page, real_model("ocr_det"))
    page.get_by_text(re.compile("ch_PP-OCRv4_det_infer")).first.wait_for(timeout=60_000)
    _profile(page, calls=10)
    headline = page.get_by_text(re.compile(r"^ONNX Runtime \(ALL\): ")).inner_text()
    assert "Conv" in headline and "PyTorch eager" not in headline
    assert page.get_by_text(re.compile(r"Runs on: x 1×3×640×640")).is_visible()  # the plan's image size, not 1×1
    shot(page, "81-profile-detector")
