"""Compare reads a model that holds its weights as a graph without them, ONNX Runtime mapping the weights (issue #51):
the same report as from the file itself, and comparing two models grows the process by about one file, not two."""

from __future__ import annotations

import gc
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import core.compare.engine
from core.compare import CompareReport, CompareRequest, CompareSide, compare_models
from core.jobs.wire import to_data
from core.model.inputs import BenchInput
from core.model.proto import iter_tensors
from core.model.weightless import split_weights
from tests.builders import write
from tests.unit.test_weightless import every_kind_of_weight
from tests.wild import range_model


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


def _scaled(model: onnx.ModelProto, name: str, scale: float) -> onnx.ModelProto:
    """A copy of ``model`` whose tensor ``name`` (an initializer or a Constant's value, in any graph) is scaled."""
    copy = onnx.ModelProto.FromString(model.SerializeToString())
    tensor = next(t for _where, t in iter_tensors(copy) if t.name == name)
    tensor.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(tensor) * scale, name))
    return copy


def _constants() -> onnx.ModelProto:
    """Weights in Constant nodes, as Paddle exports them, each 16 KB."""
    values = [numpy_helper.from_array(np.random.default_rng(i).standard_normal((64, 64)).astype(np.float32) * 0.1,
                                      f"c{i}") for i in range(2)]  # fmt: skip
    nodes = [helper.make_node("Constant", [], [f"w{i}"], value=values[i], name=f"const{i}") for i in range(2)]
    nodes += [
        helper.make_node("MatMul", ["x", "w0"], ["m0"], name="matmul0"),
        helper.make_node("Relu", ["m0"], ["r0"], name="relu0"),
        helper.make_node("MatMul", ["r0", "w1"], ["y"], name="matmul1"),
    ]
    graph = helper.make_graph(
        nodes,
        "constants",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _float16(model: onnx.ModelProto) -> onnx.ModelProto:
    from onnxruntime.transformers.float16 import convert_float_to_float16

    return convert_float_to_float16(model, keep_io_types=True)  # type: ignore[no-any-return]


PAIRS = {  # a model, its variant and the input plan: a weight in a Constant, float16, a weight in an If's branch
    "constant": (_constants, lambda m: _scaled(m, "c1", 3.0), [("x", [1, 64])]),
    "float16": (lambda: range_model(3000.0), _float16, [("x", [1, 256])]),
    "subgraph": (
        every_kind_of_weight,
        lambda m: _scaled(_scaled(m, "then_w", 3.0), "else_w", 3.0),  # whichever branch the plan's cond takes
        [("x", [1, 32]), ("cond", [])],
    ),
}


@pytest.mark.parametrize("pair", list(PAIRS))
def test_a_model_read_as_a_graph_without_its_weights_is_compared_exactly_as_from_its_file(
    pair: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    build, vary, shapes = PAIRS[pair]
    model = build()
    a, b = write(model, tmp_path / "a.onnx"), write(vary(model), tmp_path / "b.onnx")
    plan = [BenchInput(name=n, dtype="bool" if n == "cond" else "float32", shape=s) for n, s in shapes]
    request = CompareRequest(a=CompareSide(path=str(a)), b=CompareSide(path=str(b)), inputs=plan, rtol=1e-2)
    split: list[Path | None] = []
    folders: list[Path] = []

    def counted(path: Path, folder: Path) -> Path | None:
        split.append(split_weights(path, folder))
        folders.append(folder)
        return split[-1]

    monkeypatch.setattr(core.compare.engine, "split_weights", counted)
    reports = []
    for split_from in (1 << 62, 0):  # from the files themselves, then every model split
        monkeypatch.setattr(core.compare.engine, "_SPLIT_FROM", split_from)
        reports.append(to_data(compare_models(request)))
    assert len(split) == 2 and all(found is not None for found in split)  # both models were split the second time
    assert not any(folder.exists() for folder in folders)  # the graphs and their data removed with the job's folder
    for report in reports:
        del report["seconds"], report["seconds_to_divergence"]
    assert reports[0] == reports[1]
    assert reports[0]["first_divergence"] is not None  # a comparison that found something
