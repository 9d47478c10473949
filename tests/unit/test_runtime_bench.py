"""Benchmark on another runtime (the OpenVINO build, which make test builds): each of its providers a configuration
labelled with the runtime, each result with its share of the nodes, a provider that falls back said before any
figure, and --strict refusing it. Short runs: what is checked here is what was run, not how fast."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from onnx import TensorProto, helper

from core.runtime.fallback import PARTLY, TOOK_NOTHING
from tests import builders
from tests.cli import cli
from tests.runtimes import OPENVINO, require_openvino, split_model

OV, CPU = "OpenVINOExecutionProvider", "CPUExecutionProvider"
QUICK = ("--levels", "all", "--threads", "1", "--iters", "20", "--warmup", "2", "--no-save")


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    require_openvino()
    folder = tmp_path_factory.mktemp("bench")
    det = helper.make_graph(
        [helper.make_node("Det", ["x"], ["y"], name="det")],
        "det",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    det_model = helper.make_model(det, opset_imports=[helper.make_opsetid("", 17)])
    det_model.ir_version = 8
    return {
        "split": builders.write(split_model("Det"), folder / "split.onnx"),
        "det": builders.write(det_model, folder / "det.onnx"),
    }


def test_each_provider_of_the_runtime_is_a_configuration_labelled_with_it_and_its_share_of_the_nodes(
    models: dict[str, Path],
) -> None:
    done = cli("bench", str(models["split"]), "--runtime", OPENVINO, *QUICK, "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    results = {r["label"]: r for r in data["results"]}
    assert set(results) == {f"ORT ALL on openvino/{OV}", f"ORT ALL on openvino/{CPU}"}
    assert results[f"ORT ALL on openvino/{OV}"]["provider_nodes"] == {CPU: 2, OV: 1}
    assert results[f"ORT ALL on openvino/{CPU}"]["provider_nodes"] == {CPU: 3}
    assert data["settings"]["runtime"] == OPENVINO and data["environment"]["versions"]["onnxruntime"] == "1.24.1"
    partly = [n for n in data["notes"] if n["key"] == PARTLY]
    assert [(n["values"]["provider"], n["values"]["count"], n["severity"]) for n in partly] == [("OpenVINO", 1, "info")]


def test_a_provider_that_takes_no_node_is_said_before_any_figure(models: dict[str, Path]) -> None:
    done = cli("bench", str(models["det"]), "--runtime", OPENVINO, "--providers", "openvino", *QUICK)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "warning  OpenVINO took none of the 1 nodes: every node runs on the CPU provider."
    assert lines[1].startswith(f"ORT ALL on openvino/{OV}")  # the headline, after the warning
    data = json.loads(cli("bench", str(models["det"]), "--runtime", OPENVINO, "--providers", "openvino", *QUICK,
                          "--json").stdout)  # fmt: skip
    assert [n["severity"] for n in data["notes"] if n["key"] == TOOK_NOTHING] == ["warning"]


def test_strict_refuses_a_provider_that_leaves_nodes_to_the_cpu_with_exit_2(models: dict[str, Path]) -> None:
    done = cli("bench", str(models["split"]), "--runtime", OPENVINO, "--providers", "openvino", "--strict", *QUICK)
    assert done.returncode == 2 and "Refused (--strict): OpenVINO does not take every node" in done.stderr
    assert "session.disable_cpu_ep_fallback" in done.stderr and done.stdout == ""


def test_a_provider_the_runtime_lacks_is_refused_naming_the_runtime(models: dict[str, Path]) -> None:
    done = cli("bench", str(models["split"]), "--providers", "openvino", *QUICK)
    assert done.returncode == 2 and "not in this build of ONNX Runtime (the runtime default" in done.stderr
    assert "--runtime NAME" in done.stderr
