"""In Chromium (headless, --disable-gpu: no WebGPU adapter), the page `python -m core browser-bench` writes, opened
from file:// offline: ONNX Runtime Web runs the model on WASM in a worker, says in words that there is no GPU
adapter, agrees with the server's ONNX Runtime, and its statistics are core.runtime.stats's on the same calls."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.browser import browser_report
from core.i18n import _, using
from core.runtime.stats import summarize
from tests import builders
from tests.cli import cli
from tests.e2e.conftest import ARTIFACTS, offline_page

pytestmark = [pytest.mark.e2e]

SAMPLE = [3.1, 2.9, 3.0, 10.5, 3.3, 2.8, 3.05, 2.95, 4.0, 3.2, 3.15]


def test_the_sendable_page_benchmarks_the_model_on_wasm_and_says_why_not_webgpu(browser, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    model = builders.write(builders.mixed_inputs_model(), tmp_path / "mixed.onnx")  # int64, bool and float inputs
    html = tmp_path / "bench.html"
    made = cli("--lang", "zh", "browser-bench", str(model), "-o", str(html), "--iters", "20", "--warmup", "2")
    assert made.returncode == 0, made.stderr

    context, page, errors = offline_page(browser, 1000, 1200)
    page.goto(html.as_uri())
    page.locator("html[data-ready='true'], html[data-error]").wait_for(timeout=20_000)
    assert page.get_attribute("html", "data-error") is None and not errors
    result = json.loads(page.get_attribute("html", "data-result") or "{}")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "80-browser-bench-zh.png"), full_page=True)

    assert result["backend"] == "wasm" and result["environment"]["simd"] is True
    assert len(result["calls_ms"]) == 20 and result["runtime_ms"] > 0 and result["max_abs_diff"] < 1e-6
    assert result["environment"]["gpu_adapter"] == "" and result["environment"]["threads"] == 1
    note = page.locator("[data-fallback]")
    with using("zh"):  # in the page's language, from the catalog
        assert note.inner_text() == _(
            "WebGPU gave no GPU adapter (no GPU, or the GPU is blocked or turned off), so the model ran on WASM."
        )
        assert page.locator("h1").inner_text() == _("{model} in this browser").format(model="mixed")

    # the page's statistics are core.runtime.stats's, on its own calls and on a fixed sample
    for calls in (result["calls_ms"], SAMPLE):
        js = page.evaluate("(calls) => BrowserBench.summarize(calls)", calls)
        py = summarize(calls)
        for name in ("median", "p90", "p99", "median_low", "median_high"):
            assert js[name] == pytest.approx(getattr(py, name), rel=1e-12), name
    assert result["ci_ms"] == pytest.approx(
        [summarize(result["calls_ms"]).median_low, summarize(result["calls_ms"]).median_high]
    )
    report = browser_report(result)  # what History's import saves
    assert report.results[0].median_ms == pytest.approx(result["median_ms"])
    assert report.environment.place.endswith("· Linux (browser)")
    context.close()
