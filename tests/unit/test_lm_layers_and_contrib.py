"""A language model on the Decode and Partition pages' cores: its decoder layers found by their nodes' names
(core.decode.layers: onnxruntime-genai's /model/layers.N/, GPT-2's /transformer/h.N/, torch's module path in a
node's metadata), and where ONNX Runtime's own ops run (core.partition's contrib: GroupQueryAttention,
MatMulNBits). The models: tests/lm_models.py's (fixtures of tests/unit/conftest.py) and one MatMulNBits by hand."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from core.decode import DecodeRequest, decode_model
from core.decode.layers import block_of
from core.partition import PartitionRequest, partition_model
from tests.cli import cli
from tests.lm_models import LanguageModel


def test_block_of_reads_the_layer_from_a_name_or_a_module_path() -> None:
    assert block_of("/model/layers.3/attn/GroupQueryAttention") == ("model.layers.3", 3)
    assert block_of("/model/transformer/h.11/mlp/c_fc/Gemm") == ("model.transformer.h.11", 11)
    assert block_of("model.layers.0.self_attn.q_proj") == ("model.layers.0", 0)
    assert block_of("/encoder/layer.2/output/Add") == ("encoder.layer.2", 2)
    assert block_of("/model/embed_tokens/Gather") is None and block_of("Identity_12") is None
    assert block_of("/model/layers.x/attn") is None  # a number, or nothing


def test_decode_groups_a_language_models_nodes_by_layer(qwen_genai: LanguageModel, gpt2_past: LanguageModel) -> None:
    qwen = decode_model(DecodeRequest(path=str(qwen_genai.onnx), with_text=False)).layer_groups
    assert [g.name for g in qwen[:2]] == ["model.layers.0", "model.layers.1"]
    assert all(g.ops.get("GroupQueryAttention") == 1 and g.ops.get("MatMul") for g in qwen[:2])
    assert all("GroupQueryAttention" in g.contrib_ops for g in qwen[:2]) and all(g.parameters > 0 for g in qwen)
    gpt2 = decode_model(DecodeRequest(path=str(gpt2_past.onnx), with_text=False)).layer_groups
    assert [g.name for g in gpt2] == ["model.transformer.h.0", "model.transformer.h.1"]
    assert gpt2[0].nodes == gpt2[1].nodes and not gpt2[0].contrib_ops  # plain ONNX ops alike in both


def test_a_model_without_repeated_blocks_has_no_layer_table(tmp_path: Path) -> None:
    path = _matmul_nbits(tmp_path)
    assert decode_model(DecodeRequest(path=str(path), with_text=False)).layer_groups == []


def _matmul_nbits(folder: Path, k: int = 32, n: int = 8, block: int = 32) -> Path:
    """One MatMulNBits (int4 weights, com.microsoft), as onnxruntime's quantizer writes it."""
    blocks = k // block
    weight = numpy_helper.from_array(np.zeros((n, blocks, block // 2), np.uint8), "weight_q4")
    scales = numpy_helper.from_array(np.ones(n * blocks, np.float32), "weight_scales")
    node = helper.make_node(
        "MatMulNBits", ["x", "weight_q4", "weight_scales"], ["y"], name="/model/lm_head/MatMulNBits",
        domain="com.microsoft", K=k, N=n, bits=4, block_size=block,
    )  # fmt: skip
    graph = helper.make_graph(
        [node], "nbits", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, n])], [weight, scales],
    )  # fmt: skip
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    )
    model.ir_version = 8
    path = folder / "nbits.onnx"
    onnx.save_model(model, str(path))
    return path


def test_partition_names_the_contrib_ops_and_the_provider_that_took_them(
    qwen_genai: LanguageModel, tmp_path: Path
) -> None:
    report = partition_model(PartitionRequest(path=str(qwen_genai.onnx), level="disable")).reports[0]
    ops = {c.op: c for c in report.contrib}
    attention = ops["com.microsoft:GroupQueryAttention"]
    assert attention.nodes == 2 and attention.providers == {"CPUExecutionProvider": 2} and attention.added == 0
    nbits = partition_model(PartitionRequest(path=str(_matmul_nbits(tmp_path)))).reports[0].contrib
    assert [(c.op, c.providers) for c in nbits] == [("com.microsoft:MatMulNBits", {"CPUExecutionProvider": 1})]


def test_partition_json_lists_the_contrib_ops(qwen_genai: LanguageModel) -> None:
    done = cli("partition", str(qwen_genai.onnx), "--level", "disable", "--json")
    assert done.returncode == 0, done.stderr
    contrib = {c["op"]: c for c in json.loads(done.stdout)["contrib"]}
    assert contrib["com.microsoft:GroupQueryAttention"] == {
        "op": "com.microsoft:GroupQueryAttention", "nodes": 2, "providers": {"CPUExecutionProvider": 2}, "added": 0,
    }  # fmt: skip
