"""Weight statistics in the graph view (core.graph.weights): from inline bytes, fp16, Constant nodes, external
data inside the model's folder; NaNs counted; large tensors sampled; hostile external data never read."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from core.graph import graph_view_job, view_graph
from core.graph.records import GraphRequest
from core.graph.weights import SAMPLE_ELEMENTS, WeightBudget, weight_stats
from tests import builders


def _matmul_model(weight: np.ndarray, *, constant: bool = False) -> onnx.ModelProto:
    tensor = numpy_helper.from_array(weight, "w")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")]
    inits = [tensor]
    if constant:  # as Paddle and TF exports keep their weights
        nodes.insert(0, helper.make_node("Constant", [], ["w"], value=tensor, name="const_w"))
        inits = []
    elem = helper.np_dtype_to_tensor_dtype(weight.dtype)
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", elem, [1, weight.shape[0]])],
        [helper.make_tensor_value_info("y", elem, [1, weight.shape[1]])],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _stats(view, node: str = "mm") -> str:  # type: ignore[no-untyped-def]
    (folded,) = next(n for n in view.nodes if n.name == node).folded
    return folded.stats


def test_statistics_of_a_weight_and_of_a_constant_node() -> None:
    weight = np.array([[0.0, -2.0, 1.0], [0.5, 0.0, 4.5], [0.0, 0.0, 1.0]], dtype=np.float32)
    for constant in (False, True):
        text = _stats(view_graph(_matmul_model(weight, constant=constant)))
        assert text == "min −2 · max 4.5 · mean 0.5556 · std 1.624 · 44.4% zeros", text


def test_fp16_and_non_finite_values_and_small_values_shown_as_themselves() -> None:
    weight = np.array([[1.0, np.nan, np.inf], [0.0, 2.0, 3.0], [1.0, 1.0, 1.0]], dtype=np.float16)
    text = _stats(view_graph(_matmul_model(weight)))
    assert "min 0 · max 3" in text and "2 not finite (NaN or ∞)" in text and "14.3% zeros" not in text
    shape = numpy_helper.from_array(np.array([1, -1, 768], dtype=np.int64), "shape")
    assert weight_stats(shape, None, WeightBudget()) == "value 1, −1, 768"


def test_a_large_tensor_is_sampled_and_the_budget_bounds_a_model() -> None:
    big = numpy_helper.from_array(np.ones(SAMPLE_ELEMENTS * 2 + 10, dtype=np.float32), "big")
    text = weight_stats(big, None, WeightBudget())
    assert text.startswith("min 1 · max 1 · mean 1 · std 0") and "sampled values" in text
    budget = WeightBudget(total=SAMPLE_ELEMENTS)
    assert weight_stats(big, None, budget)
    assert weight_stats(big, None, budget) == "" and budget.skipped == 1


def test_external_weights_are_read_from_the_models_folder(tmp_path: Path) -> None:
    weight = np.arange(12, dtype=np.float32).reshape(3, 4) - 4
    path = builders.save_with_external_data(_matmul_model(weight), tmp_path / "model")
    view = graph_view_job(GraphRequest(path=str(path)))  # what the worker runs: the folder is the model's own
    assert _stats(view) == "min −4 · max 7 · mean 1.5 · std 3.452 · 8.3% zeros"
    # the same file with no folder given: said, not guessed
    assert "external file" in _stats(view_graph(onnx.load(path, load_external_data=False)))


def test_hostile_external_data_is_never_read(tmp_path: Path) -> None:
    outside = tmp_path / "secret.bin"
    outside.write_bytes(np.arange(64, dtype=np.float32).tobytes())
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "link.bin").symlink_to(outside)
    (folder / "short.bin").write_bytes(b"\0" * 8)
    weight = np.ones((4, 4), dtype=np.float32)
    for location, length in (("../secret.bin", None), ("link.bin", None), ("short.bin", 64), ("/etc/passwd", None)):
        model = _matmul_model(weight)
        builders.set_external_location(model, location, length=length)
        text = _stats(view_graph(model, folder=folder))
        assert text.startswith("statistics not read:"), (location, text)
    model = _matmul_model(weight)
    builders.set_external_location(model, "short.bin", offset=4)
    assert "that file has only 8 bytes" in _stats(view_graph(model, folder=folder))
    model = _matmul_model(weight)
    builders.set_external_location(model, "short.bin", length=4)  # a length that says less than the shape
    (folder / "short.bin").write_bytes(b"\0" * 64)
    assert "shorter than its shape" in _stats(view_graph(model, folder=folder))


def test_string_and_empty_tensors_get_no_statistics() -> None:
    strings = helper.make_tensor("s", TensorProto.STRING, [2], [b"a", b"b"])
    empty = numpy_helper.from_array(np.zeros((0, 3), dtype=np.float32), "e")
    assert weight_stats(strings, None, WeightBudget()) == weight_stats(empty, None, WeightBudget()) == ""


def test_large_weights_are_lent_out_of_shape_inference_and_given_back() -> None:
    weight = np.arange(300 * 100, dtype=np.float32).reshape(300, 100) / 1000  # above the 16,384 values lent out
    model = _matmul_model(weight)
    before = model.SerializeToString()
    view = view_graph(model)
    assert model.SerializeToString() == before  # the caller's model is as it was
    assert view.shapes_inferred and _stats(view) == "min 0 · max 30 · mean 15 · std 8.66 · 0.0% zeros"
    assert any(e.label == "float32 1×100" for e in view.edges)  # what the MatMul makes, inferred
