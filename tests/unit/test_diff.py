"""The structural diff (core.diff, ``python -m core diff``): planted changes on small models are found, named and
measured, nodes are matched through renames, and the JSON has the keys it promises."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from core.diff import DiffReport, DiffRequest, NodeDiff
from core.diff.differ import diff_models
from core.errors import DiffError
from core.notes import say
from tests.builders import control_flow_model
from tests.cli import cli


def small_net() -> onnx.ModelProto:
    """x → Conv → Relu → MaxPool → Flatten → MatMul → y, with named nodes and weights."""
    rng = np.random.default_rng(0)
    n = helper.make_node
    inits = [
        numpy_helper.from_array(rng.normal(0, 0.1, (4, 3, 3, 3)).astype(np.float32), "conv.weight"),
        numpy_helper.from_array(np.zeros(4, np.float32), "conv.bias"),
        numpy_helper.from_array(rng.normal(0, 0.1, (64, 10)).astype(np.float32), "fc.weight"),
    ]
    nodes = [
        n("Conv", ["x", "conv.weight", "conv.bias"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        n("Relu", ["c"], ["r"], name="relu"),
        n("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        n("Flatten", ["p"], ["f"], name="flat", axis=1),
        n("MatMul", ["f", "fc.weight"], ["y"], name="fc"),
    ]
    graph = helper.make_graph(
        nodes,
        "net",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="tests")


def _scale_conv(m: onnx.ModelProto) -> None:
    w = m.graph.initializer[0]
    w.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(w) * 2, w.name))


def _swap_op(m: onnx.ModelProto) -> None:
    m.graph.node[1].op_type = "Sigmoid"


def _add_and_remove(m: onnx.ModelProto) -> None:
    nodes = m.graph.node
    nodes[3].input[0] = "r"  # Flatten reads the Relu: the MaxPool is gone
    del nodes[2]
    nodes[-1].output[0] = "y0"
    nodes.append(helper.make_node("Identity", ["y0"], ["y"], name="extra"))


def _attribute(m: onnx.ModelProto) -> None:
    m.graph.node[2].attribute[1].ints[:] = [1, 1]  # MaxPool's strides


def _rename_everything(m: onnx.ModelProto) -> None:
    """A re-export that renamed every node, tensor and weight (the graph's input and output keep theirs)."""
    names = {t.name: f"onnx::W_{i}" for i, t in enumerate(m.graph.initializer)}
    for i, node in enumerate(m.graph.node):
        node.name = f"/{node.op_type}_{i}"
        for k, out in enumerate(node.output):
            names.setdefault(out, out if out == "y" else f"/{node.op_type}_{i}_output_{k}")
    for node in m.graph.node:
        node.input[:] = [names.get(t, t) for t in node.input]
        node.output[:] = [names.get(t, t) for t in node.output]
    for t in m.graph.initializer:
        t.name = names[t.name]
    _scale_conv(m)


def _opset_and_metadata(m: onnx.ModelProto) -> None:
    m.opset_import[0].version = 18
    m.producer_version = "2.0"
    helper.set_model_props(m, {"author": "someone"})


PLANTED: dict[str, Callable[[onnx.ModelProto], None]] = {
    "scaled": _scale_conv,
    "swapped": _swap_op,
    "added_removed": _add_and_remove,
    "attribute": _attribute,
    "renamed": _rename_everything,
    "opset": _opset_and_metadata,
}


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("diff")
    paths = {"a": folder / "a.onnx"}
    onnx.save(small_net(), paths["a"])
    for name, plant in PLANTED.items():
        model = small_net()
        plant(model)
        paths[name] = folder / f"{name}.onnx"
        onnx.save(model, paths[name])
    return paths


@pytest.fixture(scope="module")
def diffs(models: dict[str, Path]) -> dict[str, DiffReport]:
    a = str(models["a"])
    return {name: diff_models(DiffRequest(path_a=a, path_b=str(models[name]))) for name in PLANTED}


def _names(nodes: list[NodeDiff]) -> list[str]:
    return [n.node for n in nodes]


def test_a_conv_whose_weights_were_scaled_is_changed_with_the_statistics_of_the_change(
    diffs: dict[str, DiffReport],
) -> None:
    report = diffs["scaled"]
    (conv,) = report.changed
    assert (conv.node, conv.changes, report.added, report.removed) == ("conv", [], [], [])
    (w,) = conv.weights
    before = numpy_helper.to_array(small_net().graph.initializer[0])
    assert (w.tensor, w.elements, w.differing) == ("conv.weight", 108, 108)
    assert w.max_abs == pytest.approx(float(np.abs(before).max()))  # 2w − w = w
    assert w.mean_abs == pytest.approx(float(np.abs(before).mean()))
    assert w.relative == pytest.approx(1.0)
    assert report.unchanged == 4


def test_an_op_swapped_is_a_change_of_op_type(diffs: dict[str, DiffReport]) -> None:
    (relu,) = diffs["swapped"].changed
    assert relu.node == "relu"
    assert [(c.what, c.before, c.after) for c in relu.changes] == [("op_type", "Relu", "Sigmoid")]


def test_a_node_added_and_one_removed_are_listed_and_the_rewired_node_changed(diffs: dict[str, DiffReport]) -> None:
    report = diffs["added_removed"]
    assert (_names(report.added), _names(report.removed)) == (["extra"], ["pool"])
    changed = {n.node: n.changes for n in report.changed}
    assert [(c.what, c.before, c.after) for c in changed["flat"]] == [("input", "p", "r")]


def test_an_attribute_changed_names_the_attribute_and_both_values(diffs: dict[str, DiffReport]) -> None:
    (pool,) = diffs["attribute"].changed
    assert [(c.what, c.detail, c.before, c.after) for c in pool.changes] == [
        ("attribute", "strides", "[2, 2]", "[1, 1]")
    ]


def test_a_re_export_that_renamed_every_node_is_matched_by_position(diffs: dict[str, DiffReport]) -> None:
    report = diffs["renamed"]
    assert (report.added, report.removed) == ([], [])
    (conv,) = report.changed  # its weights, renamed too, were compared by value
    assert (conv.node, conv.node_a, conv.matched_by) == ("/Conv_0", "conv", "position")
    assert conv.weights[0].tensor_a == "conv.weight" and conv.weights[0].relative == pytest.approx(1.0)
    assert sorted(n.node_a for n in report.renamed) == ["fc", "flat", "pool", "relu"]


def test_opset_and_metadata_changes_are_listed(diffs: dict[str, DiffReport]) -> None:
    report = diffs["opset"]
    assert (report.added, report.removed, report.changed) == ([], [], [])
    found = {(m.kind, m.name, m.before, m.after) for m in report.model}
    assert found == {("opset", "ai.onnx", "17", "18"), ("metadata", "producer_version", "", "2.0"),
                     ("metadata", "author", "", "someone")}  # fmt: skip


def test_a_dynamically_quantized_variant_is_matched_through_the_quantizers_renames(
    models: dict[str, Path], tmp_path: Path
) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantized = tmp_path / "quantized.onnx"
    quantize_dynamic(str(models["a"]), str(quantized), weight_type=QuantType.QInt8)
    report = diff_models(DiffRequest(path_a=str(models["a"]), path_b=str(quantized)))
    changed = {n.node: n for n in report.changed}
    assert changed["conv_quant"].node_a == "conv" and changed["conv_quant"].matched_by == "quantizer's name"
    assert ("op_type", "MatMul", "MatMulInteger") in {(c.what, c.before, c.after) for c in changed["fc_quant"].changes}
    (weight,) = changed["fc_quant"].weights
    assert (weight.tensor_a, weight.tensor, say(weight.note)) == (
        "fc.weight",
        "fc.weight_quantized",
        "float32 64×10 → int8 64×10",
    )
    assert not report.removed and {"relu", "pool", "flat"}.isdisjoint(changed)
    assert {"DynamicQuantizeLinear", "Cast", "Mul"} <= {n.op_type for n in report.added}


def test_a_change_inside_an_if_branch_is_named_by_its_path_and_marks_the_if(tmp_path: Path) -> None:
    a, b = control_flow_model(), control_flow_model()
    then_branch = next(attr.g for attr in b.graph.node[0].attribute if attr.name == "then_branch")
    then_branch.node[0].op_type = "Sigmoid"
    onnx.save(a, tmp_path / "a.onnx")
    onnx.save(b, tmp_path / "b.onnx")
    report = diff_models(DiffRequest(path_a=str(tmp_path / "a.onnx"), path_b=str(tmp_path / "b.onnx")))
    changed = {(n.graph, n.node): n for n in report.changed}
    assert set(changed) == {("main / if (If).then_branch", "then_relu"), ("main", "if")}
    assert [(c.what, c.detail) for c in changed[("main", "if")].changes] == [("body", "then_branch")]
    assert report.unchanged == 4  # else_neg, the loop and its two body nodes


def test_the_cli_prints_added_removed_and_changed_as_json_naming_each_node(models: dict[str, Path]) -> None:
    result = cli("diff", str(models["a"]), str(models["added_removed"]), "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert {"added", "removed", "changed", "model", "renamed"} <= set(data)
    assert [n["node"] for n in data["added"]] == ["extra"] and [n["node"] for n in data["removed"]] == ["pool"]
    (flat,) = data["changed"]
    assert flat["node"] == "flat" and flat["changes"][0]["what"] == "input"


def test_a_file_that_is_no_onnx_model_is_refused_with_the_way_out(models: dict[str, Path], tmp_path: Path) -> None:
    other = tmp_path / "notes.onnx"
    other.write_bytes(b"\x00\x01 this is not a model")
    with pytest.raises(DiffError, match=r"“notes\.onnx” could not be parsed as an ONNX model .*two ONNX files"):
        diff_models(DiffRequest(path_a=str(models["a"]), path_b=str(other)))


def test_weights_in_external_data_are_read_from_their_files_and_compared(tmp_path: Path) -> None:
    for name, plant in (("a", None), ("b", _scale_conv)):
        model = small_net()
        if plant is not None:
            plant(model)
        onnx.save(model, tmp_path / f"{name}.onnx", save_as_external_data=True, location=f"{name}.data",
                  size_threshold=0)  # fmt: skip
    report = diff_models(DiffRequest(path_a=str(tmp_path / "a.onnx"), path_b=str(tmp_path / "b.onnx")))
    (conv,) = report.changed
    (w,) = conv.weights
    assert (w.tensor, w.differing, w.relative) == ("conv.weight", 108, pytest.approx(1.0))
    assert report.weights_compared == 3 and report.unchanged == 4


@pytest.mark.parametrize("form", ["QDQ", "QOperator"])
def test_a_statically_quantized_weight_is_compared_dequantized_with_the_float_one(
    form: str, models: dict[str, Path], tmp_path: Path
) -> None:
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    class Calibration(CalibrationDataReader):
        def __init__(self) -> None:
            self.batches = iter([{"x": np.random.default_rng(i).random((1, 3, 8, 8), np.float32)} for i in range(2)])

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self.batches, None)

    quantized = tmp_path / "static.onnx"
    quantize_static(str(models["a"]), str(quantized), Calibration(), quant_format=QuantFormat[form],
                    per_channel=True, weight_type=QuantType.QInt8)  # fmt: skip
    report = diff_models(DiffRequest(path_a=str(models["a"]), path_b=str(quantized)))
    weights = {w.tensor_a: w for n in report.changed for w in n.weights}
    conv, fc = weights["conv.weight"], weights["fc.weight"]
    assert (conv.dequantized, conv.tensor, fc.dequantized) == ("int8", "conv.weight_quantized", "int8")
    original = numpy_helper.to_array(small_net().graph.initializer[0])
    per_channel_step = np.abs(original).reshape(4, -1).max(axis=1).max() / 127
    assert 0 < conv.max_abs <= per_channel_step / 2 + 1e-7  # rounding to the nearest step, no more
    assert 0 < fc.relative < 0.02


def test_weights_a_constant_node_holds_are_diffed_as_weights(tmp_path: Path) -> None:
    """A Paddle export against the variant Quantize made of it, which moved its Constant-held weights into
    initializers: no Constant node is "removed", and the weight that changed is compared as a weight."""
    from core.model.proto import constants_to_initializers
    from tests.builders import constant_weights_model

    paddle = constant_weights_model()
    a = tmp_path / "paddle.onnx"
    onnx.save(paddle, a)
    moved = onnx.ModelProto()
    moved.CopyFrom(paddle)
    assert constants_to_initializers(moved) == 2
    w = next(t for t in moved.graph.initializer if t.name == "w")
    w.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(w) * 1.5, "w"))
    b = tmp_path / "variant.onnx"
    onnx.save(moved, b)
    report = diff_models(DiffRequest(path_a=str(a), path_b=str(b)))
    assert not report.removed and not report.added and not report.model, (report.removed, report.model)
    assert report.constant_weights == [2, 0] and report.weights_compared >= 1
    (matmul,) = [n for n in report.changed if n.node == "matmul"]
    assert [weight.tensor for weight in matmul.weights] == ["w"]
