"""Profile on another runtime (the OpenVINO build, which make test builds), on the CNN with a Hardmax between two
Relus that OpenVINO splits: each node with the provider that ran it, each provider's share of the nodes and of the
time, what fell back said before any figure, and --strict refusing it. Short runs: what is checked is where each
node ran, not how fast."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.runtime.fallback import PARTLY
from tests import builders
from tests.cli import cli
from tests.runtimes import OPENVINO, conv_split_model, require_openvino

OV, CPU = "OpenVINOExecutionProvider", "CPUExecutionProvider"
QUICK = ("--iters", "10", "--warmup", "2", "--threads", "1")


@pytest.fixture(scope="module")
def cnn(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_openvino()
    return builders.write(conv_split_model(), tmp_path_factory.mktemp("profile") / "conv_split.onnx")


def test_each_node_names_its_provider_and_each_provider_its_share_of_nodes_and_time(cnn: Path) -> None:
    done = cli("profile", str(cnn), "--runtime", OPENVINO, *QUICK, "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    by_provider = {n["provider"]: n["op_type"] for n in data["nodes"] if n["provider"] == CPU}
    assert by_provider == {CPU: "Hardmax"}  # the node OpenVINO declines, on the CPU provider
    assert {n["provider"] for n in data["nodes"]} == {OV, CPU}
    shares = {p["provider"]: p for p in data["providers"]}
    assert set(shares) == {OV, CPU} and shares[CPU]["nodes"] == 1
    assert sum(p["node_share"] for p in shares.values()) == pytest.approx(1.0)
    assert sum(p["time_share"] for p in shares.values()) == pytest.approx(1.0)
    assert sum(p["mean_ms"] for p in shares.values()) == pytest.approx(data["kernel_ms"])
    assert data["runtime"] == OPENVINO and data["settings"]["providers"] == [OV, CPU]
    assert data["environment"]["versions"]["onnxruntime"] == "1.24.1"  # the worker ran the OpenVINO build
    partly = next(n for n in data["notes"] if n["key"] == PARTLY)
    assert (partly["values"]["provider"], partly["values"]["count"], partly["values"]["total"]) == ("OpenVINO", 8, 9)


def test_what_falls_back_is_said_before_any_figure(cnn: Path) -> None:
    done = cli("profile", str(cnn), "--runtime", OPENVINO, "--providers", "openvino", *QUICK)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "note     OpenVINO runs 8 of the 9 nodes; the CPU provider runs the other 1."
    assert lines[1].startswith("ONNX Runtime (ALL):")  # the headline, after it
    assert any(line.startswith("provider OpenVINO: nodes 2 (67%)") for line in lines)


def test_strict_refuses_a_provider_that_leaves_nodes_to_the_cpu_with_exit_2(cnn: Path) -> None:
    done = cli("profile", str(cnn), "--runtime", OPENVINO, "--strict", *QUICK)
    assert done.returncode == 2 and "Refused (--strict): OpenVINO does not take every node" in done.stderr
    assert done.stdout == ""


def test_a_provider_the_default_runtime_lacks_is_refused_naming_the_runtime(cnn: Path) -> None:
    done = cli("profile", str(cnn), "--providers", "openvino", *QUICK)
    assert done.returncode == 2 and "not in this build of ONNX Runtime (the runtime default" in done.stderr
    assert "--runtime NAME" in done.stderr
