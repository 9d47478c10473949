"""The Model page with a model's own code: the two files uploaded together, the class picked from the list read
from the source, its arguments given as JSON, and the card of the model built in the worker."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests import builders
from tests.app.pages import open_page


def _files(tmp_path: Path, module: str) -> list[tuple[str, bytes, str]]:
    code, weights = builders.user_code_upload(tmp_path / "src", module, width=4)
    return [(p.name, p.read_bytes(), "application/octet-stream") for p in (code, weights)]


def test_the_code_and_its_weights_become_the_current_model_once_the_class_and_arguments_are_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORKBENCH_START_SAMPLE", "")
    at = open_page(timeout=180)
    at.file_uploader(key="uploads").set_value(_files(tmp_path, "tinynet_page")).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    picker = at.selectbox(key="code_class")
    assert picker.options[1:] == [
        "Block — tinynet_page.py, line 6",
        "Net — tinynet_page.py, line 16 (uses no other class: likely the whole model)",
    ]
    assert "model" not in at.session_state  # nothing is built before the person says how
    picker.select_index(2).run()
    args = at.text_area(key="code_args_tinynet_page.Net")
    assert json.loads(args.value) == {"width": 8, "classes": 10, "dropout": 0.0}  # the defaults, read from the source
    args.set_value('{"width": 5}')
    at.button(key="code_build").click().run()
    assert "do not fit Net with these arguments" in at.error[0].value.replace("\\", "")  # saved at width 4
    at.text_area(key="code_args_tinynet_page.Net").set_value('{"width": 4}')
    at.button(key="code_build").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    record = at.session_state["model"]
    assert record.format == "code" and record.name == "Net" and record.code.args == '{"width": 4}'
    shown = [m.value for m in at.markdown] + [c.value for c in at.caption] + [i.value for i in at.info]
    assert any("Built Net" in str(text) for text in shown)  # the card's notes
    at.switch_page("app_pages/export.py").run()  # the dims its first layer (a Conv2d) leaves free are offered
    shape = next(t for t in at.text_input if t.key.startswith("shape_") and t.key.endswith("_x"))
    shape.set_value("1,3,16,16").run()
    ticked = {c.key.rsplit("_", 1)[1]: c.value for c in at.checkbox if c.key.startswith("dyn_")}
    assert ticked == {"0": True, "1": False, "2": True, "3": True}


def test_hosted_mode_refuses_a_models_code_without_listing_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_MODE", "hosted")
    monkeypatch.setenv("WORKBENCH_START_SAMPLE", "")
    at = open_page(timeout=180)
    assert "a model's own code (.py, package .zip) carry code and are refused" in "\n".join(c.value for c in at.caption)
    at.file_uploader(key="uploads").set_value(_files(tmp_path, "tinynet_hosted")).run()
    assert "does not accept them" in at.error[0].value.replace("\\", "")
    assert not any(s.key == "code_class" for s in at.selectbox)


def test_weights_dropped_after_the_code_join_it_and_nothing_runs_before_the_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORKBENCH_START_SAMPLE", "")
    at = open_page(timeout=60)
    code, weights = _files(tmp_path, "tinynet_halves")
    at.file_uploader(key="uploads").set_value([code]).run()
    assert [o.split(" — ")[0] for o in at.selectbox(key="code_class").options[1:]] == ["Block", "Net"]
    at.file_uploader(key="uploads").set_value([code, weights]).run()
    assert not any("replaces the earlier one" in c.value for c in at.caption)  # the two halves of one model
    assert not at.error and "model" not in at.session_state and at.button(key="code_build")
