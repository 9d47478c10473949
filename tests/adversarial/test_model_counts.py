"""Every count in a model (nodes, initializers, value infos, attributes, functions, metadata, opset imports) is
held to a limit and refused by name with the count, before anything is done per item: by intake, and by the
Decode and graph jobs too (a model let in under other limits). A million empty initializers in 15 MB cost
minutes when each was checked, decoded and drawn; now they cost the parse."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from core.decode import DecodeRequest
from core.errors import LimitExceededError
from core.graph.records import GraphRequest
from core.jobs import DECODE, GRAPH, run
from core.model.intake import IntakeRequest, describe_files
from core.settings import IntakeLimits
from tests.adversarial.counts import COUNT_CASES, CountCase, count_model, empty_initializers
from tests.app.conftest import APP
from tests.cli import cli


@pytest.fixture(scope="module")
def million(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A million empty initializers: a 15 MB file."""
    (path,) = empty_initializers(tmp_path_factory.mktemp("million"))
    return path


@pytest.mark.parametrize("case", COUNT_CASES, ids=lambda c: c.name)
def test_every_count_past_its_limit_is_refused_by_name_with_the_count(case: CountCase, tmp_path: Path) -> None:
    path = tmp_path / "many.onnx"
    path.write_bytes(case.data)
    overrides: dict[str, Any] = {case.limit: 100} if case.limit else {}
    limits = dataclasses.replace(IntakeLimits(), **overrides)
    with pytest.raises(LimitExceededError) as refused:
        describe_files(IntakeRequest(paths=[str(path)]), limits=limits)
    message = str(refused.value)
    assert case.refused in message, message
    # the way out: the setting that raises the limit, or, for what no model needs, what to do instead
    assert ("setting WORKBENCH_MAX_" in message) if case.limit else ("re-export the model" in message)


def test_the_same_model_under_the_limits_is_read(tmp_path: Path) -> None:
    path = tmp_path / "some.onnx"
    path.write_bytes(next(c for c in COUNT_CASES if c.name == "initializers").data)
    assert describe_files(IntakeRequest(paths=[str(path)])).node_count == 1


def test_inspect_refuses_a_million_empty_initializers_and_decodes_nothing(million: Path, jobs_run: list[str]) -> None:
    done = cli("inspect", str(million))
    assert done.returncode == 2 and "holds 1,000,000 initializers" in done.stderr, done.stderr
    assert "WORKBENCH_MAX_INITIALIZERS" in done.stderr and done.stdout == ""
    assert jobs_run == ["decode.inspect"]  # one worker: its decoding comes after the intake, which refused


def test_the_decode_and_graph_jobs_refuse_past_the_limits_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A model kept from before, under other limits, reaches the Decode page's jobs without intake: they hold
    the server's limits too."""
    path = tmp_path / "small.onnx"
    path.write_bytes(count_model())
    monkeypatch.setenv("WORKBENCH_MAX_VALUE_INFOS", "1")  # x and y: two
    with pytest.raises(LimitExceededError, match="holds 2 value infos"):
        run(DECODE, DecodeRequest(path=str(path)))
    with pytest.raises(LimitExceededError, match="holds 2 value infos"):
        run(GRAPH, GraphRequest(path=str(path)))


def test_the_decode_page_answers_on_a_million_empty_initializers(
    million: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The upload is refused with the count, and the Decode page then asks for a model (it used to decode for
    more than ten minutes)."""
    monkeypatch.setenv("WORKBENCH_START_SAMPLE", "")
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.file_uploader(key="uploads").set_value((million.name, million.read_bytes(), "application/octet-stream")).run()
    assert any("1,000,000 initializers" in e.value.replace("\\", "") for e in at.error), [e.value for e in at.error]
    at.switch_page("app_pages/decode.py").run()
    assert not at.exception
    assert "model" not in at.session_state or at.session_state["model"] is None
    assert any("Decoding needs an ONNX model" in i.value for i in at.info)


def test_the_decode_page_refuses_a_model_its_server_now_limits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Uploaded under one limit, decoded under a lower one (the operator lowered it; a kept model is opened):
    the page shows the refusal with the count instead of decoding."""
    import streamlit as st

    monkeypatch.setenv("WORKBENCH_START_SAMPLE", "")
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.file_uploader(key="uploads").set_value(("small.onnx", count_model(), "application/octet-stream")).run()
    assert at.session_state["model"] is not None
    monkeypatch.setenv("WORKBENCH_MAX_VALUE_INFOS", "1")  # x and y: two
    st.cache_resource.clear()  # settings are read once per server: this is the server after the change
    at.switch_page("app_pages/decode.py").run()
    assert not at.exception
    errors = [e.value.replace("\\", "") for e in at.error]
    assert any("2 value infos" in e and "WORKBENCH_MAX_VALUE_INFOS" in e for e in errors), errors
