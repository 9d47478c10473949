"""Nothing lost on reload: the current model's link is in the page's address, and a new session opened on that
address (a reload, a bookmark, a teammate given the link) has the same model; without its key, nobody has it."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core.jobs import BENCH
from tests import builders
from tests.app.pages import APP, open_page, run_benchmark


def _reopened(params: dict[str, str]) -> AppTest:
    """A new browser session on an address with these query parameters."""
    at = AppTest.from_file(APP, default_timeout=180)
    at.query_params.update(params)
    at.run()
    assert not at.exception, at.exception
    return at


def test_an_uploaded_model_survives_a_reload(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("WORKBENCH_START_SAMPLE", "tinycnn")
    at = open_page(model=("relu.onnx", builders.write(builders.relu_model(), tmp_path / "relu.onnx").read_bytes()))
    record = at.session_state["model"]
    link = dict(at.query_params)
    assert link["model"] == [record.id] or link["model"] == record.id
    params = {k: v[0] if isinstance(v, list) else v for k, v in link.items()}
    again = _reopened(params)
    reopened = again.session_state["model"]
    assert reopened.id == record.id and reopened.name == record.name  # not the start sample
    assert Path(reopened.path).is_file() and "models" in Path(reopened.path).parts  # kept in the library
    again.switch_page("app_pages/decode.py").run()
    assert not again.exception  # and every page works on it

    stranger = _reopened({"model": record.id, "key": "guessed"})
    assert stranger.session_state["model"].name == "tinycnn"  # the start sample, and a message
    assert any("not here any more" in w.value for w in stranger.warning)


def test_a_sample_and_an_export_of_it_keep_their_link() -> None:
    at = open_page()
    assert dict(at.query_params).get("sample") in ("tinycnn", ["tinycnn"])
    at.switch_page("app_pages/benchmark.py").run()
    at.button(key="export_defaults").click().run()
    exported = at.session_state["model"]
    params = {k: v[0] if isinstance(v, list) else v for k, v in dict(at.query_params).items()}
    assert params["model"] == exported.id
    again = _reopened(params)
    assert again.session_state["model"].id == exported.id
    assert again.session_state["torch_model"].name == "tinycnn"  # its PyTorch original too: eager still measurable


def test_a_benchmark_is_still_there_after_a_reload() -> None:
    at = open_page(timeout=300)
    run_benchmark(at, iterations=20, warmup=1)
    measured = at.session_state[BENCH.name][1]
    params = {k: v[0] if isinstance(v, list) else v for k, v in dict(at.query_params).items()}

    again = _reopened(params)
    again.switch_page("app_pages/benchmark.py").run()
    assert not again.exception
    assert again.session_state[BENCH.name][1].id == measured.id  # shown at once, not measured again
    assert again.subheader[0].value == at.subheader[0].value
    stranger = _reopened({**params, "key": "guessed"})
    stranger.switch_page("app_pages/benchmark.py").run()
    assert BENCH.name not in stranger.session_state  # a wrong key opens neither the model nor its results
