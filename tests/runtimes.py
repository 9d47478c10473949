"""The runtimes' tests' models and the OpenVINO runtime they need (``make test`` builds it: make runtime-openvino)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from core.runtime.runtimes import RUNTIMES_DIR

__all__ = ["OPENVINO", "conv_split_model", "require_openvino", "split_model"]

OPENVINO = "openvino"


def require_openvino() -> None:
    """Fail (not skip: a runtime that did not build must not pass unseen) when the OpenVINO runtime is not built."""
    if not (RUNTIMES_DIR / OPENVINO / ".ready").is_file():
        pytest.fail("The OpenVINO runtime is not built: `make runtime-openvino` (make test builds it).")


def split_model(op: str = "Det") -> onnx.ModelProto:
    """Relu → Det (or Hardmax) → Relu: OpenVINO declines Det and Hardmax, so ORT gives it one piece and the CPU
    provider the rest (FACTS)."""
    shape, middle = ([2, 3, 3], [2]) if op == "Det" else ([2, 3], [2, 3])
    graph = helper.make_graph(
        [
            helper.make_node("Relu", ["x"], ["a"], name="relu_in"),
            helper.make_node(op, ["a"], ["d"], name=op.lower()),
            helper.make_node("Relu", ["d"], ["y"], name="relu_out"),
        ],
        "split",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, middle)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="tests")
    model.ir_version = 8
    return model


def conv_split_model(seed: int = 0) -> onnx.ModelProto:
    """A small convolutional network with a Hardmax between two Relus in its middle: OpenVINO takes the
    convolutions on either side, the CPU provider the Hardmax (the measured model of benchmarks/runtimes.py)."""
    rng = np.random.default_rng(seed)

    def weight(name: str, *shape: int) -> onnx.TensorProto:
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.1).astype(np.float32), name)

    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Hardmax", ["r1"], ["h"], name="hardmax", axis=-1),
        helper.make_node("Relu", ["h"], ["r2"], name="relu2"),
        helper.make_node("Conv", ["r2", "w2", "b2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r3"], name="relu3"),
        helper.make_node("GlobalAveragePool", ["r3"], ["p"], name="pool"),
        helper.make_node("Flatten", ["p"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "w3", "b3"], ["y"], name="fc", transB=1),
    ]
    weights = [
        weight("w1", 16, 3, 3, 3),
        weight("b1", 16),
        weight("w2", 32, 16, 3, 3),
        weight("b2", 32),
        weight("w3", 10, 32),
        weight("b3", 10),
    ]
    graph = helper.make_graph(
        nodes,
        "conv_split",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 112, 112])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
        initializer=weights,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="tests")
    model.ir_version = 8
    return model
