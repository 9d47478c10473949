"""Models for the graph view: a transformer-like stack of named blocks, scoped as torch exports name them, and a
classic CNN (a deep ResNet-like stack of bottlenecks with their BatchNorms, as tf2onnx and training-mode exports
keep them)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

__all__ = ["NODES_PER_LAYER", "classic_cnn", "transformer_like"]

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


def _conv_bn_relu(
    scope: str, x: str, c_in: int, c_out: int, k: int, stride: int, inits: list[onnx.TensorProto], relu: bool = True
) -> tuple[list[onnx.NodeProto], str]:
    rng = np.random.default_rng(len(inits))
    w = f"{scope.strip('/').replace('/', '.')}"
    inits.append(numpy_helper.from_array(rng.normal(0, 0.1, (c_out, c_in, k, k)).astype(np.float32), f"{w}.weight"))
    for part, value in (("bn.scale", 1.0), ("bn.bias", 0.0), ("bn.mean", 0.0), ("bn.var", 1.0)):
        inits.append(numpy_helper.from_array(np.full((c_out,), value, np.float32), f"{w}.{part}"))
    pad = k // 2
    n = helper.make_node
    nodes = [
        n("Conv", [x, f"{w}.weight"], [f"{w}.c"], name=f"{scope}/Conv", kernel_shape=[k, k], strides=[stride, stride],
          pads=[pad] * 4),
        n("BatchNormalization", [f"{w}.c", f"{w}.bn.scale", f"{w}.bn.bias", f"{w}.bn.mean", f"{w}.bn.var"], [f"{w}.b"],
          name=f"{scope}/BatchNormalization", epsilon=1e-5),
    ]  # fmt: skip
    if not relu:
        return nodes, f"{w}.b"
    nodes.append(n("Relu", [f"{w}.b"], [f"{w}.r"], name=f"{scope}/Relu"))
    return nodes, f"{w}.r"


def classic_cnn(stages: tuple[int, ...] = (3, 24, 140, 3), width: int = 8) -> onnx.ModelProto:
    """A ResNet-like classifier: a stem, bottleneck blocks (1×1, 3×3, 1×1 convolutions, each with its
    BatchNorm, a residual Add and a Relu; a projection on each stage's first block) named
    /layerS/layerS.B/convN/..., global pooling and a linear head: 10 nodes a block, so the default 170 blocks
    make 1,715 nodes (ResNet-152's stages, (3, 8, 36, 3), make 515). The channels are small, and so the file."""
    inits: list[onnx.TensorProto] = []
    nodes, x = _conv_bn_relu("/stem/conv1", "image", 3, width, 7, 2, inits)
    nodes.append(helper.make_node("MaxPool", [x], ["pooled"], name="/stem/maxpool/MaxPool", kernel_shape=[3, 3],
                                  strides=[2, 2], pads=[1, 1, 1, 1]))  # fmt: skip
    x, c_in = "pooled", width
    for s, blocks in enumerate(stages, start=1):
        c_mid, c_out = width * 2 ** (s - 1), width * 2 ** (s + 1)
        for b in range(blocks):
            scope = f"/layer{s}/layer{s}.{b}"
            stride = 2 if b == 0 and s > 1 else 1
            block: list[onnx.NodeProto] = []
            h = x
            for i, (k, c_a, c_b, st, act) in enumerate(
                ((1, c_in, c_mid, 1, True), (3, c_mid, c_mid, stride, True), (1, c_mid, c_out, 1, False)), start=1
            ):
                more, h = _conv_bn_relu(f"{scope}/conv{i}", h, c_a, c_b, k, st, inits, relu=act)
                block += more
            skip = x
            if b == 0:
                more, skip = _conv_bn_relu(f"{scope}/downsample", x, c_in, c_out, 1, stride, inits, relu=False)
                block += more
            block.append(helper.make_node("Add", [h, skip], [f"{scope}.sum"], name=f"{scope}/Add"))
            block.append(helper.make_node("Relu", [f"{scope}.sum"], [f"{scope}.out"], name=f"{scope}/Relu"))
            nodes += block
            x, c_in = f"{scope}.out", c_out
    inits.append(numpy_helper.from_array(np.zeros((c_in, 1000), np.float32), "fc.weight"))
    nodes += [
        helper.make_node("GlobalAveragePool", [x], ["gap"], name="/avgpool/GlobalAveragePool"),
        helper.make_node("Flatten", ["gap"], ["flat"], name="/Flatten", axis=1),
        helper.make_node("MatMul", ["flat", "fc.weight"], ["logits"], name="/fc/MatMul"),
    ]
    graph = helper.make_graph(
        nodes,
        "classic_cnn",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["batch", 3, 224, 224])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1000])],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
