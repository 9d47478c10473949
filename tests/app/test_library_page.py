"""The model library on the Model page: a person's kept models, renamed, tagged, shared with their team and
deleted; a teammate opens a shared model by its permalink, a stranger does not."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from tests import builders
from tests.app.pages import APP, texts, upload


def _session(params: dict[str, str] | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=180)
    at.query_params.update(params or {})
    at.run()
    assert not at.exception, at.exception
    return at


def _link(at: AppTest) -> dict[str, str]:
    return {k: v[0] if isinstance(v, list) else v for k, v in dict(at.query_params).items()}


def test_a_person_renames_tags_and_deletes_a_kept_model(tmp_path: Path) -> None:
    at = _session()
    upload(at, "relu.onnx", builders.write(builders.relu_model(), tmp_path / "relu.onnx").read_bytes())
    key = _link(at)["key"]
    assert "1 model" in texts(at)
    at.selectbox(key="library_mine").set_value(key).run()
    assert any(key in c.value for c in at.code)  # its permalink
    at.text_input(key=f"lib_title_{key}").set_value("detector <b>v2</b>")
    at.text_input(key=f"lib_tags_{key}").set_value("prod, int8")
    at.button(key=f"lib_save_{key}").click().run()
    assert not at.exception
    table = at.dataframe[0].value
    assert list(table["name"]) == ["detector <b>v2</b>"] and list(table["tags"]) == ["int8, prod"]
    assert at.button(key=f"lib_delete_{key}").disabled  # not before the box is ticked
    at.checkbox(key=f"lib_confirm_{key}").check().run()
    at.button(key=f"lib_delete_{key}").click().run()
    assert not at.exception and "Nothing in your library yet" in texts(at)
    assert _session(_link(at) | {"key": key}).session_state["model"].name == "tinycnn"  # its link opens nothing


def test_a_teammate_opens_a_shared_model_and_a_stranger_does_not(tmp_path: Path, as_person: dict[str, str]) -> None:
    as_person["email"] = "alice@acme.test"
    alice = _session()
    upload(alice, "relu.onnx", builders.write(builders.relu_model(), tmp_path / "relu.onnx").read_bytes())
    link = _link(alice)
    record = alice.session_state["model"]

    as_person["email"] = "bob@acme.test"
    assert _session(link).session_state["model"].id != record.id  # not shared yet: the key alone is not enough

    as_person["email"] = "alice@acme.test"
    alice.selectbox(key="library_mine").set_value(link["key"]).run()
    alice.toggle(key=f"lib_share_{link['key']}").set_value(True)
    alice.button(key=f"lib_save_{link['key']}").click().run()
    assert not alice.exception

    as_person["email"] = "bob@acme.test"
    bob = _session(link)
    assert bob.session_state["model"].id == record.id
    assert "Shared by your team (acme.test)" in texts(bob) and "alice@acme.test" in set(
        bob.dataframe[-1].value["owner"]
    )

    as_person["email"] = "eve@other.test"
    eve = _session(link)
    assert eve.session_state["model"].id != record.id
    assert any("not shared with you" in w.value for w in eve.warning)
