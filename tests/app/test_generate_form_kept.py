"""The Generate panel keeps its form in the page's address: after a generation, a reload (a new session on the same
address) opens the form as it was used (the prompt, the new tokens, the batch, the runs, the PyTorch reference),
and a value the address should not hold (out of bounds, not a number) opens the default instead, never an error.
The model: tests/lm_models.py's GPT-2, built from a config with random weights."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from core.jobs import GENERATE
from tests.app.pages import APP, open_page
from tests.lm_models import LanguageModel


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_START_SAMPLE", "")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def _address(at: AppTest) -> dict[str, str]:
    return {k: v[0] if isinstance(v, list) else v for k, v in dict(at.query_params).items()}


def _reloaded(params: dict[str, str]) -> AppTest:
    """A new browser session on this address, on the Benchmark page."""
    at = AppTest.from_file(APP, default_timeout=300)
    at.query_params.update(params)
    at.run()
    at.switch_page("app_pages/benchmark.py").run()
    assert not at.exception, at.exception
    return at


def test_a_reload_opens_the_generate_form_as_it_was_used(gpt2_past: LanguageModel) -> None:
    at = open_page("benchmark", model=("gpt2.onnx", gpt2_past.onnx.read_bytes()), timeout=300)
    reference = str(gpt2_past.reference.resolve())
    at.text_input(key="generate_reference_path").set_value(reference).run()
    at.radio(key="generate_prompt_kind").set_value("ids").run()
    at.text_input(key="generate_prompt_ids").set_value("3, 4, 5")
    at.number_input(key="generate_new").set_value(3)
    at.number_input(key="generate_batch").set_value(2)
    at.number_input(key="generate_runs").set_value(1)
    at.number_input(key="generate_threads").set_value(1)
    next(b for b in at.button if b.label == "Generate").click()
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.session_state[GENERATE.name][1].eager is not None
    address = _address(at)
    assert address["gen_new"] == "3" and address["gen_ref"] == reference

    again = _reloaded(address)
    assert again.radio(key="generate_prompt_kind").value == "ids"
    assert again.text_input(key="generate_prompt_ids").value == "3, 4, 5"
    assert again.number_input(key="generate_new").value == 3
    assert again.number_input(key="generate_batch").value == 2
    assert again.number_input(key="generate_runs").value == 1
    assert again.text_input(key="generate_reference_path").value == reference
    assert again.session_state[GENERATE.name][1].plan.batch == 2  # and the results with them

    odd = _reloaded(address | {"gen_new": "999999", "gen_batch": "two", "gen_prompt": "nonsense"})
    assert odd.number_input(key="generate_new").value == 32 and odd.number_input(key="generate_batch").value == 1
    assert odd.radio(key="generate_prompt_kind").value == "length"
