"""The Deploy page's server for a runtime: the runtime picked writes a server for that build of ONNX Runtime (its
package pinned, its providers asked for), said on the page."""

from __future__ import annotations

import pytest

from tests.app.pages import open_page, texts
from tests.builders import relu_model
from tests.runtimes import OPENVINO, require_openvino


def test_the_deploy_page_writes_the_server_for_the_runtime_picked(monkeypatch: pytest.MonkeyPatch) -> None:
    require_openvino()
    monkeypatch.setenv("WORKBENCH_START_SAMPLE", "")
    at = open_page("deploy", ("relu.onnx", relu_model().SerializeToString()))
    at.selectbox(key="deploy_server_runtime").set_value(OPENVINO).run()
    assert "For the runtime openvino: its requirements pin its build of ONNX Runtime" in texts(at)
    next(b for b in at.button if b.label == "Prepare the server (.zip)").click()
    at.run()
    assert not at.exception, at.exception
    options = next(c.value for c in at.caption if c.value.startswith("Session options:")).replace("\\", "")
    assert '"runtime": "openvino"' in options  # the server's session.json, as written for the runtime picked
    assert '"providers": ["OpenVINOExecutionProvider", "CPUExecutionProvider"]' in options
