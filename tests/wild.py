"""Models shaped like real third-party ones, built in code: what real exports do that our zoo does not."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from tests.builders import loop_body, relu_or_neg

__all__ = [
    "detector_model",
    "ir3_model",
    "loop_model",
    "minus_one_classifier",
    "nms_detector",
    "ocr_recogniser",
    "one_hot_bytes",
    "range_model",
    "text_classifier",
    "token_model",
    "unhinted_model",
    "vad_model",
    "wav2vec2_model",
    "yolo_model",
]

COCO_NAMES = ["person", "bicycle", "car", "motorcycle", "airplane", "bus", "train", "truck"]


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


def _metadata(model: onnx.ModelProto, entries: dict[str, str]) -> onnx.ModelProto:
    for key, value in entries.items():
        prop = model.metadata_props.add()
        prop.key, prop.value = key, value
    return model


def yolo_model(names: list[str] | None = None) -> onnx.ModelProto:
    """A YOLOv8-style detector as Ultralytics exports it with dynamic=True: ``images`` [batch, 3, height, width],
    one output [batch, 4 + classes, anchors], and the size it was trained at only in its metadata (``imgsz``,
    written with str() as Ultralytics does), with stride, task, batch and class names."""
    names = names if names is not None else COCO_NAMES
    nodes = [
        helper.make_node("Conv", ["images", "w"], ["c"], strides=[8, 8], name="/model.0/conv/Conv"),
        helper.make_node("Sigmoid", ["c"], ["s"], name="/model.22/Sigmoid"),
        helper.make_node("Reshape", ["s", "flat"], ["output0"], name="/model.22/Reshape"),
    ]
    graph = helper.make_graph(
        nodes,
        "main_graph",
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, ["batch", 3, "height", "width"])],
        [helper.make_tensor_value_info("output0", TensorProto.FLOAT, ["batch", 4 + len(names), "anchors"])],
        [
            _weights((4 + len(names), 3, 8, 8), 7, "w"),
            numpy_helper.from_array(np.array([0, 4 + len(names), -1]), "flat"),
        ],
    )
    model = _model(graph, opset=17, producer="pytorch")
    model.producer_version = "2.3.1"
    return _metadata(model, {
        "description": "Ultralytics YOLOv8n model trained on coco.yaml",
        "author": "Ultralytics",
        "date": "2024-11-02T10:00:00",
        "version": "8.3.27",
        "license": "AGPL-3.0 License (https://ultralytics.com/license)",
        "docs": "https://docs.ultralytics.com",
        "stride": "32",
        "task": "detect",
        "batch": "1",
        "imgsz": "[320, 320]",
        "names": str(dict(enumerate(names))),
    })  # fmt: skip


def ocr_recogniser(characters: list[str] | None = None) -> onnx.ModelProto:
    """A text-line recogniser as captcha and PaddleOCR-style exports make it: a grey line of text
    1×1×64×``image_width``, columns of class scores out ([batch, steps, classes]), and its classes as a
    ``character`` entry of the metadata, one per line."""
    characters = characters if characters is not None else list("0123456789abcdefghijklmnopqrstuvwxyz")
    classes = len(characters) + 1  # and the CTC blank
    nodes = [
        helper.make_node("Conv", ["input1", "w"], ["c"], strides=[64, 4], name="conv"),
        helper.make_node("Squeeze", ["c", "axis2"], ["sq"], name="squeeze"),
        helper.make_node("Transpose", ["sq"], ["output"], perm=[0, 2, 1], name="to_steps"),
    ]
    graph = helper.make_graph(
        nodes,
        "rec",
        [helper.make_tensor_value_info("input1", TensorProto.FLOAT, [1, 1, 64, "image_width"])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, "steps", classes])],
        [_weights((classes, 1, 64, 4), 8, "w"), numpy_helper.from_array(np.array([2], np.int64), "axis2")],
    )
    return _metadata(_model(graph, opset=13), {"character": "\n".join(characters)})


def unhinted_model() -> onnx.ModelProto:
    """A model with a dim nothing explains: ``features`` [batch, 16, group], summed over ``group`` (a size only
    its author knows; 1 would be made up)."""
    graph = helper.make_graph(
        [helper.make_node("ReduceSum", ["features", "last"], ["summed"], keepdims=0, name="sum_groups")],
        "groups",
        [helper.make_tensor_value_info("features", TensorProto.FLOAT, ["batch", 16, "group"])],
        [helper.make_tensor_value_info("summed", TensorProto.FLOAT, ["batch", 16])],
        [numpy_helper.from_array(np.array([2], np.int64), "last")],
    )
    return _model(graph, opset=17)


def wav2vec2_model(name: str = "input_values", sampling_rate: int | None = None) -> onnx.ModelProto:
    """A speech encoder as wav2vec2 exports it: raw audio ``input_values`` [batch, sequence_length] (float samples
    at 16 kHz), a feature extractor of seven 1-D convolutions (kernel 10 stride 5, then kernels 3 and 2 of stride
    2: 400 samples make the first frame, so 128 samples make none), frames of features out. ``sampling_rate``: as
    an exporter may write it into the metadata."""
    kernels, channels = [10, 3, 3, 3, 3, 2, 2], 4
    nodes = [helper.make_node("Unsqueeze", [name, "axis1"], ["x0"], name="/feature_extractor/Unsqueeze")]
    inits = [numpy_helper.from_array(np.array([1], np.int64), "axis1")]
    for i, kernel in enumerate(kernels):
        w = f"feature_extractor.conv_layers.{i}.conv.weight"
        inits.append(_weights((channels, 1 if i == 0 else channels, kernel), 20 + i, w))
        layer = f"/feature_extractor/conv_layers.{i}"
        nodes += [
            helper.make_node("Conv", [f"x{i}", w], [f"c{i}"], strides=[5 if i == 0 else 2], name=f"{layer}/conv/Conv"),
            helper.make_node("Relu", [f"c{i}"], [f"x{i + 1}"], name=f"{layer}/activation/Relu"),
        ]
    nodes.append(helper.make_node("Transpose", [f"x{len(kernels)}"], ["last_hidden_state"], perm=[0, 2, 1]))
    graph = helper.make_graph(
        nodes,
        "main_graph",
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, ["batch_size", "sequence_length"])],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch_size", "frames", channels])],
        inits,
    )
    model = _model(graph, opset=17, producer="pytorch")
    return _metadata(model, {"sampling_rate": str(sampling_rate)}) if sampling_rate else model


def nms_detector(nested: bool = False) -> onnx.ModelProto:
    """A detector that keeps its post-processing, as torchvision and RT-DETR-style exports do: ``images``
    [batch, 3, height, width] in; boxes [num, 4], scores [num] and labels [num] of a count known only at run time
    out, chosen by a NonMaxSuppression (``nested``: inside an If's branch, under outputs that say nothing)."""
    names = ("out0", "out1", "out2") if nested else ("boxes", "scores", "labels")
    nms = [
        helper.make_node("NonMaxSuppression", ["b", "s", "most", "iou", "least"], ["selected"], name="nms"),
        helper.make_node("Gather", ["selected", "two"], ["index"], axis=1, name="box_index"),
        helper.make_node("Gather", ["selected", "one"], ["labels64"], axis=1, name="class_index"),
        helper.make_node("Squeeze", ["b", "zero"], ["b0"], name="first_image"),
        helper.make_node("Gather", ["b0", "index"], [names[0]], axis=0, name="kept_boxes"),
        helper.make_node("Squeeze", ["s", "zero"], ["s0"], name="first_scores"),
        helper.make_node("Squeeze", ["s0", "zero"], ["s00"], name="first_class"),
        helper.make_node("Gather", ["s00", "index"], [names[1]], axis=0, name="kept_scores"),
        helper.make_node("Identity", ["labels64"], [names[2]], name="kept_labels"),
    ]
    outputs = [
        helper.make_tensor_value_info(names[0], TensorProto.FLOAT, ["num", 4]),
        helper.make_tensor_value_info(names[1], TensorProto.FLOAT, ["num"]),
        helper.make_tensor_value_info(names[2], TensorProto.INT64, ["num"]),
    ]
    nodes = [
        helper.make_node("Conv", ["images", "w"], ["c"], strides=[32, 32], name="/backbone/Conv"),  # 5 per cell
        helper.make_node("Sigmoid", ["c"], ["p"], name="/head/Sigmoid"),
        helper.make_node("Reshape", ["p", "cells"], ["flat"], name="/head/Reshape"),  # [batch, 5, cells]
        helper.make_node("Transpose", ["flat"], ["per_cell"], perm=[0, 2, 1], name="/head/Transpose"),
        helper.make_node("Slice", ["per_cell", "from0", "to4", "last"], ["b"], name="/post/boxes"),
        helper.make_node("Slice", ["per_cell", "to4", "to5", "last"], ["score_col"], name="/post/scores"),
        helper.make_node("Transpose", ["score_col"], ["s"], perm=[0, 2, 1], name="/post/scores_t"),  # [batch, 1, n]
    ]
    if nested:
        branch = helper.make_graph(nms, "keep", [], outputs)
        nodes.append(
            helper.make_node("If", ["always"], list(names), then_branch=branch, else_branch=branch, name="post")
        )
    else:
        nodes += nms
    graph = helper.make_graph(
        nodes,
        "main_graph",
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, ["batch", 3, "height", "width"])],
        outputs,
        [
            _weights((5, 3, 32, 32), 30, "w"),
            numpy_helper.from_array(np.array([0, 5, -1], np.int64), "cells"),
            numpy_helper.from_array(np.array([0], np.int64), "from0"),
            numpy_helper.from_array(np.array([4], np.int64), "to4"),
            numpy_helper.from_array(np.array([5], np.int64), "to5"),
            numpy_helper.from_array(np.array([-1], np.int64), "last"),
            numpy_helper.from_array(np.array([10], np.int64), "most"),
            numpy_helper.from_array(np.array([0.5], np.float32), "iou"),
            numpy_helper.from_array(np.array([0.0], np.float32), "least"),
            numpy_helper.from_array(np.array(2, np.int64), "two"),
            numpy_helper.from_array(np.array(1, np.int64), "one"),
            numpy_helper.from_array(np.array([0], np.int64), "zero"),
            *([numpy_helper.from_array(np.array(True), "always")] if nested else []),
        ],
    )
    return _model(graph, opset=17, producer="pytorch")


def text_classifier() -> onnx.ModelProto:
    """A scikit-learn-style text model: strings in (``text`` [N, 1], a tensor(string)), each looked up in a
    vocabulary (ai.onnx.ml's LabelEncoder) to a float, scaled by ``scale``, an input with a default (an
    initializer of the same name: a caller may pass another)."""
    nodes = [
        helper.make_node(
            "LabelEncoder",
            ["text"],
            ["score"],
            domain="ai.onnx.ml",
            keys_strings=["hello", "ONNX Runtime measured this model."],
            values_floats=[1.0, 2.0],
            default_float=0.5,
            name="vocabulary",
        ),
        helper.make_node("Mul", ["score", "scale"], ["label"], name="scaled"),
    ]
    graph = helper.make_graph(
        nodes,
        "text",
        [
            helper.make_tensor_value_info("text", TensorProto.STRING, ["N", 1]),
            helper.make_tensor_value_info("scale", TensorProto.FLOAT, [1]),
        ],
        [helper.make_tensor_value_info("label", TensorProto.FLOAT, ["N", 1])],
        [numpy_helper.from_array(np.array([2.0], np.float32), "scale")],
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3)],
        producer_name="skl2onnx",
    )
    model.ir_version = 8
    return model


def one_hot_bytes(size: int = 257) -> onnx.ModelProto:
    """A content-type classifier shaped like magika's: ``bytes`` [batch, 2048] int32 (0–255, and 256 for padding),
    one-hot encoded by comparing each with a table 0…256 (Equal), then a Dense layer."""
    nodes = [
        helper.make_node("Unsqueeze", ["bytes", "last"], ["b3"], name="one_hot/Unsqueeze"),
        helper.make_node("Equal", ["b3", "classes"], ["hot"], name="one_hot/Equal"),
        helper.make_node("Cast", ["hot"], ["hot_f"], to=TensorProto.FLOAT, name="one_hot/Cast"),
        helper.make_node("ReduceMean", ["hot_f", "axis1"], ["histogram"], keepdims=0, name="pool"),
        helper.make_node("MatMul", ["histogram", "dense"], ["target_label"], name="dense"),
    ]
    graph = helper.make_graph(
        nodes,
        "bytes",
        [helper.make_tensor_value_info("bytes", TensorProto.INT32, ["unk__214", 2048])],
        [helper.make_tensor_value_info("target_label", TensorProto.FLOAT, ["unk__214", 8])],
        [
            numpy_helper.from_array(np.arange(size, dtype=np.int32).reshape(1, 1, size), "classes"),
            numpy_helper.from_array(np.array([-1], np.int64), "last"),
            numpy_helper.from_array(np.array([1], np.int64), "axis1"),
            _weights((size, 8), 31, "dense"),
        ],
    )
    return _model(graph, opset=18, producer="tf2onnx")


def loop_model(scan: bool = False) -> onnx.ModelProto:
    """A model that walks a sequence step by step: ``x`` [steps, 4], summed by a Loop whose trip count is x's
    first dim (Shape, Gather), or by a Scan over its axis 0 (``scan``); ``use_relu``, a boolean, chooses an If's
    branch for the sum (Relu, or Neg)."""
    if scan:
        body = helper.make_graph(
            [helper.make_node("Add", ["acc_in", "row"], ["acc_out"], name="body_add")],
            "scan_body",
            [
                helper.make_tensor_value_info("acc_in", TensorProto.FLOAT, [4]),
                helper.make_tensor_value_info("row", TensorProto.FLOAT, [4]),
            ],
            [helper.make_tensor_value_info("acc_out", TensorProto.FLOAT, [4])],
        )
        walk = [helper.make_node("Scan", ["zeros", "x"], ["summed"], body=body, num_scan_inputs=1, name="scan")]
    else:
        body = loop_body(4, "i", "row", helper.make_node("Gather", ["x", "i"], ["row"], axis=0, name="body_row"))
        walk = [
            helper.make_node("Shape", ["x"], ["shape"], name="shape"),
            helper.make_node("Gather", ["shape", "zero"], ["steps"], axis=0, name="steps"),
            helper.make_node("Loop", ["steps", "", "zeros"], ["summed"], body=body, name="loop"),
        ]
    walk.append(helper.make_node("If", ["use_relu"], ["y"], **relu_or_neg("summed", 4), name="choose"))
    graph = helper.make_graph(
        walk,
        "steps",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, ["steps", 4]),
            helper.make_tensor_value_info("use_relu", TensorProto.BOOL, []),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
        [
            *([] if scan else [numpy_helper.from_array(np.array(0, np.int64), "zero")]),
            numpy_helper.from_array(np.zeros(4, np.float32), "zeros"),
        ],
    )
    return _model(graph, opset=17)
