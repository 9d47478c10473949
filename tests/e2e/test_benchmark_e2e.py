"""In Chromium: the start sample (TinyCNN), exported in one click, benchmarked with the defaults; the headline,
the charts, the same model run in this browser (ONNX Runtime Web), and the run in the History page."""

from __future__ import annotations

import re

import pytest

from tests.e2e.conftest import shot, wait_idle

pytestmark = pytest.mark.e2e


def test_default_benchmark_of_tinycnn_and_its_history(page) -> None:  # type: ignore[no-untyped-def]
    page.get_by_text("256,074").wait_for(timeout=60_000)  # a new session starts on TinyCNN (PyTorch)
    page.get_by_role("link", name="Benchmark", exact=True).click()
    page.get_by_role("button", name="Export with the defaults and continue").click()
    page.get_by_role("button", name="Run the benchmark").wait_for(timeout=120_000)
    wait_idle(page)
    page.get_by_role("button", name="Run the benchmark").click()
    # a settled number ("is 8.1× faster than"), or on a busy machine the interval, said to be noisy
    headline = page.get_by_text(re.compile(r"ONNX Runtime \(\w+\) (is|was|and) .*PyTorch eager.*95 % CI"))
    headline.wait_for(timeout=180_000)
    wait_idle(page)
    assert "95 % CI" in headline.inner_text()
    charts = page.locator('[data-testid="stPlotlyChart"]')
    charts.nth(2).wait_for(timeout=60_000)  # latency, speedup, distribution (drawn after the headline)
    assert charts.first.locator(".bars path").count() >= 3  # eager, DISABLE_ALL, ALL
    assert page.get_by_text("Why ONNX Runtime is often faster").is_visible()
    shot(page, "50-benchmark-tinycnn")

    # the same model in this browser (ONNX Runtime Web on WASM: headless Chromium has no GPU adapter), saved too
    calls = page.get_by_label("Timed calls in the browser")
    calls.fill("10")
    calls.press("Tab")
    wait_idle(page)
    page.get_by_role("button", name="Run it in this browser").click()
    page.get_by_text(re.compile(r"ORT Web WASM: median [\d.]+ ms per call")).wait_for(timeout=120_000)
    component = page.locator(".browser-bench")
    assert "no GPU adapter" in component.inner_text() and "Timed calls" in component.inner_text()
    saved = page.get_by_role("link", name=re.compile("Saved to the history as run"))
    saved.nth(1).wait_for(timeout=30_000)  # the link streams in just after the headline above it
    assert saved.count() == 2
    shot(page, "52-benchmark-in-this-browser")

    saved.first.click()
    page.get_by_text("Runs to compare").wait_for(timeout=60_000)
    wait_idle(page)
    assert page.get_by_text("tinycnn").first.is_visible()
    assert page.locator('[data-testid="stPlotlyChart"]').count() >= 1
    shot(page, "51-history")
