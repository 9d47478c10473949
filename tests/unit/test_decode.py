"""Decode: what we report about a model must agree with what the onnx library itself says."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from core.decode import DecodeRequest, annotate_header, decode_model, sentences, summary
from core.i18n import using
from core.model import zoo
from core.model.intake import IntakeRequest, describe_files
from core.model.topology import has_cycle
from core.notes import say, say_all
from tests import builders
from tests.cli import cli
from ui.decode_view import model_tree


def library_view(path: Path) -> dict:
    """Node counts, op counts and weight bytes as onnx itself computes them (weights loaded)."""
    model = onnx.load(str(path))
    weights = [numpy_helper.to_array(t) for t in model.graph.initializer]
    constants = [
        numpy_helper.to_array(a.t)
        for n in model.graph.node
        for a in n.attribute
        if a.type == onnx.AttributeProto.TENSOR
    ]
    nested = 0
    stack = list(model.graph.node)
    while stack:
        node = stack.pop()
        for attr in node.attribute:
            for g in [attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs):
                nested += 1
                stack.extend(g.node)
    return {
        "node_count": len(model.graph.node),
        "op_counts": dict(Counter(n.op_type for n in model.graph.node)),
        "initializer_count": len(model.graph.initializer),
        "initializer_bytes": sum(w.nbytes for w in weights + constants),
        "parameter_count": sum(w.size for w in weights + constants if w.dtype not in (np.int64, np.int32)),
        "subgraph_count": nested,
    }


MODELS = {
    "constant_weights": builders.constant_weights_model,
    "control_flow": builders.control_flow_model,
    "fp16": builders.fp16_model,
    "mixed_inputs": builders.mixed_inputs_model,
    "chain": builders.chain_model,
    "function": builders.function_model,
}


@pytest.mark.parametrize("name", list(zoo.SAMPLES))
def test_decode_of_every_sample_agrees_with_the_onnx_library(tmp_path: Path, name: str) -> None:
    path = builders.exported_sample(name, tmp_path)
    got = summary(decode_model(DecodeRequest(path=str(path))))
    assert {k: got[k] for k in library_view(path)} == library_view(path)


@pytest.mark.parametrize("name", list(MODELS))
def test_decode_of_models_from_the_wild_agrees_with_the_onnx_library(tmp_path: Path, name: str) -> None:
    path = builders.write(MODELS[name](), tmp_path / f"{name}.onnx")
    got = summary(decode_model(DecodeRequest(path=str(path))))
    assert {k: got[k] for k in library_view(path)} == library_view(path)


def test_external_data_is_described_without_being_loaded(tmp_path: Path) -> None:
    main = builders.save_with_external_data(builders.chain_model(40), tmp_path)
    decoded = decode_model(DecodeRequest(path=str(main)))
    assert decoded.external_files == ["model.onnx.data"]
    assert all(t.storage.key == sentences.EXTERNAL for t in decoded.initializers)
    assert all(say(t.storage).startswith("external: model.onnx.data @ ") for t in decoded.initializers)
    assert decoded.initializer_bytes == 20 * 16 * 4 == library_view(main)["initializer_bytes"]
    assert decoded.checker_ok


def test_a_data_file_linked_twice_passes_the_checker_as_the_app_links_uploads(tmp_path: Path) -> None:
    # the app links an upload into its workspace and the worker's folder: onnx alone calls that a hardlink attack
    main = builders.save_with_external_data(builders.chain_model(40), tmp_path / "model")
    (tmp_path / "workspace-copy.data").hardlink_to(main.parent / "model.onnx.data")
    decoded = decode_model(DecodeRequest(path=str(main)))
    assert decoded.checker_ok, say(decoded.checker_message)
    broken = onnx.load(str(main), load_external_data=False)
    broken.graph.node[0].op_type = "NoSuchOp"
    onnx.save_model(broken, str(main))
    assert decode_model(DecodeRequest(path=str(main))).checker_ok is False  # the checker still judges the graph


def test_fp16_weights_count_two_bytes_each(tmp_path: Path) -> None:
    decoded = decode_model(DecodeRequest(path=str(builders.write(builders.fp16_model(), tmp_path / "h.onnx"))))
    assert [(t.dtype, t.bytes) for t in decoded.initializers] == [("float16", 32)]


def test_header_explains_ir_version_field_by_field(tmp_path: Path) -> None:
    data = builders.relu_model().SerializeToString()
    fields = annotate_header(data[:64], len(data))
    assert (fields[0].hex, fields[0].field, fields[0].value) == ("08 08", "ir_version", "8")
    assert "field 1 << 3 | wire type 0" in say(fields[0].explanation)
    with using("zh"):  # said in the reader's language, the clause inside it too
        assert say(fields[0].explanation) == "标签 08 = 字段 1 << 3 | 线路类型 0（varint）；后面的 varint 值为 8。"
    assert [f.field for f in fields][:2] == ["ir_version", "producer_name"] and fields[1].value == "'tests'"


def test_fields_after_the_graph_are_found_by_jumping_over_it(tmp_path: Path) -> None:
    path = builders.exported_sample("tinycnn", tmp_path)
    fields = decode_model(DecodeRequest(path=str(path))).header
    names = [f.field for f in fields]
    assert names.index("graph") < names.index("opset_import")
    opset = next(f for f in fields if f.field == "opset_import")
    assert (
        not isinstance(opset.value, str) and say(opset.value) == "domain '' (the default domain, ai.onnx), version 17"
    )
    assert opset.offset + opset.length == path.stat().st_size or names[-1] != "opset_import"


def test_shared_weights_behind_identity_nodes_are_counted_once_where_they_are_used(tmp_path: Path) -> None:
    decoded = decode_model(DecodeRequest(path=str(builders.exported_sample("transformer", tmp_path))))
    assert not [layer for layer in decoded.layers if layer.op_type == "Identity"]
    tensors = [t for layer in decoded.layers for t in layer.tensors]
    assert len(tensors) == len(set(tensors))
    assert sum(layer.parameters for layer in decoded.layers) <= decoded.parameter_count


def test_subgraphs_and_functions_are_listed(tmp_path: Path) -> None:
    decoded = decode_model(DecodeRequest(path=str(builders.write(builders.control_flow_model(), tmp_path / "cf.onnx"))))
    assert sorted(s.attribute for s in decoded.subgraphs) == ["body", "else_branch", "then_branch"]
    assert {n.graph for n in decoded.nodes} == {"main"} | {s.path for s in decoded.subgraphs}
    functions = decode_model(
        DecodeRequest(path=str(builders.write(builders.function_model(), tmp_path / "f.onnx")))
    ).functions
    assert [(f.name, f.node_count) for f in functions] == [("DoubleRelu", 2)]


def test_weights_per_layer_include_constant_node_weights(tmp_path: Path) -> None:
    decoded = decode_model(
        DecodeRequest(path=str(builders.write(builders.constant_weights_model(), tmp_path / "c.onnx")))
    )
    assert {(layer.op_type, layer.parameters) for layer in decoded.layers} == {("MatMul", 32), ("Add", 4)}


def test_text_form_leaves_large_weights_out(tmp_path: Path) -> None:
    decoded = decode_model(DecodeRequest(path=str(builders.exported_sample("tinycnn", tmp_path))))
    assert "{…}" in decoded.text and len(decoded.text) < 20_000
    assert "Conv" in decoded.text


def test_damaged_and_odd_models_decode_what_they_can(tmp_path: Path) -> None:
    whole = builders.chain_model(40).SerializeToString()
    cut = tmp_path / "cut.onnx"
    cut.write_bytes(whole[: len(whole) // 2])
    decoded = decode_model(DecodeRequest(path=str(cut)))
    assert decoded.header[0].field == "ir_version" and "could not be parsed" in say(decoded.problems[0])

    model = builders.relu_model()
    model.ir_version = 999
    model.opset_import.append(helper.make_opsetid("com.example.custom", 1))
    model.opset_import[0].version = 999
    decoded = decode_model(DecodeRequest(path=str(builders.write(model, tmp_path / "future.onnx"))))
    problems = " ".join(say_all(decoded.problems))
    assert "IR version 999 is newer" in problems and "Opset 999 is newer" in problems
    assert "'com.example.custom' is declared in the model's opset imports but no node uses it" in problems
    assert decoded.node_count == 1 and decoded.checker_ok is False

    empty = onnx.ModelProto(ir_version=8)
    decoded = decode_model(DecodeRequest(path=str(builders.write(empty, tmp_path / "nograph.onnx"))))
    assert [(p.key, p.severity) for p in decoded.problems] == [(sentences.NO_GRAPH, "warning")]
    assert say_all(decoded.problems) == ["The model has no graph: there is nothing to run."]


def test_a_custom_domain_is_custom_only_where_a_node_uses_it(tmp_path: Path) -> None:
    model = builders.relu_model()
    model.opset_import.extend([helper.make_opsetid("Paddle", 1), helper.make_opsetid("com.example", 1)])
    model.graph.node.append(helper.make_node("Scale", ["y"], ["z"], domain="com.example", name="scale"))
    decoded = decode_model(DecodeRequest(path=str(builders.write(model, tmp_path / "paddle.onnx"))))
    assert [p for p in say_all(decoded.problems) if "domain" in p] == [
        "Operator domain 'com.example' is not a standard one: its ops are custom.",
        "Operator domain 'Paddle' is declared in the model's opset imports but no node uses it: nothing custom runs.",
    ]


def test_constant_node_weights_count_the_same_on_the_model_and_decode_pages(tmp_path: Path) -> None:
    """Weights held in Constant nodes (8×4 and 4), and a ConstantOfShape whose one-element fill value is an
    attribute, not a weight: both pages count 36 parameters."""
    model = builders.constant_weights_model()
    shape = numpy_helper.from_array(np.array([2], np.int64), "shape_value")
    fill = numpy_helper.from_array(np.array([0.5], np.float32), "fill")
    model.graph.node.extend([
        helper.make_node("Constant", [], ["pad_shape"], value=shape, name="pad_shape"),
        helper.make_node("ConstantOfShape", ["pad_shape"], ["pad"], value=fill, name="pad"),
    ])  # fmt: skip
    model.graph.output.append(helper.make_tensor_value_info("pad", TensorProto.FLOAT, [2]))
    path = builders.write(model, tmp_path / "constant_weights.onnx")
    record = describe_files(IntakeRequest(paths=[str(path)]))
    decoded = decode_model(DecodeRequest(path=str(path)))
    assert record.parameter_count == decoded.parameter_count == 36


def test_a_cycle_is_reported_and_still_drawn(tmp_path: Path) -> None:
    nodes = [
        helper.make_node("Add", ["x", "b"], ["a"], name="first"),
        helper.make_node("Relu", ["a"], ["b"], name="second"),
    ]
    graph = helper.make_graph(
        nodes,
        "cyclic",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("b", TensorProto.FLOAT, [1])],
    )
    decoded = decode_model(DecodeRequest(path=str(builders.write(helper.make_model(graph), tmp_path / "cycle.onnx"))))
    assert any(p.key == sentences.CYCLE for p in decoded.problems)
    assert any("has a cycle" in p for p in say_all(decoded.problems))
    assert has_cycle(graph) and not has_cycle(builders.chain_model(10).graph)
    selfish = helper.make_graph([helper.make_node("Relu", ["y"], ["y"])], "self", [], [])
    assert has_cycle(selfish)


def test_deeply_nested_ifs_do_not_exhaust_the_stack(tmp_path: Path) -> None:
    leaf = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y0"])],
        "leaf",
        [],
        [helper.make_tensor_value_info("y0", TensorProto.FLOAT, [1])],
    )
    inner = leaf
    for depth in range(1, 30):  # only the then-branch nests, so the model grows linearly; protobuf parses ~30 levels
        node = helper.make_node("If", ["c"], [f"y{depth}"], then_branch=inner, else_branch=leaf)
        inner = helper.make_graph(
            [node], f"level{depth}", [], [helper.make_tensor_value_info(f"y{depth}", TensorProto.FLOAT, [1])]
        )
    graph = helper.make_graph(
        list(inner.node),
        "deep",
        [
            helper.make_tensor_value_info("c", TensorProto.BOOL, []),
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [1]),
        ],
        list(inner.output),
    )
    path = builders.write(helper.make_model(graph), tmp_path / "deep.onnx")
    decoded = decode_model(DecodeRequest(path=str(path), with_text=False))
    assert max(s.depth for s in decoded.subgraphs) == 29 and len(decoded.subgraphs) == 2 * 29


def test_model_tree_is_json_and_holds_the_fields_a_learner_meets(tmp_path: Path) -> None:
    model = builders.relu_model()
    helper.set_model_props(model, {"author": "<script>alert(1)</script>"})
    decoded = decode_model(DecodeRequest(path=str(builders.write(model, tmp_path / "m.onnx"))))
    tree = json.loads(json.dumps(model_tree(decoded)))
    assert tree["opset_import"] == {"ai.onnx": 17} and tree["graph"]["input"] == {"x": "float32 [batch×4]"}
    assert tree["metadata_props"]["author"] == "<script>alert(1)</script>"  # st.json shows it as text


def test_cli_inspect_json_has_the_promised_fields(tmp_path: Path) -> None:
    path = builders.write(builders.control_flow_model(), tmp_path / "cf.onnx")
    result = cli("inspect", str(path), "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    for key in (
        "ir_version",
        "producer_name",
        "opsets",
        "inputs",
        "outputs",
        "node_count",
        "op_counts",
        "initializer_count",
        "parameter_count",
        "initializer_bytes",
        "subgraph_count",
        "header_fields",
    ):
        assert key in data
    assert data["subgraph_count"] == 3 and data["op_counts"] == {"If": 1, "Loop": 1}
    assert data["header_fields"][0]["field"] == "ir_version"
    first = data["header_fields"][0]  # its words in English, for a pipeline, whatever the reader's language
    assert first["explanation"].startswith("tag 08 = field 1 << 3 | wire type 0 (varint)") and first["value"] == "8"
    assert json.loads(cli("--lang", "zh", "inspect", str(path), "--json").stdout)["header_fields"][0] == first


def test_cli_inspect_says_a_problem_in_the_readers_language(tmp_path: Path) -> None:
    """The decoded model keeps its problems as data: the text says them in Chinese, the JSON in English."""
    model = builders.relu_model()
    model.opset_import.append(helper.make_opsetid("Paddle", 1))
    path = builders.write(model, tmp_path / "paddle.onnx")
    chinese = cli("--lang", "zh", "inspect", str(path))
    assert chinese.returncode == 0, chinese.stderr
    assert "问题       算子域 'Paddle' 在模型的 opset 导入中声明了，但没有节点使用它" in chinese.stdout
    data = json.loads(cli("--lang", "zh", "inspect", str(path), "--json").stdout)
    assert data["problems"] == [
        "Operator domain 'Paddle' is declared in the model's opset imports but no node uses it: nothing custom runs."
    ]


def test_weights_bytes_of_a_real_array_match(tmp_path: Path) -> None:
    array = np.arange(12, dtype=np.float64).reshape(3, 4)
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.DOUBLE, [3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.DOUBLE, [3, 4])],
        [numpy_helper.from_array(array, "w")],
    )
    decoded = decode_model(DecodeRequest(path=str(builders.write(helper.make_model(graph), tmp_path / "d.onnx"))))
    assert decoded.initializer_bytes == array.nbytes == 96


def test_cli_inspect_on_a_truncated_file_shows_its_first_fields_and_fails(tmp_path: Path) -> None:
    whole = builders.chain_model(40).SerializeToString()
    cut = tmp_path / "cut.onnx"
    cut.write_bytes(whole[: len(whole) // 2])
    result = cli("inspect", str(cut), "--json")
    assert result.returncode == 2 and "truncated or damaged" in result.stderr
    data = json.loads(result.stdout)
    assert data["header_fields"][0]["field"] == "ir_version" and "truncated or damaged" in data["problems"][0]
