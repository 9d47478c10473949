"""Partition with its levels in one job (the Partition page's small models): the ALL session built once, and the
same levels and partition as the two jobs each make alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from core.jobs.wire import to_data
from core.partition import (
    LevelsRequest,
    OptimizationReport,
    PartitionRequest,
    optimize_levels,
    partition_model,
    partitioner,
)
from tests import builders


def _counted_sessions(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every ONNX Runtime session built from here on, by the level it optimizes at."""
    built: list[str] = []
    real = ort.InferenceSession

    class Counted(real):  # type: ignore[misc, valid-type]
        def __init__(self, path: Any, options: Any = None, *args: Any, **kwargs: Any) -> None:
            built.append(str(options.graph_optimization_level) if options is not None else "")
            super().__init__(path, options, *args, **kwargs)

    monkeypatch.setattr(ort, "InferenceSession", Counted)
    return built


def _levels_as_data(report: OptimizationReport) -> list[dict[str, Any]]:
    """What the levels say, without where their files lie."""
    levels = [to_data(level) for level in report.levels]
    for level in levels:
        level.pop("path"), level.pop("files")
    return levels


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("models")
    flow = folder / "control_flow.onnx"
    onnx.save(builders.control_flow_model(), flow)
    conv = folder / "conv_relu.onnx"
    onnx.save(_conv_relu(), conv)
    return {"conv_relu": conv, "control_flow": flow}


def _conv_relu() -> onnx.ModelProto:
    """A Conv and its Relu, which ONNX Runtime fuses into one FusedConv at EXTENDED."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])
    weight = numpy_helper.from_array(np.full((4, 2, 3, 3), 0.1, np.float32), "w")
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], "conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["y"], "relu"),
    ]
    graph = helper.make_graph(nodes, "conv_relu", [x], [y], [weight])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("name", ["conv_relu", "control_flow"])
def test_the_levels_made_with_the_partition_build_its_all_session_once_and_say_the_same(
    models: dict[str, Path], name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(models[name])
    alone = partition_model(PartitionRequest(path=path, simulate=["nnapi"]))
    levels_alone = optimize_levels(LevelsRequest(path=path, out_dir=str(tmp_path / "alone")))
    built = _counted_sessions(monkeypatch)
    together = partition_model(PartitionRequest(path=path, simulate=["nnapi"], levels_dir=str(tmp_path / "together")))
    assert len(built) == 5  # the partition's session at ALL, then DISABLE, BASIC, EXTENDED and LAYOUT: not six
    assert together.optimization is not None and not together.levels_failed
    assert _levels_as_data(together.optimization) == _levels_as_data(levels_alone)
    assert [level.key for level in together.optimization.levels] == ["disable", "basic", "extended", "layout", "all"]
    assert all(Path(level.path).parent == tmp_path / "together" for level in together.optimization.levels)
    if name == "conv_relu":  # something to compare: the fusion, named by the transformer that made it
        assert any("com.microsoft:FusedConv" in r.after for lv in together.optimization.levels for r in lv.rewrites)
        assert together.optimization.levels[-1].transformers
    assert to_data(together.reports) == to_data(alone.reports)  # the partition is the same with its levels


def test_the_partition_stands_when_its_levels_fail(models: dict[str, Path], tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    def fail(*args: Any, **kwargs: Any) -> OptimizationReport:
        raise RuntimeError("no levels here")

    monkeypatch.setattr(partitioner, "levels_report", fail)
    result = partition_model(PartitionRequest(path=str(models["conv_relu"]), levels_dir=str(tmp_path)))
    assert result.levels_failed and result.optimization is None
    assert sum(result.reports[0].providers.values()) == result.node_count
