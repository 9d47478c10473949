"""One anonymous visitor of a hosted instance cannot evict everyone's anonymous permalinks: when the room the
anonymous keepings share is full, a new keeping is refused (the model is still theirs for the session, and the
page says why), and nobody else's is dropped; nor can they fill that room (a session takes its share of it); nor
rename or delete a model whose permalink they were sent. Sessions of one server, through AppTest."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from core.identity import ANONYMOUS
from core.model.library import NotYourModel
from tests import builders
from tests.app.conftest import APP
from tests.app.pages import texts, upload
from ui import session


@pytest.fixture(autouse=True)
def hosted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_MODE", "hosted")
    monkeypatch.setenv("WORKBENCH_REQUIRE_SANDBOX", "false")  # what is tested here is the library, not the sandbox
    monkeypatch.setenv("WORKBENCH_START_SAMPLE", "")


def _visitor(params: dict[str, str] | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params.update(params or {})
    return at.run()


def test_a_visitor_who_fills_the_anonymous_library_drops_nobody_elses_link(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_LIBRARY_QUOTA_MB", "1")  # room for one of these models, not two
    monkeypatch.setenv("WORKBENCH_LIBRARY_SESSION_SHARE", "1")  # what is tested here is the room, not the share
    alice = AppTest.from_file(APP, default_timeout=120).run()
    upload(alice, "alices.onnx", builders.weights_model(400).SerializeToString())
    link = alice.session_state["link"]
    assert link.get("key") and not alice.warning, [w.value for w in alice.warning]

    mallory = AppTest.from_file(APP, default_timeout=120).run()  # another visitor, the same server
    upload(mallory, "mallorys.onnx", builders.weights_model(401).SerializeToString())
    assert mallory.session_state["model"].name == "mallorys"  # still theirs to work with in this session
    assert mallory.session_state["link"] == {}  # but not kept: no permalink
    (warning,) = [w.value for w in mallory.warning]
    assert "is full" in warning and "never anyone else's" in warning
    assert session.library().open(link["model"], link["key"]) is not None  # Alice's link still opens


def test_a_sent_permalink_opens_but_only_the_session_that_kept_it_renames_or_deletes_it() -> None:
    alice = _visitor()
    upload(alice, "alices.onnx", builders.weights_model(40).SerializeToString())
    link = alice.session_state["link"]
    bob = _visitor(link)  # Alice sends Bob the permalink
    assert bob.session_state["model"].name == "alices"  # it opens
    bob.switch_page("app_pages/model.py").run()
    bob.selectbox(key="library_mine").set_value(link["key"]).run()  # listed: his session opened it
    assert [b.key for b in bob.button if (b.key or "").startswith("lib_")] == [f"lib_open_{link['key']}"]  # Open only
    assert not [t for t in bob.text_input if (t.key or "").startswith("lib_")] and "Opened by its link" in texts(bob)
    for token in (bob.session_state["owner_token"], link["key"], ""):  # his session's token, the link's key, none
        with pytest.raises(NotYourModel):
            session.library().delete(link["model"], link["key"], ANONYMOUS, token)
    assert session.library().open(link["model"], link["key"]) is not None

    alice.switch_page("app_pages/model.py").run()  # the session that kept it may
    alice.selectbox(key="library_mine").set_value(link["key"]).run()
    alice.checkbox(key=f"lib_confirm_{link['key']}").check().run()
    alice.button(key=f"lib_delete_{link['key']}").click().run()
    assert not alice.exception and session.library().open(link["model"], link["key"]) is None


def test_one_visitor_takes_a_share_of_the_anonymous_room_and_leaves_the_rest_to_others(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("WORKBENCH_LIBRARY_QUOTA_MB", "2")  # three of these models
    monkeypatch.setenv("WORKBENCH_LIBRARY_SESSION_SHARE", "0.5")  # one session: one of them
    mallory = _visitor()
    for n in range(3):  # each new one takes the place of the session's last
        upload(mallory, f"m{n}.onnx", builders.weights_model(400 + n).SerializeToString())
        assert mallory.session_state["link"].get("key"), [w.value for w in mallory.warning]
    alice = _visitor()
    upload(alice, "alices.onnx", builders.weights_model(399).SerializeToString())
    assert alice.session_state["link"].get("key") and not alice.warning, [w.value for w in alice.warning]

    big = _visitor()  # a model larger than a session's share: not kept, and the page says why and what to do
    upload(big, "big.onnx", builders.weights_model(600).SerializeToString())  # 1.4 MB
    assert big.session_state["model"].name == "big" and big.session_state["link"] == {}
    (warning,) = [w.value for w in big.warning]
    assert "larger than one browser session's share" in warning and "WORKBENCH_LIBRARY_SESSION_SHARE" in warning
