"""In Chromium: real third-party models from packages (a text detector and a voice-activity model) through every
page. Each page must answer with something that means something: the plan's real sizes, numbers, no exception
and no error box; screenshots for a person to look at. A text recognizer, a scikit-learn classifier and a
character-level text model take the same pages by AppTest (tests/app/test_real_models_pages.py)."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import go_to, shot, upload, wait_idle
from tests.real_models import real_model

pytestmark = pytest.mark.e2e


def _no_failure(page, where: str) -> None:  # type: ignore[no-untyped-def]
    assert page.locator('[data-testid="stException"]').count() == 0, where
    errors = page.locator('[data-testid="stAlertContentError"]').all_inner_texts()
    assert not errors, (where, errors)


def _benchmark(page, batches: list[str]) -> None:  # type: ignore[no-untyped-def]
    go_to(page, "Benchmark")
    for batch in batches:  # besides batch 1, chosen in the "Batch sizes" box
        page.locator('[data-testid="stMultiSelect"]').filter(has_text="Batch sizes").click()
        page.get_by_role("option", name=batch, exact=True).click()
        page.keyboard.press("Escape")
    page.get_by_label("Measured calls per configuration").fill("20")
    page.get_by_label("Warm-up calls").fill("2")
    page.get_by_role("button", name="Run the benchmark").click()
    page.get_by_text("95 % CI").first.wait_for(timeout=300_000)
    wait_idle(page, timeout=300_000)


def _quantize(page) -> None:  # type: ignore[no-untyped-def]
    go_to(page, "Quantize")
    page.get_by_label("Measured calls per model").fill("10")
    page.get_by_label("Held-out samples for accuracy").fill("2")
    page.get_by_label("Generated calibration samples").fill("2")
    page.get_by_role("button", name="Quantize and compare").click()
    page.get_by_text("Accuracy tolerance:", exact=False).first.wait_for(timeout=300_000)
    wait_idle(page, timeout=300_000)


@pytest.mark.parametrize(
    ("name", "expect"),
    [
        # the detector is quantized at its real size by tests/app/test_quantize_page.py and on the command line
        ("ocr_det", {"plan": "x 1×3×640×640", "pages": ["Decode", "Partition", "Benchmark", "History"]}),
        (
            "silero_vad",
            {
                "plan": "state 2×1×128",
                "pages": ["Decode", "Partition", "Benchmark", "Quantize", "History"],
                "batches": ["4"],
            },
        ),
    ],
)
def test_a_real_model_through_every_page(page, name: str, expect: dict) -> None:  # type: ignore[no-untyped-def, type-arg]
    upload(page, real_model(name))
    _no_failure(page, "Model")
    shot(page, f"70-{name}-model")
    for step in expect["pages"]:
        if step == "Benchmark":
            _benchmark(page, expect.get("batches", []))
            plan = page.get_by_text("Runs on:").inner_text()  # the plan, as the page states it
            assert expect["plan"] in plan, plan
            for batch in expect.get("batches", []):  # the state's batch axis moved with the audio's
                assert page.get_by_text(f"batch {batch}").first.is_visible()
        elif step == "Quantize":
            _quantize(page)
        else:
            go_to(page, step)
        _no_failure(page, step)
        shot(page, f"70-{name}-{step.lower()}")
