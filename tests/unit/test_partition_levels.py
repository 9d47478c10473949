"""Partition with its levels in one job (the Partition page's small models): the ALL session built once, and the
same levels and partition as the two jobs each make alone."""

from __future__ import annotations

import json
import os
import threading
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
    optimize,
    optimize_levels,
    partition_model,
)
from core.runtime.ort import LEVELS
from tests import builders
from tests.cli import cli


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
    def fail(*args: Any, **kwargs: Any) -> list[str]:
        raise RuntimeError("no levels here")

    monkeypatch.setattr(optimize, "_optimize_at", fail)  # every level's session but the partition's own fails
    result = partition_model(PartitionRequest(path=str(models["conv_relu"]), levels_dir=str(tmp_path)))
    assert result.levels_failed and result.optimization is None
    assert sum(result.reports[0].providers.values()) == result.node_count


def test_the_partition_stands_when_its_levels_cannot_start(
    models: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The levels' folder is made before the partition's session, which writes the ALL level's graph there, is
    started: not by the levels, which may not start at all (or start after it)."""

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("no levels here")

    monkeypatch.setattr(optimize.LevelSessions, "__enter__", refuse)
    result = partition_model(PartitionRequest(path=str(models["conv_relu"]), levels_dir=str(tmp_path / "new")))
    assert result.levels_failed and result.optimization is None
    assert sum(result.reports[0].providers.values()) == result.node_count


def test_the_partitions_session_is_built_beside_the_levels_not_before_them(
    models: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two sessions at a time from the start, as ONNX Runtime's own five sessions build (the floor of issue #51):
    the first two sessions meet at a barrier before either is built, which the partition's would wait at alone
    if it were built before the levels'."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)  # two cores: two at a time
    meeting, lock = threading.Barrier(2, timeout=10), threading.Lock()
    logids: list[str] = []
    arenas: list[bool] = []
    real = ort.InferenceSession

    class Meeting(real):  # type: ignore[misc, valid-type]
        def __init__(self, path: Any, options: Any = None, *args: Any, **kwargs: Any) -> None:
            with lock:
                logids.append(options.logid)
                arenas.append(options.enable_cpu_mem_arena)
                first_two = len(logids) <= 2
            if first_two:
                meeting.wait()
            super().__init__(path, options, *args, **kwargs)

    monkeypatch.setattr(ort, "InferenceSession", Meeting)
    path = str(models["conv_relu"])
    result = partition_model(PartitionRequest(path=path, levels_dir=str(tmp_path)))
    assert result.optimization is not None and not result.levels_failed
    assert len(logids) == 5  # the partition's (ALL, no level's logid) and four levels': not six
    assert sum(not logid.startswith("workbench-level-") for logid in logids[:2]) == 1  # among the first two
    assert not any(arenas)  # none is run: no memory arena logging each weight it would hold
    # the level the partition's session wrote is described from its own log, as before
    assert result.optimization.levels[-1].key == "all" and result.optimization.levels[-1].transformers


def test_partition_with_levels_on_the_command_line_is_one_job(
    models: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command asks one worker for the partition and its levels (the partition's session among the levels',
    the ALL session once), where it ran two jobs in two workers that built six sessions, three at a time."""
    from core.cli import partition as command

    asked: list[tuple[str, Any]] = []
    submit = command.jobs.submit

    def recorded(job: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
        asked.append((job.name, request))
        return submit(job, request, *args, **kwargs)

    monkeypatch.setattr(command.jobs, "submit", recorded)
    done = cli("partition", str(models["conv_relu"]), "--levels", "--json")
    assert done.returncode == 0, done.stderr
    assert [name for name, _request in asked] == ["partition.run"] and asked[0][1].levels_dir
    data = json.loads(done.stdout)
    assert list(data["levels"]) == ["DISABLE_ALL", "BASIC", "EXTENDED", "LAYOUT", "ALL"]
    assert data["levels"]["EXTENDED"]["op_counts"]["com.microsoft:FusedConv"] == 1
    assert data["providers"] == {"CPUExecutionProvider": 2}


def test_the_levels_sessions_hold_no_memory_arena_and_write_the_same_graphs(
    models: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A level's session is never run: without the CPU memory arena it does not log each weight it would hold
    (18,000 lines of ORT's default logger on a 30,000-node model, each a call into Python), and writes the same
    graph, byte for byte, as a session with it."""
    arenas: list[bool] = []
    real = ort.InferenceSession

    class Recorded(real):  # type: ignore[misc, valid-type]
        def __init__(self, path: Any, options: Any = None, *args: Any, **kwargs: Any) -> None:
            arenas.append(options.enable_cpu_mem_arena)
            super().__init__(path, options, *args, **kwargs)

    monkeypatch.setattr(ort, "InferenceSession", Recorded)
    path = str(models["conv_relu"])
    report = optimize_levels(LevelsRequest(path=path, out_dir=str(tmp_path / "levels"), levels=["extended", "all"]))
    assert arenas == [False, False]
    for level in report.levels:
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel(LEVELS[level.key].value)
        options.optimized_model_filepath = str(tmp_path / f"with-arena.{level.key}.onnx")
        real(path, options, providers=["CPUExecutionProvider"])
        assert Path(level.path).read_bytes() == Path(options.optimized_model_filepath).read_bytes()


@pytest.mark.parametrize(("name", "compared"), [("conv_relu", 3), ("control_flow", 1)])
def test_a_level_whose_graph_is_another_levels_byte_for_byte_is_described_from_it_not_compared_again(
    models: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, compared: int
) -> None:
    """A convolution's LAYOUT and ALL graphs are the same bytes (and here DISABLE_ALL's and BASIC's), as a
    transformer's EXTENDED, LAYOUT and ALL (the 30,003-node model's: read and compared with it three times over);
    each graph is compared with the model once, and each level says what a comparison of its own would."""
    calls: list[int] = []
    real = optimize.compare_graphs

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(optimize, "compare_graphs", counted)
    path = str(models[name])
    report = optimize_levels(LevelsRequest(path=path, out_dir=str(tmp_path)))
    assert len(calls) == compared  # conv_relu: DISABLE_ALL = BASIC, then EXTENDED, then LAYOUT = ALL
    original = onnx.load_model(path)
    keys = optimize.node_keys(original.graph)
    for level in report.levels:
        alone = optimize._level_result(original, keys, level.key, level.files, [])
        assert (level.node_count, level.op_counts, level.subgraph_nodes) == (
            alone.node_count,
            alone.op_counts,
            alone.subgraph_nodes,
        )
        assert [(r.kind, r.text) for r in level.rewrites] == [(r.kind, r.text) for r in alone.rewrites]
    assert [level.key for level in report.levels] == ["disable", "basic", "extended", "layout", "all"]
    assert len({level.path for level in report.levels}) == 5  # each its own file, as before
