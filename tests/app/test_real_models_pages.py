"""Real third-party models from packages through every page, by AppTest: a text recognizer, a scikit-learn
classifier and a character-level text model. Each page answers without an exception or an error box, and the
Benchmark runs on the plan's real sizes. The browser walks a detector and a voice-activity model the same way
(tests/e2e/test_real_models_e2e.py); these three take the same code paths there."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from tests.app.pages import open_page, run_benchmark, texts
from tests.real_models import real_model


def _no_failure(at: AppTest, where: str) -> None:
    assert not at.exception, (where, at.exception)
    assert not [e.value for e in at.error], (where, [e.value for e in at.error])


@pytest.mark.parametrize(
    ("name", "plan", "pages"),
    [
        pytest.param("ocr_rec", "", ["decode", "partition"], id="ocr_rec"),
        pytest.param("iris", "float_input 3×2", ["decode", "partition", "benchmark"], id="iris"),
        pytest.param(
            "tashkeel", "input_ids 1×128, random integers 0–53", ["decode", "partition", "benchmark"], id="tashkeel"
        ),
    ],
)
def test_a_real_model_through_every_page(
    name: str, plan: str, pages: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORKBENCH_START_SAMPLE", "")
    path = real_model(name)
    at = open_page(model=(path.name, path.read_bytes()), timeout=300)
    assert at.session_state["model"].name == path.stem
    _no_failure(at, "model")
    for page in pages:
        if page == "benchmark":
            run_benchmark(at, iterations=20, warmup=2)
            assert "95 % CI" in at.subheader[0].value.replace("\\", "")
            shown = texts(at)
            assert f"Runs on: {plan}" in shown, shown[:3000]
        else:
            at.switch_page(f"app_pages/{page}.py").run()
        _no_failure(at, page)
