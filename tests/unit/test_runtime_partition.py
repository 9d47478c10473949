"""Partition on two real runtimes (the OpenVINO build, which make test builds): ORT's own assignment across the
runtime's providers, the nodes a provider declined and why, the placement at each level, two runtimes side by side,
and falling back said before any figure, or refused with --strict."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.partition.declined import ALONE, CONTEXT, CPU_FASTER, KERNEL_REFUSES, NO_KERNEL, log_reasons
from core.runtime.fallback import ABSENT, DROPPED, PARTLY, TOOK_NOTHING, Placed, placement_notes
from core.runtime.ort import parse_ort_log
from tests import builders
from tests.cli import cli
from tests.runtimes import OPENVINO, require_openvino, split_model

OV, CPU = "OpenVINOExecutionProvider", "CPUExecutionProvider"


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_openvino()
    return builders.write(split_model("Det"), tmp_path_factory.mktemp("split") / "split.onnx")


def test_openvino_takes_one_piece_and_the_cpu_provider_the_rest_with_each_declined_nodes_reason(split: Path) -> None:
    done = cli("partition", str(split), "--runtime", OPENVINO, "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["runtime"] == OPENVINO and data["onnxruntime"] == "1.24.1"
    assert data["providers_requested"] == [OV, CPU]  # the runtime's own providers, none named
    assert data["providers"] == {CPU: 2, OV: 1}
    assert [(s["provider"], s["nodes"]) for s in data["subgraphs"]] == [(CPU, 2), (OV, 1)]
    placed = {n["name"]: n["provider"] for n in data["nodes"]}
    assert placed == {"relu_in": CPU, "det": CPU, "relu_out": OV}
    declined = {d["name"]: d for d in data["declined"]}
    assert set(declined) == {"relu_in", "det"} and {d["provider"] for d in declined.values()} == {OV}
    # OpenVINO's log names no reason: each node was tried alone on it
    assert (
        declined["det"]["source"] == "alone"
        and "does not take Det with inputs float32[2,3,3]" in declined["det"]["reason"]
    )
    assert declined["relu_in"]["source"] == "context" and "takes Relu" in declined["relu_in"]["reason"]
    assert data["warnings"] == [] and any("OpenVINO runs 1 of the 3 nodes" in n for n in data["notes"])
    assert any("Node placements" in line for line in data["log"])  # from a build that logs to stderr only


def test_two_runtimes_side_by_side_at_every_level(split: Path) -> None:
    done = cli("partition", str(split), "--runtime", f"default,{OPENVINO}", "--each-level", "--json")
    assert done.returncode == 0, done.stderr
    default, openvino = json.loads(done.stdout)["runtimes"]
    assert default["runtime"] == "default" and default["providers"] == {CPU: 3} and not default["declined"]
    assert openvino["providers"] == {CPU: 2, OV: 1} and len(openvino["declined"]) == 2
    levels = {level["level"]: level for level in openvino["placement_levels"]}
    assert set(levels) == {"DISABLE_ALL", "BASIC", "EXTENDED", "LAYOUT"}  # and ALL, the partition itself
    assert all(level["providers"] == {CPU: 2, OV: 1} and level["declined"] == 2 for level in levels.values())
    text = cli("partition", str(split), "--runtime", f"default,{OPENVINO}")
    assert "side by side (split.onnx):" in text.stdout and "runtime openvino: onnxruntime 1.24.1" in text.stdout


def test_a_provider_the_runtime_lacks_is_a_warning_before_any_figure(split: Path) -> None:
    done = cli("partition", str(split), "--providers", "openvino,cpu")
    assert done.returncode == 0, done.stderr
    first = done.stdout.splitlines()[0]
    assert first.startswith("warning: OpenVINO is not in the runtime default") and "onnxruntime-openvino" in first


def test_strict_refuses_a_provider_the_runtime_lacks_with_exit_2(split: Path) -> None:
    done = cli("partition", str(split), "--providers", "openvino", "--strict")
    assert done.returncode == 2 and "Refused (--strict): OpenVINO is not in the runtime default" in done.stderr
    assert done.stdout == ""  # nothing measured, nothing printed


def test_strict_refuses_a_provider_that_leaves_nodes_to_the_cpu_naming_them(split: Path) -> None:
    done = cli("partition", str(split), "--runtime", OPENVINO, "--strict")
    assert done.returncode == 2 and "OpenVINO runs 1 of the 3 nodes" in done.stderr
    assert "On the CPU provider: relu_in, det." in done.stderr


def test_a_runtime_that_is_not_built_is_refused_by_name(split: Path) -> None:
    done = cli("partition", str(split), "--runtime", "no-such")
    assert done.returncode == 2 and "no runtime 'no-such'" in done.stderr and "it has: default, openvino" in done.stderr


def test_each_fallback_is_a_warning_and_a_share_is_a_note() -> None:
    def said(**kwargs: object) -> list[str]:
        fields = {"runtime": "gpu", "asked": ["CUDAExecutionProvider", CPU], "available": [], "used": [], **kwargs}
        return [n.key for n in placement_notes(Placed(**fields))]  # type: ignore[arg-type]

    cuda = ["CUDAExecutionProvider", CPU]
    assert said(available=[CPU]) == [ABSENT]
    assert said(available=cuda, used=[CPU], nodes={CPU: 5}) == [DROPPED]  # its libraries did not load
    assert said(available=cuda, used=cuda, nodes={CPU: 5}) == [TOOK_NOTHING]
    assert said(available=cuda, used=cuda, nodes={"CUDAExecutionProvider": 3, CPU: 2}) == [PARTLY]
    shares = placement_notes(Placed(runtime="gpu", asked=cuda, available=cuda, used=cuda, nodes={cuda[0]: 5}))
    assert [n.severity for n in shares] == ["info"]


def test_the_reasons_providers_write_in_orts_verbose_log_are_read_per_node() -> None:
    log = parse_ort_log(
        "2026-12-04 16:31:02.7 [V:onnxruntime:, cuda_execution_provider.cc:2600 GetCapability] CUDA kernel not "
        "found in registries for Op type: Det node name: det\n"
        "2026-12-04 16:31:02.7 [W:onnxruntime:, cuda_execution_provider.cc:2610 GetCapability] CUDA kernel not "
        "supported. Fallback to CPU execution provider for Op type: Mod node name: mod_1\n"
        "2026-12-04 16:31:02.7 [I:onnxruntime:, fallback_cpu_capability.cc:170 GetCpuPreferredNodes] ORT "
        "optimization- Force fallback to CPU execution for node: /Shape_3 because the CPU execution path is deemed "
        "faster than overhead involved with execution on other EPs  capable of executing this node\n"
    )
    assert [severity for severity, _where, _text in log] == [0, 2, 1]
    assert log_reasons(log) == {
        ("CUDAExecutionProvider", "det"): NO_KERNEL,
        ("CUDAExecutionProvider", "mod_1"): KERNEL_REFUSES,
        ("", "/Shape_3"): CPU_FASTER,
    }
    assert ALONE != CONTEXT  # a node no provider gave a reason for is tried alone (above, on OpenVINO)
