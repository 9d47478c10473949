"""The Deploy page's load test for a language model: the new tokens and the prompt's length of its streams are
chosen on the page, kept across reruns, and are what the load test is asked for."""

from __future__ import annotations

from typing import Any

import pytest

from tests.app.pages import open_page
from tests.lm_models import LanguageModel


def test_a_language_models_load_test_streams_the_new_tokens_and_prompt_length_chosen_on_the_page(
    gpt2_past: LanguageModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    import streamlit as st

    import ui.serve_view
    from core.jobs import LOADTEST

    asked: list[Any] = []
    run = ui.serve_view.jobs.run

    def recorded(job: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
        if job is LOADTEST:
            asked.append(request)
            st.stop()  # what the load test would measure is not this test's
        return run(job, request, *args, **kwargs)

    monkeypatch.setattr(ui.serve_view.jobs, "run", recorded)
    monkeypatch.setenv("WORKBENCH_START_SAMPLE", "")
    at = open_page("deploy", ("gpt2.onnx", gpt2_past.onnx.read_bytes()))
    at.number_input(key="deploy_load_new_tokens").set_value(64)
    at.number_input(key="deploy_load_prompt_tokens").set_value(8).run()
    at.slider(key="deploy_load_duration").set_value(2).run()  # another choice: a rerun keeps both
    assert at.number_input(key="deploy_load_new_tokens").value == 64
    assert at.number_input(key="deploy_load_prompt_tokens").value == 8
    at.button(key="deploy_load_run").click().run()
    assert not at.exception, at.exception
    assert [(r.new_tokens, r.prompt_tokens, r.duration_s) for r in asked] == [(64, 8, 2.0)]
