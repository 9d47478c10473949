"""In Chromium: a real third-party model from a package (PaddleOCR's text detector) through every page. Each
page must answer with something that means something: the plan's real sizes, numbers, no exception and no error
box; screenshots for a person to look at. The other packaged models (a voice-activity model benchmarked at batch 4
and quantized, text recognizers, classifiers, a layout detector, a text model) take the same pages by AppTest
(tests/app/test_real_models_pages.py), at a fraction of a browser's cost."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import go_to, shot, upload, wait_idle
from tests.real_models import real_model

pytestmark = pytest.mark.e2e


def _no_failure(page, where: str) -> None:  # type: ignore[no-untyped-def]
    assert page.locator('[data-testid="stException"]').count() == 0, where
    errors = page.locator('[data-testid="stAlertContentError"]').all_inner_texts()
    assert not errors, (where, errors)


def test_the_ocr_detector_through_every_page(page) -> None:  # type: ignore[no-untyped-def]
    """It is quantized at its real size by tests/app/test_quantize_page.py and on the command line."""
    upload(page, real_model("ocr_det"))
    _no_failure(page, "Model")
    shot(page, "70-ocr_det-model")
    for step in ["Decode", "Partition", "Benchmark", "History"]:
        if step == "Benchmark":
            go_to(page, "Benchmark")
            # the fewest the page takes (a call is a tenth of a second): the plan and a figure are what is checked
            page.get_by_label("Measured calls per configuration").fill("10")
            page.get_by_label("Warm-up calls", exact=True).fill("0")
            page.get_by_role("button", name="Run the benchmark").click()
            page.get_by_text("95 % CI").first.wait_for(timeout=300_000)
            wait_idle(page, timeout=300_000)
            plan = page.get_by_text("Runs on:").inner_text()  # the plan, as the page states it
            assert "x 1×3×640×640" in plan, plan
        else:
            go_to(page, step)
        _no_failure(page, step)
        shot(page, f"70-ocr_det-{step.lower()}")
