"""A model's graph without its weights (core.model.weightless): the weights moved to a data file by offset, the model
read back the same by onnx and run the same by ONNX Runtime, in memory that does not grow with the file (issue #51)."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from core.model.proto import iter_tensors
from core.model.weightless import split_weights
from tests.adversarial.hostile import _varint
from tests.builders import write
from tests.wild import detector_model, ir3_model, loop_model


def _array(shape: tuple[int, ...], seed: int, dtype: type = np.float32) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * 0.1).astype(dtype)


def _branch(name: str, weight: TensorProto | None, constant: TensorProto | None) -> onnx.GraphProto:
    """A branch of an If that multiplies ``h`` (of the outer graph) by its own initializer or Constant."""
    nodes = [helper.make_node("MatMul", ["h", f"{name}_w"], [f"{name}_out"], name=f"{name}_matmul")]
    if constant is not None:
        nodes.insert(0, helper.make_node("Constant", [], [f"{name}_w"], value=constant, name=f"{name}_const"))
    out = helper.make_tensor_value_info(f"{name}_out", TensorProto.FLOAT, [1, 32])
    return helper.make_graph(nodes, name, [], [out], [weight] if weight is not None else [])


def every_kind_of_weight() -> onnx.ModelProto:
    """Weights in every place a model keeps them: an initializer also listed as an input (as IR 3 wrote them), a
    float16 initializer, a Constant node's tensor as float_data (onnx.helper's default), an int64 shape as
    int64_data (stays inline), and an If whose branches hold an initializer and a Constant of their own."""
    w1 = numpy_helper.from_array(_array((32, 32), 0), "w1")
    half = numpy_helper.from_array(_array((32,), 1, np.float16), "half")
    bias = helper.make_tensor("bias", TensorProto.FLOAT, [32], _array((32,), 2).tolist())  # float_data, not raw
    shape = helper.make_tensor("shape", TensorProto.INT64, [2], [1, 32])  # int64_data
    then_w = numpy_helper.from_array(_array((32, 32), 3), "then_w")
    else_w = helper.make_tensor("else_w", TensorProto.FLOAT, [32, 32], _array((32, 32), 4).reshape(-1).tolist())
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["m"], name="matmul"),
        helper.make_node("Constant", [], ["bias"], value=bias, name="bias_const"),
        helper.make_node("Add", ["m", "bias"], ["a"], name="add"),
        helper.make_node("Cast", ["half"], ["half32"], to=TensorProto.FLOAT, name="cast"),
        helper.make_node("Mul", ["a", "half32"], ["g"], name="mul"),
        helper.make_node("Reshape", ["g", "shape"], ["h"], name="reshape"),
        helper.make_node(
            "If", ["cond"], ["y"], name="choose",
            then_branch=_branch("then", then_w, None), else_branch=_branch("else", None, else_w),
        ),
    ]  # fmt: skip
    graph = helper.make_graph(
        nodes,
        "kinds",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32]),
            helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
            helper.make_tensor_value_info("w1", TensorProto.FLOAT, [32, 32]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32])],
        [w1, half, shape],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _feeds(session: ort.InferenceSession, branch: bool) -> dict[str, np.ndarray]:
    feeds = {}
    for i, given in enumerate(session.get_inputs()):
        shape = [d if isinstance(d, int) and d > 0 else 5 for d in given.shape]
        if given.type == "tensor(bool)":
            feeds[given.name] = np.array(branch)
        elif given.name not in ("w1", "W"):  # an initializer listed as an input: its own value
            feeds[given.name] = _array(tuple(shape), 10 + i)
    return feeds


def _tensors(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    """Every tensor of the model and its subgraphs, by name, as numpy reads it."""
    found = {}
    graphs = [model.graph]
    while graphs:
        graph = graphs.pop()
        found.update({t.name: numpy_helper.to_array(t) for t in graph.initializer})
        for node in graph.node:
            for attribute in node.attribute:
                if attribute.type == onnx.AttributeProto.TENSOR:
                    found[f"{node.name}.{attribute.name}"] = numpy_helper.to_array(attribute.t)
                graphs += [attribute.g] if attribute.type == onnx.AttributeProto.GRAPH else list(attribute.graphs)
    return found


@pytest.mark.parametrize("build", [every_kind_of_weight, detector_model, ir3_model, loop_model])
def test_a_model_split_from_its_weights_reads_and_runs_the_same(build: object, tmp_path: Path) -> None:
    model = build()  # type: ignore[operator]
    original = write(model, tmp_path / "model.onnx")
    split = split_weights(original, tmp_path / "split", min_bytes=16)
    assert split is not None and split.parent == tmp_path / "split"
    structure = onnx.load(str(split), load_external_data=False)
    moved = [name for name, _value in _tensors_external(structure)]
    assert moved  # some weights are in the data file now, by offset
    onnx.checker.check_model(str(split))
    read = onnx.load(str(split))  # the weights read back from the data file
    expected = _tensors(model)
    assert {name: value.dtype for name, value in _tensors(read).items()} == {k: v.dtype for k, v in expected.items()}
    for name, value in _tensors(read).items():
        np.testing.assert_array_equal(value, expected[name], err_msg=name)
    a = ort.InferenceSession(str(original), providers=["CPUExecutionProvider"])
    b = ort.InferenceSession(str(split), providers=["CPUExecutionProvider"])
    for branch in (True, False):
        feeds = _feeds(a, branch)
        for x, y in zip(a.run(None, feeds), b.run(None, feeds), strict=True):
            np.testing.assert_array_equal(x, y)


def _tensors_external(model: onnx.ModelProto) -> list[tuple[str, TensorProto]]:
    return [(t.name, t) for _where, t in iter_tensors(model) if t.data_location == TensorProto.EXTERNAL]


def test_small_tensors_stay_inside_the_graph_and_large_ones_start_on_a_page_of_the_data_file(tmp_path: Path) -> None:
    split = split_weights(write(every_kind_of_weight(), tmp_path / "m.onnx"), tmp_path / "split", min_bytes=1024)
    assert split is not None
    structure = onnx.load(str(split), load_external_data=False)
    moved = dict(_tensors_external(structure))
    assert sorted(moved) == ["else_w", "then_w", "w1"]  # 4 KB each; the 128-byte bias and the float16 stay
    for tensor in moved.values():
        entries = {e.key: e.value for e in tensor.external_data}
        assert entries["location"] == "model.data" and int(entries["offset"]) % 4096 == 0
        assert int(entries["length"]) == 32 * 32 * 4


def test_a_model_whose_weights_are_already_in_a_data_file_or_too_small_or_not_protobuf_is_left_as_it_is(
    tmp_path: Path,
) -> None:
    model = every_kind_of_weight()
    external = tmp_path / "ext" / "m.onnx"
    external.parent.mkdir()
    onnx.save(model, str(external), save_as_external_data=True, location="m.data", size_threshold=0)
    assert split_weights(external, tmp_path / "a") is None
    assert split_weights(write(model, tmp_path / "m.onnx"), tmp_path / "b", min_bytes=1 << 20) is None
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"\x0a\xff\xff\xff\x0f" + bytes(100))  # a length past the end of the file
    assert split_weights(junk, tmp_path / "c") is None
    for folder in ("a", "b", "c"):
        assert not any((tmp_path / folder).iterdir())  # nothing left behind


def test_splitting_a_30_mb_model_holds_neither_its_bytes_nor_its_message(tmp_path: Path) -> None:
    shapes = [(1024, 1920), (1920, 1024)] * 2  # 7.5 MiB each
    weights = [numpy_helper.from_array(_array(shape, i), f"w{i}") for i, shape in enumerate(shapes)]
    nodes = [helper.make_node("MatMul", [f"x{i}", f"w{i}"], [f"x{i + 1}"]) for i in range(4)]
    graph = helper.make_graph(
        nodes,
        "big",
        [helper.make_tensor_value_info("x0", TensorProto.FLOAT, [1, 1024])],
        [helper.make_tensor_value_info("x4", TensorProto.FLOAT, [1, 1024])],
        weights,
    )
    path = write(helper.make_model(graph), tmp_path / "big.onnx")
    del weights, graph
    tracemalloc.start()
    try:
        split = split_weights(path, tmp_path / "split")
        _size, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert split is not None and path.stat().st_size > 30e6
    assert peak < 3 << 20  # a chunk of a tensor at a time (1 MiB), where onnx.load holds 60 MB


def test_a_field_that_would_put_the_reader_out_of_step_leaves_the_file_as_it_is(tmp_path: Path) -> None:
    """A tensor's data_location written as bytes, and a message whose last varint runs past its end, would have been
    read out of step (a crafted initializer 'W' came out named 'Z'): the file is read as it is, by onnx's rules."""
    weight = numpy_helper.from_array(_array((64, 64), 1), "W")
    graph = helper.make_graph(
        [helper.make_node("Identity", ["W"], ["y"])],
        "g",
        [],
        [helper.make_tensor_value_info("y", 1, [64, 64])],
        [weight],
    )
    plain = helper.make_model(graph).SerializeToString()
    tensor = weight.SerializeToString()
    crafted_tensor = tensor + bytes([14 << 3 | 2, 3]) + bytes([8 << 3 | 2, 1]) + b"Z"  # field 14, 3 bytes: name="Z"
    crafted = plain.replace(tensor, crafted_tensor).replace(
        bytes([5 << 3 | 2]) + _varint(len(tensor)), bytes([5 << 3 | 2]) + _varint(len(crafted_tensor))
    )
    graph_bytes = helper.make_model(graph).graph.SerializeToString()
    crafted = crafted.replace(_varint(len(graph_bytes)), _varint(len(graph_bytes) + 5), 1)
    past_end = plain + bytes([3 << 3 | 0, 0x80])  # a varint whose last byte lies past the end of the file
    for n, data in enumerate((crafted, past_end)):
        source = tmp_path / f"m{n}.onnx"
        source.write_bytes(data)
        assert split_weights(source, tmp_path / f"out{n}") is None
        assert not list((tmp_path / f"out{n}").iterdir())
