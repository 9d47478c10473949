"""Compare's memory against the models' files (issue #51): a model that holds its weights is read as a graph without
them and ONNX Runtime maps the weights, so comparing two models grows the process by about one file, not two."""

from __future__ import annotations

import gc
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from core.compare import CompareReport, CompareRequest, CompareSide, compare_models
from core.model.inputs import BenchInput
from tests.builders import write


def _convs(path: Path, channels: int, scale: float) -> Path:
    """Three 3×3 Convs of ``channels`` channels on an 8×8 map, the second's weights times ``scale``; with 512
    channels the file is 27 MB and the activations 128 KB, so the weights are nearly all the file."""
    weights = [
        numpy_helper.from_array(
            (
                np.random.default_rng(i).standard_normal((channels, channels, 3, 3)) * (0.02 * (scale if i == 1 else 1))
            ).astype(np.float32),
            f"w{i}",
        )
        for i in range(3)
    ]
    nodes = [
        helper.make_node("Conv", [f"x{i}", f"w{i}"], [f"x{i + 1}"], pads=[1, 1, 1, 1], name=f"conv{i}")
        for i in range(3)
    ]
    graph = helper.make_graph(
        nodes,
        "convs",
        [helper.make_tensor_value_info("x0", TensorProto.FLOAT, [1, channels, 8, 8])],
        [helper.make_tensor_value_info("x3", TensorProto.FLOAT, [1, channels, 8, 8])],
        weights,
    )
    return write(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def _status() -> dict[str, int]:
    with open("/proc/self/status") as status:
        return {k: int(v.split()[0]) << 10 for k, v in (line.split(":", 1) for line in status) if k.startswith("Vm")}


def _compare(a: Path, b: Path, channels: int) -> CompareReport:
    plan = [BenchInput(name="x0", dtype="float32", shape=[1, channels, 8, 8])]
    return compare_models(CompareRequest(a=CompareSide(path=str(a)), b=CompareSide(path=str(b)), inputs=plan))


def test_comparing_two_27_mb_models_grows_the_process_by_about_one_file_not_two(tmp_path: Path) -> None:
    try:
        Path("/proc/self/clear_refs").write_text("5")  # the kernel's peak of this process, reset
    except OSError:
        pytest.skip("the process's peak memory cannot be reset here (Linux only)")
    # the libraries' pages and ONNX Runtime's first session, taken before measuring
    _compare(_convs(tmp_path / "sa.onnx", 64, 1.0), _convs(tmp_path / "sb.onnx", 64, 3.0), 64)
    a, b = _convs(tmp_path / "a.onnx", 512, 1.0), _convs(tmp_path / "b.onnx", 512, 3.0)
    gc.collect()
    Path("/proc/self/clear_refs").write_text("5")
    before = _status()["VmRSS"]
    report = _compare(a, b, 512)
    growth = _status()["VmHWM"] - before
    found = report.first_divergence
    assert found is not None and (found.node, found.cause) == ("conv1", "weight")  # the same answer
    # the weights mapped once (27 MB) and a few MB more; read whole, each model took twice its file (55 MB)
    assert growth < 1.5 * a.stat().st_size, (
        f"grew {growth / 2**20:.0f} MiB for a {a.stat().st_size / 2**20:.0f} MiB file"
    )
