"""Models shaped like real third-party ones, built in code: what real exports do that our zoo does not."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

__all__ = ["detector_model", "ir3_model", "minus_one_classifier", "range_model", "token_model", "vad_model"]


def _weights(shape: tuple[int, ...], seed: int, name: str) -> onnx.TensorProto:
    return numpy_helper.from_array((np.random.default_rng(seed).standard_normal(shape) * 0.1).astype(np.float32), name)


def _model(graph: onnx.GraphProto, opset: int = 17, ir: int = 8, producer: str = "tests") -> onnx.ModelProto:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name=producer)
    model.ir_version = ir
    return model


def detector_model() -> onnx.ModelProto:
    """A text detector as Paddle exports it: a `-1` batch, free height and width, weights in Constant nodes,
    and an output map as large as the image (no scores vector: not a classifier)."""
    nodes = [
        helper.make_node("Constant", [], ["conv2d_394.w_0"], value=_weights((8, 3, 3, 3), 0, "w0"), name="w0"),
        helper.make_node("Constant", [], ["conv2d_395.w_0"], value=_weights((1, 8, 1, 1), 1, "w1"), name="w1"),
        helper.make_node("Conv", ["x", "conv2d_394.w_0"], ["c0"], pads=[1, 1, 1, 1], name="conv2d_394"),
        helper.make_node("Relu", ["c0"], ["r0"], name="relu_0"),
        helper.make_node("Conv", ["r0", "conv2d_395.w_0"], ["c1"], name="conv2d_395"),
        helper.make_node("Sigmoid", ["c1"], ["maps"], name="sigmoid_0"),
    ]
    graph = helper.make_graph(
        nodes,
        "det",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [-1, 3, "?", "?"])],
        [helper.make_tensor_value_info("maps", TensorProto.FLOAT, [-1, 1, "?", "?"])],
    )
    return _model(graph, opset=11, ir=6, producer="PaddlePaddle")


def minus_one_classifier() -> onnx.ModelProto:
    """A small classifier from another framework: batch written as dim_value -1, a vector of scores out."""
    nodes = [
        helper.make_node("Conv", ["image", "w"], ["c"], strides=[2, 2], name="conv"),
        helper.make_node("GlobalAveragePool", ["c"], ["g"], name="pool"),
        helper.make_node("Flatten", ["g"], ["scores"], name="flatten"),
    ]
    graph = helper.make_graph(
        nodes,
        "cls",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [-1, 3, 64, 64])],
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, [-1, 4])],
        [_weights((4, 3, 3, 3), 2, "w")],
    )
    return _model(graph, producer="tf2onnx")


def vad_model() -> onnx.ModelProto:
    """A voice-activity model: audio ``input`` [batch, samples], a recurrent ``state`` whose batch is axis 1,
    and an int64 scalar ``sr`` that picks the branch: 16 kHz pads the audio by reflection (64 samples on each
    side, so a chunk must be longer than that), any other rate takes a different path."""
    pads = numpy_helper.from_array(np.array([0, 64, 0, 64], np.int64), "pads")
    then_graph = helper.make_graph(
        [
            helper.make_node("Pad", ["input", "pads"], ["padded"], mode="reflect", name="reflect_pad"),
            helper.make_node("ReduceMean", ["padded"], ["m16"], axes=[1], keepdims=1, name="mean_16k"),
        ],
        "sr_16k",
        [],
        [helper.make_tensor_value_info("m16", TensorProto.FLOAT, ["batch", 1])],
    )
    else_graph = helper.make_graph(
        [helper.make_node("ReduceMax", ["input"], ["m8"], axes=[1], keepdims=1, name="max_8k")],
        "sr_8k",
        [],
        [helper.make_tensor_value_info("m8", TensorProto.FLOAT, ["batch", 1])],
    )
    nodes = [
        helper.make_node("Equal", ["sr", "rate_16k"], ["is_16k"], name="is_16k"),
        helper.make_node("If", ["is_16k"], ["level"], then_branch=then_graph, else_branch=else_graph, name="by_rate"),
        helper.make_node("Sigmoid", ["level"], ["output"], name="prob"),
        helper.make_node("Unsqueeze", ["level", "axis0"], ["level3"], name="to_state"),
        helper.make_node("Expand", ["level3", "state_shape"], ["level_state"], name="expand"),
        helper.make_node("Concat", ["state", "level_state"], ["stateN"], axis=2, name="next_state"),
    ]
    graph = helper.make_graph(
        nodes,
        "vad",
        [
            helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", "samples"]),
            helper.make_tensor_value_info("state", TensorProto.FLOAT, [2, "batch", 128]),
            helper.make_tensor_value_info("sr", TensorProto.INT64, []),
        ],
        [
            helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", 1]),
            helper.make_tensor_value_info("stateN", TensorProto.FLOAT, [2, "batch", 129]),
        ],
        [
            pads,
            numpy_helper.from_array(np.array(16000, np.int64), "rate_16k"),
            numpy_helper.from_array(np.array([0], np.int64), "axis0"),
            numpy_helper.from_array(np.array([2, 1, 1], np.int64), "state_shape"),
        ],
    )
    return _model(graph, opset=16)


def token_model(vocabulary: int = 1000) -> onnx.ModelProto:
    """A text encoder's front: token ids through an embedding table, an attention mask, token type ids."""
    nodes = [
        helper.make_node("Gather", ["embeddings", "input_ids"], ["emb"], name="embed"),
        helper.make_node("Cast", ["attention_mask"], ["mask_f"], to=TensorProto.FLOAT, name="cast_mask"),
        helper.make_node("Unsqueeze", ["mask_f", "last"], ["mask3"], name="mask3"),
        helper.make_node("Mul", ["emb", "mask3"], ["masked"], name="apply_mask"),
        helper.make_node("Gather", ["type_table", "token_type_ids"], ["types"], name="embed_types"),
        helper.make_node("Add", ["masked", "types"], ["hidden"], name="add_types"),
    ]
    graph = helper.make_graph(
        nodes,
        "tokens",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "sequence"]),
            helper.make_tensor_value_info("token_type_ids", TensorProto.INT64, ["batch", "sequence"]),
        ],
        [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["batch", "sequence", 16])],
        [
            _weights((vocabulary, 16), 3, "embeddings"),
            _weights((2, 16), 4, "type_table"),
            numpy_helper.from_array(np.array([-1], np.int64), "last"),
        ],
    )
    return _model(graph)


def ir3_model() -> onnx.ModelProto:
    """IR version 3, as old exporters wrote it: every initializer is also listed as a graph input."""
    w = _weights((4, 3, 3, 3), 5, "W")
    graph = helper.make_graph(
        [helper.make_node("Conv", ["data", "W"], ["out"], name="conv")],
        "ir3",
        [
            helper.make_tensor_value_info("data", TensorProto.FLOAT, [1, 3, 16, 16]),
            helper.make_tensor_value_info("W", TensorProto.FLOAT, [4, 3, 3, 3]),
        ],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 4, 14, 14])],
        [w],
    )
    return _model(graph, opset=8, ir=3, producer="old-exporter")


def range_model(scale: float) -> onnx.ModelProto:
    """Values that leave float16's range on the way: scaled by ``scale`` and summed (3,000 passes 65,504 in the
    MatMul; 1e-9 sinks below float16's smallest number), then scaled back."""
    nodes = [
        helper.make_node("Mul", ["x", "up"], ["big"], name="amplify"),
        helper.make_node("MatMul", ["big", "w"], ["summed"], name="sum_up"),
        helper.make_node("Div", ["summed", "down"], ["y"], name="shrink"),
    ]
    graph = helper.make_graph(
        nodes,
        "ranges",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 256])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])],
        [
            numpy_helper.from_array(np.array(scale, np.float32), "up"),
            numpy_helper.from_array(np.random.default_rng(6).uniform(1, 10, (256, 4)).astype(np.float32), "w"),
            numpy_helper.from_array(np.array(scale * 100, np.float32), "down"),
        ],
    )
    return _model(graph)
