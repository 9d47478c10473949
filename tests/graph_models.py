"""Models for the graph view: a transformer-like stack of named blocks, scoped as torch exports name them."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

__all__ = ["NODES_PER_LAYER", "transformer_like"]

NODES_PER_LAYER = 20


def _layer(i: int, x: str, hidden: int, inits: list[onnx.TensorProto]) -> tuple[list[onnx.NodeProto], str]:
    """One block: attention (Q/K/V MatMuls, Softmax, Transpose) and an MLP, with two residual Adds and norms."""
    p = f"/encoder/layer.{i}"
    w = f"layer{i}"
    for name in ("q", "k", "v", "o", "up", "down"):
        inits.append(numpy_helper.from_array(np.zeros((hidden, hidden), np.float32), f"{w}.{name}.weight"))
    inits.append(numpy_helper.from_array(np.ones((hidden,), np.float32), f"{w}.ln.weight"))
    n = helper.make_node
    nodes = [
        n("LayerNormalization", [x, f"{w}.ln.weight"], [f"{w}.ln1"], name=f"{p}/attn_norm/LayerNorm", axis=-1),
        n("MatMul", [f"{w}.ln1", f"{w}.q.weight"], [f"{w}.q"], name=f"{p}/attn/q/MatMul"),
        n("MatMul", [f"{w}.ln1", f"{w}.k.weight"], [f"{w}.k"], name=f"{p}/attn/k/MatMul"),
        n("MatMul", [f"{w}.ln1", f"{w}.v.weight"], [f"{w}.v"], name=f"{p}/attn/v/MatMul"),
        n("Transpose", [f"{w}.k"], [f"{w}.kt"], name=f"{p}/attn/Transpose", perm=[0, 2, 1]),
        n("MatMul", [f"{w}.q", f"{w}.kt"], [f"{w}.s"], name=f"{p}/attn/scores/MatMul"),
        n("Mul", [f"{w}.s", "scale"], [f"{w}.ss"], name=f"{p}/attn/scale/Mul"),
        n("Softmax", [f"{w}.ss"], [f"{w}.p"], name=f"{p}/attn/Softmax", axis=-1),
        n("MatMul", [f"{w}.p", f"{w}.v"], [f"{w}.c"], name=f"{p}/attn/context/MatMul"),
        n("MatMul", [f"{w}.c", f"{w}.o.weight"], [f"{w}.ao"], name=f"{p}/attn/out/MatMul"),
        n("Add", [x, f"{w}.ao"], [f"{w}.r1"], name=f"{p}/attn/residual/Add"),
        n("LayerNormalization", [f"{w}.r1", f"{w}.ln.weight"], [f"{w}.ln2"], name=f"{p}/mlp_norm/LayerNorm", axis=-1),
        n("MatMul", [f"{w}.ln2", f"{w}.up.weight"], [f"{w}.u"], name=f"{p}/mlp/up/MatMul"),
        n("Sigmoid", [f"{w}.u"], [f"{w}.g"], name=f"{p}/mlp/act/Sigmoid"),
        n("Mul", [f"{w}.u", f"{w}.g"], [f"{w}.a"], name=f"{p}/mlp/act/Mul"),
        n("MatMul", [f"{w}.a", f"{w}.down.weight"], [f"{w}.d"], name=f"{p}/mlp/down/MatMul"),
        n("Cast", [f"{w}.d"], [f"{w}.h"], name=f"{p}/mlp/Cast_to_half", to=TensorProto.FLOAT16),
        n("Cast", [f"{w}.h"], [f"{w}.f"], name=f"{p}/mlp/Cast_to_float", to=TensorProto.FLOAT),
        n("Add", [f"{w}.r1", f"{w}.f"], [f"{w}.r2"], name=f"{p}/mlp/residual/Add"),
        n("Identity", [f"{w}.r2"], [f"{w}.out"], name=f"{p}/Identity"),
    ]
    assert len(nodes) == NODES_PER_LAYER
    return nodes, f"{w}.out"


def transformer_like(layers: int, hidden: int = 4) -> onnx.ModelProto:
    """An embedding, ``layers`` blocks of 20 nodes named /encoder/layer.N/..., and a head: 20·layers + 3 nodes."""
    inits = [
        numpy_helper.from_array(np.zeros((100, hidden), np.float32), "embed.weight"),
        numpy_helper.from_array(np.array(0.5, np.float32), "scale_value"),
    ]
    nodes = [
        helper.make_node("Gather", ["embed.weight", "ids"], ["x0"], name="/embed/Gather"),
        helper.make_node("Constant", [], ["scale"], value=numpy_helper.from_array(np.array(0.5, np.float32))),
    ]
    x = "x0"
    for i in range(layers):
        block, x = _layer(i, x, hidden, inits)
        nodes += block
    inits.append(numpy_helper.from_array(np.zeros((hidden, 10), np.float32), "head.weight"))
    nodes.append(helper.make_node("MatMul", [x, "head.weight"], ["logits"], name="/head/MatMul"))
    nodes.append(helper.make_node("Softmax", ["logits"], ["probs"], name="/head/Softmax", axis=-1))
    graph = helper.make_graph(
        nodes,
        "transformer_like",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", 16])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", 16, 10])],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
