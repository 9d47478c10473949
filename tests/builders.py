"""Models shaped like the ones found in the wild, built by the tests (nothing is downloaded)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from core.model.records import ModelRecord, TensorSpec

OPSET = [helper.make_opsetid("", 17)]


def _model(graph: onnx.GraphProto, **kwargs: object) -> onnx.ModelProto:
    model = helper.make_model(graph, opset_imports=kwargs.pop("opset_imports", OPSET), **kwargs)  # type: ignore[arg-type]
    model.ir_version = 8
    return model


def relu_model() -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        "relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])],
    )
    return _model(graph, producer_name="tests")


def mlp_model(width: int = 64) -> onnx.ModelProto:
    """A small two-layer perceptron with float weights and an open batch axis: quantizable, fast to run."""
    rng = np.random.default_rng(0)
    w1 = numpy_helper.from_array(rng.standard_normal((width, 2 * width)).astype(np.float32), "w1")
    w2 = numpy_helper.from_array(rng.standard_normal((2 * width, 10)).astype(np.float32), "w2")
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
            helper.make_node("Relu", ["h"], ["r"], name="relu"),
            helper.make_node("MatMul", ["r", "w2"], ["y"], name="fc2"),
        ],
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", width])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 10])],
        [w1, w2],
    )
    return _model(graph, producer_name="tests")


def weights_model(size: int) -> onnx.ModelProto:
    """A MatMul whose float32 weight is size×size (400: 640 kB): a model of the size a test needs."""
    w = numpy_helper.from_array(np.ones((size, size), np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, size])], [w],
    )  # fmt: skip
    return _model(graph)


def constant_weights_model() -> onnx.ModelProto:
    """Weights in Constant nodes instead of initializers, as Paddle and TF exports do."""
    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((8, 4)).astype(np.float32), "w_value")
    b = numpy_helper.from_array(np.zeros(4, np.float32), "b_value")
    nodes = [
        helper.make_node("Constant", [], ["w"], value=w, name="const_w"),
        helper.make_node("Constant", [], ["b"], value=b, name="const_b"),
        helper.make_node("MatMul", ["x", "w"], ["xw"], name="matmul"),
        helper.make_node("Add", ["xw", "b"], ["y"], name="add"),
    ]
    graph = helper.make_graph(
        nodes,
        "paddle_like",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["?", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["?", 4])],
    )
    return _model(graph, producer_name="PaddlePaddle")


def relu_or_neg(source: str, width: int) -> dict[str, onnx.GraphProto]:
    """An If's branches: Relu of ``source`` (``width`` floats) in ``then_branch``, Neg of it in ``else_branch``."""
    branches = {}
    for branch, op, node in (("then_branch", "Relu", "then_relu"), ("else_branch", "Neg", "else_neg")):
        out = f"{branch.removesuffix('_branch')}_out"
        branches[branch] = helper.make_graph(
            [helper.make_node(op, [source], [out], name=node)],
            branch,
            [],
            [helper.make_tensor_value_info(out, TensorProto.FLOAT, [width])],
        )
    return branches


def loop_body(width: int, counter: str, added: str, *making_it: onnx.NodeProto) -> onnx.GraphProto:
    """A Loop's body that adds ``added`` (``width`` floats; ``making_it``: the nodes that make it) to the sum it
    carries, its condition passed through; its trip counter is named ``counter``."""
    return helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"], name="body_cond"),
            *making_it,
            helper.make_node("Add", ["acc_in", added], ["acc_out"], name="body_add"),
        ],
        "loop_body",
        [
            helper.make_tensor_value_info(counter, TensorProto.INT64, []),
            helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("acc_in", TensorProto.FLOAT, [width]),
        ],
        [
            helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("acc_out", TensorProto.FLOAT, [width]),
        ],
    )


def control_flow_model() -> onnx.ModelProto:
    """An If whose branches hold their own nodes, and a Loop with a body: subgraphs at two depths."""
    nodes = [
        helper.make_node("If", ["flag"], ["branch"], **relu_or_neg("x", 2), name="if"),
        helper.make_node("Loop", ["trips", "", "branch"], ["summed"], body=loop_body(2, "iter", "x"), name="loop"),
    ]
    graph = helper.make_graph(
        nodes,
        "control_flow",
        [
            helper.make_tensor_value_info("flag", TensorProto.BOOL, []),
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
            helper.make_tensor_value_info("trips", TensorProto.INT64, []),
        ],
        [helper.make_tensor_value_info("summed", TensorProto.FLOAT, [2])],
    )
    return _model(graph)


def fp16_model() -> onnx.ModelProto:
    w = numpy_helper.from_array(np.ones((4, 4), np.float16), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
        "half",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [1, 4])],
        [w],
    )
    return _model(graph)


def mixed_inputs_model() -> onnx.ModelProto:
    """Several inputs of different dtypes; symbolic dims named '?', '-1' and left empty."""
    ids = helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "-1"])
    mask = helper.make_tensor_value_info("mask", TensorProto.BOOL, ["?", ""])
    scale = helper.make_tensor_value_info("scale", TensorProto.FLOAT, [1])
    nodes = [
        helper.make_node("Cast", ["input_ids"], ["ids_f"], to=TensorProto.FLOAT, name="cast_ids"),
        helper.make_node("Cast", ["mask"], ["mask_f"], to=TensorProto.FLOAT, name="cast_mask"),
        helper.make_node("Mul", ["ids_f", "mask_f"], ["masked"], name="mul"),
        helper.make_node("Mul", ["masked", "scale"], ["out"], name="scale_mul"),
    ]
    out = helper.make_tensor_value_info("out", TensorProto.FLOAT, None)
    return _model(helper.make_graph(nodes, "mixed", [ids, mask, scale], [out]))


def chain_model(n_nodes: int = 400) -> onnx.ModelProto:
    """Hundreds of nodes, each with a small initializer: a long chain of Add and Relu."""
    nodes, inits = [], []
    prev = "x"
    for i in range(n_nodes // 2):
        inits.append(numpy_helper.from_array(np.full((16,), 0.01 * i, np.float32), f"bias_{i}"))
        nodes.append(helper.make_node("Add", [prev, f"bias_{i}"], [f"a{i}"], name=f"add_{i}"))
        nodes.append(helper.make_node("Relu", [f"a{i}"], [f"r{i}"], name=f"relu_{i}"))
        prev = f"r{i}"
    graph = helper.make_graph(
        nodes,
        "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 16])],
        [helper.make_tensor_value_info(prev, TensorProto.FLOAT, ["N", 16])],
        inits,
    )
    return _model(graph)


def function_model() -> onnx.ModelProto:
    """A model-local function (opset-17 style), called from the main graph."""
    fn = helper.make_function(
        "custom.fn",
        "DoubleRelu",
        ["a"],
        ["b"],
        [helper.make_node("Relu", ["a"], ["r"]), helper.make_node("Add", ["r", "r"], ["b"])],
        [helper.make_opsetid("", 17)],
    )
    graph = helper.make_graph(
        [helper.make_node("DoubleRelu", ["x"], ["y"], domain="custom.fn", name="call")],
        "with_function",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])],
    )
    return _model(graph, functions=[fn], opset_imports=[*OPSET, helper.make_opsetid("custom.fn", 1)])


def old_opset_model(axis: int | None = None) -> onnx.ModelProto:
    """A 2018 export: opset 6, IR 3 (weights listed as graph inputs too), an Add with the legacy ``broadcast``
    attribute and a PRelu with one slope per channel. ONNX Runtime runs neither Add-6 nor PRelu-6. With ``axis``
    (Caffe2's way), the Add's bias of [3] goes along that axis of the [1, 3, 4, 4] input, else along the last."""
    rng = np.random.default_rng(6)
    bias = numpy_helper.from_array(rng.standard_normal(3 if axis is not None else 4).astype(np.float32), "bias")
    slope = numpy_helper.from_array(np.array([0.1, 0.2, 0.3], np.float32), "slope")
    broadcast: dict[str, Any] = {"broadcast": 1} | ({"axis": axis} if axis is not None else {})
    graph = helper.make_graph(
        [
            helper.make_node("Add", ["x", "bias"], ["shifted"], **broadcast),
            helper.make_node("PRelu", ["shifted", "slope"], ["y"]),
        ],
        "torch-jit-export",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 4]),
            helper.make_tensor_value_info("bias", TensorProto.FLOAT, list(bias.dims)),
            helper.make_tensor_value_info("slope", TensorProto.FLOAT, [3]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 4, 4])],
        initializer=[bias, slope],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 6)], producer_name="pytorch")
    model.ir_version = 3
    return model


def training_model() -> onnx.ModelProto:
    """onnx's own gradient test: an Add and the Gradient of its output, a training op of ai.onnx.preview.training."""
    graph = helper.make_graph(
        [
            helper.make_node("Add", ["a", "b"], ["c"], name="my_add"),
            helper.make_node(
                "Gradient",
                ["a", "b"],
                ["dc_da", "dc_db"],
                name="my_gradient",
                domain="ai.onnx.preview.training",
                xs=["a", "b"],
                y="c",
            ),
        ],
        "gradient_of_add",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, []) for n in ("a", "b")],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, []) for n in ("c", "dc_da", "dc_db")],
    )
    return _model(
        graph, opset_imports=[helper.make_opsetid("", 12), helper.make_opsetid("ai.onnx.preview.training", 1)]
    )


def string_normalizer_model(locale: str) -> onnx.ModelProto:
    """Lower-cases strings in ``locale`` (a locale no machine has makes ONNX Runtime refuse the session)."""
    graph = helper.make_graph(
        [helper.make_node("StringNormalizer", ["x"], ["y"], name="lower", case_change_action="LOWER", locale=locale)],
        "strnorm",
        [helper.make_tensor_value_info("x", TensorProto.STRING, [3])],
        [helper.make_tensor_value_info("y", TensorProto.STRING, [3])],
    )
    return _model(graph)


def save_with_external_data(model: onnx.ModelProto, folder: Path, name: str = "model.onnx") -> Path:
    """Write ``model`` with every initializer in one external file beside it."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    onnx.save_model(
        model,
        str(path),
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location=name + ".data",
        size_threshold=0,
    )
    return path


def set_external_location(model: onnx.ModelProto, location: str, offset: int = 0, length: int | None = None) -> None:
    """Point the first initializer at ``location`` (for hostile-path tests)."""
    tensor = model.graph.initializer[0]
    tensor.ClearField("raw_data")
    tensor.data_location = TensorProto.EXTERNAL
    del tensor.external_data[:]
    entries = {"location": location, "offset": str(offset)}
    if length is not None:
        entries["length"] = str(length)
    for key, value in entries.items():
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value


def slow_model(depth: int = 4, size: int = 1024, batch: str | int = 1) -> onnx.ModelProto:
    """A model of about a third of a second a call on one core (``depth`` MatMuls of size×size, ~65 ms each),
    with a large input (x: batch×size×size float32, 4 MiB at batch 1: ~44 MB as JSON text): what a slow model from
    the wild costs Tune, Quantize and a load test, at a test's CPU."""
    rng = np.random.default_rng(0)
    weight = numpy_helper.from_array((rng.standard_normal((size, size)) / np.sqrt(size)).astype(np.float32), "w")
    nodes, prev = [], "x"
    for i in range(depth):
        out = "y" if i == depth - 1 else f"m{i}"
        nodes.append(helper.make_node("MatMul", [prev, "w"], [out], name=f"matmul_{i}"))
        prev = out
    graph = helper.make_graph(
        nodes, "slow",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, size, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, size, size])], [weight],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def write(model: onnx.ModelProto, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(model.SerializeToString())
    return path


def onnx_record(name: str, inputs: list[TensorSpec], outputs: list[TensorSpec]) -> ModelRecord:
    """The record of an ONNX model that has these inputs and outputs, and no file: what a plan is made from."""
    return ModelRecord(id="x", name=name, format="onnx", size_bytes=1, path="", inputs=inputs, outputs=outputs)


def described(model: onnx.ModelProto, folder: Path, name: str) -> ModelRecord:
    """``model`` written as NAME.onnx in ``folder`` and read as an upload is: its record."""
    from core.model.intake import IntakeRequest, describe_files

    return describe_files(IntakeRequest(paths=[str(write(model, folder / f"{name}.onnx"))]))


def exported_sample(name: str, folder: Path) -> Path:
    """A zoo sample exported with the legacy exporter (fast), opset 17, with its natural dynamic axes."""
    import torch

    from core.model import zoo

    path = folder / f"{name}.onnx"
    model = zoo.build_model(name)
    sample = zoo.SAMPLES[name]
    torch.onnx.export(
        model,
        tuple(zoo.example_inputs(name).values()),
        str(path),
        dynamo=False,
        opset_version=17,
        input_names=list(sample.inputs),
        dynamic_axes=sample.dynamic_axes,
    )
    return path


# ------------------------------------------------------------------------------- a model's own code
NET_SOURCE = '''"""A small network as a person writes it: a block class, and the model built from it."""
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, channels: int, kernel: int = 3) -> None:
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, kernel, padding=kernel // 2)
        self.bn = nn.BatchNorm2d(channels)

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x)))


class Net(nn.Module):
    def __init__(self, width: int = 8, classes: int = 10, *, dropout=0.0) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, width, 3, padding=1)
        self.block = Block(width)
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        return self.head(self.block(self.stem(x)).mean((2, 3)))
'''


def user_net(**kwargs: object) -> object:
    """A ``Net`` of NET_SOURCE, built in this process from the source (the test's own code) with ``kwargs``."""
    import torch

    namespace: dict[str, object] = {}
    exec(compile(NET_SOURCE, "net.py", "exec"), namespace)
    torch.manual_seed(0)
    return namespace["Net"](**kwargs)  # type: ignore[operator]


def user_code_upload(folder: Path, module: str, weights: str = "weights.pt", **kwargs: object) -> tuple[Path, Path]:
    """NET_SOURCE as ``folder/module.py`` and the weights of ``Net(**kwargs)`` beside it: a state_dict (wrapped in
    a checkpoint dict, as training scripts save it) or, for a .safetensors name, safetensors."""
    import torch

    folder.mkdir(parents=True, exist_ok=True)
    code = folder / f"{module}.py"
    code.write_text(NET_SOURCE)
    state = user_net(**kwargs).state_dict()  # type: ignore[attr-defined]
    path = folder / weights
    if weights.endswith(".safetensors"):
        from safetensors.torch import save_file

        save_file(dict(state), str(path))
    else:
        torch.save({"epoch": 3, "model_state_dict": state}, str(path))
    return code, path
