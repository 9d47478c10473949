"""Deploy with hostile names, and the load test's reach: a model's names are data in the generated server, never
code; in hosted mode a load test never reaches an address, only the server it starts itself."""

from __future__ import annotations

import dataclasses
import importlib.util
import io
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient
from onnx import TensorProto, helper

from core import jobs
from core.deploy import DeployRequest, LoadtestRequest
from core.deploy.server import generate_server
from core.errors import JobError
from core.jobs import LOADTEST_URL, ProcessBackend
from core.model.measured import MeasuredModel
from core.settings import load_settings
from tests.builders import relu_model, write
from tests.cli import cli

HOSTILE = '"); import os; os.system("touch /tmp/pwned") #'
TEMPLATE = Path(__file__).resolve().parents[2] / "core" / "deploy" / "served_app.py"


def test_a_hostile_input_name_is_data_in_the_server_never_code(tmp_path: Path) -> None:
    x = helper.make_tensor_value_info(HOSTILE, TensorProto.FLOAT, [1, 2])
    y = helper.make_tensor_value_info("y\n`'\"", TensorProto.FLOAT, [1, 2])
    file = helper.make_tensor_value_info("file", TensorProto.FLOAT, [1, 2])  # np.savez's own argument's name
    nodes = [helper.make_node("Relu", [HOSTILE], ["y\n`'\""]), helper.make_node("Identity", ["y\n`'\""], ["file"])]
    graph = helper.make_graph(nodes, "g", [x], [y, file])
    model = write(helper.make_model(graph, opset_imports=[helper.make_operatorsetid("", 17)]), tmp_path / "m.onnx")
    out = Path(generate_server(DeployRequest(model=str(model), out_dir=str(tmp_path / "out"), zip=False)).out_dir)
    assert (out / "app.py").read_bytes() == TEMPLATE.read_bytes()  # the same code for every model
    spec = importlib.util.spec_from_file_location("hostile_app", out / "app.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with TestClient(module.app) as client:
        answer = client.post("/predict", json={"inputs": {HOSTILE: [[-1.0, 3.0]]}})
        npz = client.post(
            "/predict", json={"inputs": {HOSTILE: [[-1.0, 3.0]]}}, headers={"accept": "application/x-npz"}
        )
    assert answer.json() == {"outputs": {"y\n`'\"": [[0.0, 3.0]], "file": [[0.0, 3.0]]}}
    assert np.load(io.BytesIO(npz.content))["file"].tolist() == [[0.0, 3.0]]
    assert not Path("/tmp/pwned").exists()
    config = next((out / "triton").glob("*/config.pbtxt")).read_text()
    assert HOSTILE not in config and r'name: "\"); import os; os.system(\"touch /tmp/pwned\") #"' in config


def test_a_hostile_model_name_is_text_in_the_docs_pages_titles(tmp_path: Path) -> None:
    name = "</title><script>alert(1)</script>"
    model = write(relu_model(), tmp_path / "relu.onnx")
    request = DeployRequest(model=str(model), out_dir=str(tmp_path / "out"), zip=False, name=name)
    out = Path(generate_server(request).out_dir)
    spec = importlib.util.spec_from_file_location("titled_app", out / "app.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with TestClient(module.app) as client:
        pages = [client.get("/docs").text, client.get("/redoc").text]
        schema = client.get("/openapi.json").json()
    for page in pages:
        assert "<script>alert" not in page and "&lt;/title&gt;&lt;script&gt;alert(1)" in page
    assert schema["info"]["title"] == f"{name} (ONNX Runtime)"  # JSON: the name as it is


def test_hosted_mode_never_load_tests_an_address(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("WORKBENCH_MODE", "hosted")
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    done = cli("loadtest", "http://10.0.0.1:8000", "--model", "model.onnx", "--no-save")
    assert done.returncode == 2 and "only load the server it starts itself" in done.stderr
    # and the job runner itself refuses a job that keeps the network, whoever asks for it
    settings = dataclasses.replace(load_settings(environ={}), mode="hosted", data_dir=str(tmp_path / "data"))
    request = LoadtestRequest(model=MeasuredModel(path=str(tmp_path / "m.onnx"), inputs=[]), url="http://10.0.0.1")
    with pytest.raises(JobError, match="reaches other machines over the network"):
        jobs.run(LOADTEST_URL, request, ProcessBackend(settings))
