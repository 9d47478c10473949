"""One anonymous visitor of a hosted instance cannot evict everyone's anonymous permalinks: when the room the
anonymous keepings share is full, a new keeping is refused (the model is still theirs for the session, and the
page says why), and nobody else's is dropped. Two sessions of one server, through AppTest."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from tests.app.conftest import APP
from tests.app.pages import upload
from ui import session


def _weights_model(size: int) -> bytes:
    """A MatMul whose float32 weight is size×size (400: 640 kB)."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.ones((size, size), np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, size])], [w],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return bytes(model.SerializeToString())


def test_a_visitor_who_fills_the_anonymous_library_drops_nobody_elses_link(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_MODE", "hosted")
    monkeypatch.setenv("WORKBENCH_REQUIRE_SANDBOX", "false")  # what is tested here is the library, not the sandbox
    monkeypatch.setenv("WORKBENCH_START_SAMPLE", "")
    monkeypatch.setenv("WORKBENCH_LIBRARY_QUOTA_MB", "1")  # room for one of these models, not two
    alice = AppTest.from_file(APP, default_timeout=120).run()
    upload(alice, "alices.onnx", _weights_model(400))
    link = alice.session_state["link"]
    assert link.get("key") and not alice.warning, [w.value for w in alice.warning]

    mallory = AppTest.from_file(APP, default_timeout=120).run()  # another visitor, the same server
    upload(mallory, "mallorys.onnx", _weights_model(401))
    assert mallory.session_state["model"].name == "mallorys"  # still theirs to work with in this session
    assert mallory.session_state["link"] == {}  # but not kept: no permalink
    (warning,) = [w.value for w in mallory.warning]
    assert "is full" in warning and "never anyone else's" in warning
    assert session.library().open(link["model"], link["key"]) is not None  # Alice's link still opens
