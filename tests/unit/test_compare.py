"""Compare, proved on planted faults: a Conv's weights scaled, an op swapped, a float16 variant with a node out of
its range, a fused level against DISABLE_ALL (rounding only), and the command line's JSON."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from core.compare import CompareReport, CompareRequest, CompareSide, compare_models
from core.compare.divergence import OTHER_OP, WEIGHT_DIFFERS
from core.errors import CompareError
from core.jobs.wire import decode, encode, to_data
from core.model.inputs import BenchInput
from core.notes import Note, note, say, say_all
from tests.builders import write
from tests.cli import cli
from tests.graph_models import classic_cnn
from tests.wild import detector_model, range_model

SCALED = "layer2.layer2.0.conv2.weight"  # the weight of /layer2/layer2.0/conv2/Conv


def _cnn(size: int = 32) -> onnx.ModelProto:
    model = classic_cnn((1, 1, 1, 1), width=4)
    for dim in model.graph.input[0].type.tensor_type.shape.dim[2:]:
        dim.dim_value = size
    return model


def _compare(a: Path, b: Path, inputs: list[BenchInput], **options: object) -> CompareReport:
    levels = {k: options.pop(k) for k in ("a_level", "b_level") if k in options}
    return compare_models(
        CompareRequest(
            a=CompareSide(path=str(a), level=str(levels.get("a_level", "disable"))),
            b=CompareSide(path=str(b), level=str(levels.get("b_level", "disable"))),
            inputs=inputs,
            **options,  # type: ignore[arg-type]
        )
    )


IMAGE = [BenchInput(name="image", dtype="float32", shape=[1, 3, 32, 32], batch_axis=0)]


@pytest.fixture(scope="module")
def cnn(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write(_cnn(), tmp_path_factory.mktemp("cnn") / "cnn.onnx")


def test_a_conv_whose_weights_were_scaled_is_the_first_divergence_and_its_weight_is_named(tmp_path: Path) -> None:
    model = _cnn(128)  # its tensors take 3.4 MiB in all: groups of at most 1 MiB
    original = write(model, tmp_path / "cnn128.onnx")
    weight = next(t for t in model.graph.initializer if t.name == SCALED)
    weight.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(weight) * 3, SCALED))
    plan = [BenchInput(name="image", dtype="float32", shape=[1, 3, 128, 128], batch_axis=0)]
    report = _compare(original, write(model, tmp_path / "scaled.onnx"), plan, group_mb=1)
    found = report.first_divergence
    assert found is not None and (found.node, found.op_type) == ("/layer2/layer2.0/conv2/Conv", "Conv")
    assert found.module == "layer2.layer2.0.conv2"  # from the exporter-style node name
    said = found.why[0]  # a note (core.notes), said where shown
    assert found.cause == "weight" and isinstance(said, Note) and said.key == WEIGHT_DIFFERS
    assert said.values["name"] == SCALED
    assert all(e.within for e in found.inputs) and not found.outputs[0].within
    assert found.path[0] == "/stem/conv1/Conv" and found.path[-1] == found.node
    upstream = [n for n in report.nodes if n.index < found.index]
    assert upstream and all(n.within for n in upstream)  # the nodes before it agree exactly
    assert not next(n for n in report.nodes if n.node == "/layer2/layer2.0/Add").within  # and the error carries on
    assert report.matched == len(model.graph.node) and report.groups > 1 and report.peak_group_mb <= 1.0


def test_the_module_is_read_from_the_name_scopes_torch_2_13s_exporter_writes(tmp_path: Path) -> None:
    model = detector_model()
    relu = next(n for n in model.graph.node if n.op_type == "Relu")
    scopes = relu.metadata_props.add()  # as torch.onnx.export(..., dynamo=True) writes it on each node
    scopes.key, scopes.value = "pkg.torch.onnx.name_scopes", "['', 'backbone', 'backbone.act', 'relu']"
    path = write(model, tmp_path / "scoped.onnx")
    report = _compare(path, path, [BenchInput(name="x", dtype="float32", shape=[1, 3, 16, 16], batch_axis=0)])
    assert {n.node: n.module for n in report.nodes}["relu_0"] == "backbone.act"


def test_a_weight_kept_in_a_data_file_the_app_linked_twice_is_still_named_as_the_cause(tmp_path: Path) -> None:
    # the app links an upload into its workspace and its library: onnx's own reader calls that a hardlink attack
    from tests.builders import save_with_external_data

    model = _cnn()
    original = save_with_external_data(onnx.ModelProto.FromString(model.SerializeToString()), tmp_path / "a")
    weight = next(t for t in model.graph.initializer if t.name == SCALED)
    weight.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(weight) * 3, SCALED))
    scaled = save_with_external_data(model, tmp_path / "b")
    for side in (original, scaled):
        (side.parent / "second-link.data").hardlink_to(side.parent / "model.onnx.data")
    found = _compare(original, scaled, IMAGE).first_divergence
    said = found.why[0] if found is not None else None
    assert found is not None and found.cause == "weight" and isinstance(said, Note) and said.values["name"] == SCALED


def test_a_detector_whose_conv_weight_in_a_constant_node_was_scaled_diverges_at_that_conv(tmp_path: Path) -> None:
    model = detector_model()
    for node in model.graph.node:
        if node.output[0] == "conv2d_395.w_0":
            value = node.attribute[0].t
            value.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(value) * 5, value.name))
    a, b = write(detector_model(), tmp_path / "det.onnx"), write(model, tmp_path / "det_scaled.onnx")
    report = _compare(a, b, [BenchInput(name="x", dtype="float32", shape=[1, 3, 16, 16], batch_axis=0)])
    found = report.first_divergence
    assert found is not None and (found.node, found.cause) == ("conv2d_395", "weight")
    held = {n.name or f"Constant_{k}" for k, n in enumerate(model.graph.node) if n.op_type == "Constant"}
    assert found.path[-1] == "conv2d_395" and not held & set(found.path), found.path  # from the input, not a weight
    assert not found.uncompared_inputs  # its weight is compared as a weight, never "fused away"
    assert not any("fused or folded away" in u.reason for u in report.uncompared)  # at DISABLE_ALL nothing is


def test_a_real_packaged_detector_with_one_conv_scaled_diverges_at_that_conv(tmp_path: Path) -> None:
    """PaddleOCR's text detector (rapidocr's package, 672 nodes, its weights in Constant nodes) at a real image
    size, one Conv half-way in scaled by 1.5: that Conv is the first divergence, for its weight."""
    from tests.real_models import real_model

    source = real_model("ocr_det")
    model = onnx.load(str(source))
    convs = [n for n in model.graph.node if n.op_type == "Conv"]
    planted = convs[len(convs) // 2]
    weight = next(  # Paddle's export holds its weights in Constant nodes
        a.t for n in model.graph.node if n.output == [planted.input[1]] for a in n.attribute if a.name == "value"
    )
    weight.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(weight) * np.float32(1.5), weight.name))
    faulty = write(model, tmp_path / "det_scaled.onnx")
    image = [BenchInput(name="x", dtype="float32", shape=[1, 3, 320, 320], batch_axis=0)]
    report = _compare(source, faulty, image)
    found = report.first_divergence
    assert found is not None and found.node == planted.name and found.cause == "weight"
    assert report.matched > 300 and not report.outputs[0].within
    assert all(n.within for n in report.nodes if n.index < found.index)  # nothing before it goes wrong


def test_an_op_swapped_from_relu_to_sigmoid_is_the_first_divergence(cnn: Path, tmp_path: Path) -> None:
    model = _cnn()
    swapped = next(n for n in model.graph.node if n.name == "/layer1/layer1.0/conv1/Relu")
    swapped.op_type = "Sigmoid"
    report = _compare(cnn, write(model, tmp_path / "swapped.onnx"), IMAGE)
    found = report.first_divergence
    assert found is not None and (found.node, found.op_type, found.cause) == (swapped.name, "Relu", "op")
    assert found.why[0] == note(OTHER_OP, b_op="Sigmoid", op="Relu")
    assert not report.outputs[0].within or report.outputs[0].reference_max == 0  # the head's weights are zeros
    # a comparison kept by an earlier version (its causes and rule as sentences) still reads, shown as it was kept
    old = to_data(report)
    old["tolerance"], old["first_divergence"]["why"] = "max |a − b| ≤ …", ["It computes it with Sigmoid."]
    kept: CompareReport = decode(encode(old), CompareReport)
    assert kept.first_divergence is not None and say_all(kept.first_divergence.why) == ["It computes it with Sigmoid."]
    assert say(kept.tolerance) == "max |a − b| ≤ …"


def test_a_float16_variant_diverges_where_a_value_leaves_its_range_and_that_node_is_the_one_to_keep(
    tmp_path: Path,
) -> None:
    from onnxruntime.transformers.float16 import convert_float_to_float16

    original = write(range_model(3000.0), tmp_path / "ranges.onnx")
    half = write(convert_float_to_float16(range_model(3000.0), keep_io_types=True), tmp_path / "ranges.fp16.onnx")
    plan = [BenchInput(name="x", dtype="float32", shape=[1, 256], batch_axis=0)]
    report = _compare(original, half, plan, rtol=1e-2)  # float16 keeps about three digits
    found = report.first_divergence
    # the divisor, 3e5, is infinite in float16; the CPU computes the float16 Mul and MatMul in float32 between
    # Casts (no float16 kernel), so their outputs, renamed by ORT, are compared and only round
    assert found is not None and (found.node, found.op_type, found.cause) == ("shrink", "Div", "fp16-range")
    assert isinstance(found.why[0], Note) and "'down'" in found.why[0].english()
    assert all(e.within for e in found.inputs) and found.inputs
    assert report.b_kind == "fp16" and report.keep_float32 == ["shrink"]
    assert not report.outputs[0].within and report.matched == 3


def test_a_fused_level_against_disable_all_only_rounds_within_the_tolerance(cnn: Path) -> None:
    report = _compare(cnn, cnn, IMAGE, b_level="extended")
    assert report.first_divergence is None and all(o.within for o in report.outputs)
    assert report.b_level == "EXTENDED" and all(n.within for n in report.nodes)
    fused = [u for u in report.uncompared if u.count]
    assert fused and "stem.conv1.c" in fused[0].examples  # Conv+BatchNorm+Relu fused: not recomputed unfused


def test_nothing_diverges_between_a_model_and_itself_and_bad_tolerances_are_refused(cnn: Path) -> None:
    report = _compare(cnn, cnn, IMAGE)
    assert report.first_divergence is None and report.matched == len(_cnn().graph.node)
    assert all(n.max_abs == 0.0 for n in report.nodes)
    with pytest.raises(CompareError, match="zero or more"):
        _compare(cnn, cnn, IMAGE, rtol=-1.0)
    with pytest.raises(CompareError, match="choose one of"):
        _compare(cnn, cnn, IMAGE, b_level="fastest")


def test_the_command_prints_the_json_the_issue_asks_for(cnn: Path, tmp_path: Path) -> None:
    model = _cnn()
    next(n for n in model.graph.node if n.name == "/stem/conv1/Relu").op_type = "Sigmoid"
    done = cli("compare", str(cnn), str(write(model, tmp_path / "b.onnx")), "--input", "image=1,3,32,32", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert {"tolerance", "outputs", "nodes", "matched", "first_divergence"} <= set(data)
    assert data["first_divergence"]["node"] == "/stem/conv1/Relu" and data["first_divergence"]["op_type"] == "Relu"
    assert {"node", "op_type", "module", "max_abs", "mean_abs", "relative", "cosine", "within"} <= set(data["nodes"][0])
    assert data["matched"] == len(model.graph.node) and np.isclose(data["tolerance"]["rtol"], 1e-3)


def test_the_nodes_compare_names_stay_in_float32_when_quantize_makes_the_variant_again(tmp_path: Path) -> None:
    from core.quantize.variants import KEPT_AS_ASKED, make_variant

    source = write(range_model(3000.0), tmp_path / "ranges.onnx")
    kept: list[Note | str] = []
    made = make_variant("fp16", source, None, tmp_path, [], False, kept, keep=["shrink"])
    node = next(n for n in onnx.load(str(made)).graph.node if n.name == "shrink")
    divisor = next(t for t in onnx.load(str(made)).graph.initializer if t.name == node.input[1])
    assert divisor.data_type == onnx.TensorProto.FLOAT and kept == [note(KEPT_AS_ASKED, op="Div", name="shrink")]


def test_an_optimized_graph_a_new_session_refuses_is_said_in_words(tmp_path: Path) -> None:
    """ORT's ALL level gives an opset-11 model's DequantizeLinear an ``axis`` (opset 13's): read back to reach
    its tensors, every run failed with ONNX Runtime's raw "Unrecognized attribute". It is named, with the way
    out, before anything runs."""
    from onnx import TensorProto, helper

    from core.compare.runs import _attributes_beyond_opset

    node = helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], axis=1)
    graph = helper.make_graph(
        [node], "qdq", [helper.make_tensor_value_info("q", TensorProto.INT8, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
    )  # fmt: skip
    old = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    assert _attributes_beyond_opset(old) == ["DequantizeLinear (axis)"]
    new = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    assert _attributes_beyond_opset(new) == []


def test_a_dynamic_int8_variant_diverges_by_its_quantization_first(cnn: Path, tmp_path: Path) -> None:
    """Its Conv's output comes out of a Mul by the scale in the variant; the cause said first is the rounding to
    8-bit integers, not "another op"."""
    from core.quantize.variants import make_variant

    made = make_variant("dynamic-qint8", cnn, None, tmp_path, [], False, [])
    report = _compare(cnn, Path(made), IMAGE)
    found = report.first_divergence
    assert report.b_kind == "int8" and found is not None and found.cause == "quantized", found


def _unrelated(output_shape: list[int]) -> onnx.ModelProto:
    """A model that takes the CNN's image and shares none of its tensors: its one output, ``unrelated``, the image's
    mean (``[1, 1]``: another shape than the CNN's logits) or ``[1, 1000]`` of it (the logits' shape)."""
    from onnx import TensorProto, helper

    shape = numpy_helper.from_array(np.asarray(output_shape, np.int64), "unrelated_shape")
    nodes = [
        helper.make_node("ReduceMean", ["image"], ["unrelated_mean"], name="unrelated_mean", keepdims=0),
        helper.make_node("Expand", ["unrelated_mean", "unrelated_shape"], ["unrelated"], name="unrelated"),
    ]
    graph = helper.make_graph(
        nodes, "unrelated", [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, 32, 32])],
        [helper.make_tensor_value_info("unrelated", TensorProto.FLOAT, output_shape)], [shape],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_two_models_that_share_no_tensor_say_nothing_was_compared_and_the_command_exits_1(
    cnn: Path, tmp_path: Path
) -> None:
    """Once "compared 0 tensors … No node leaves the tolerance" and exit 0: a vacuous pass a CI check took for
    agreement."""
    from core.compare.engine import NOTHING_COMPARED

    other = write(_unrelated([1, 1]), tmp_path / "unrelated.onnx")
    report = _compare(cnn, other, IMAGE)
    assert (report.matched, report.outputs, report.nodes) == (0, [], [])
    assert report.proves_nothing == NOTHING_COMPARED and report.first_divergence is None
    done = cli("compare", str(cnn), str(other), "--input", "image=1,3,32,32")
    assert done.returncode == 1, done.stderr
    assert "Nothing was compared: the two models share no tensor" in done.stdout
    assert "No node leaves the tolerance" not in done.stdout
    done = cli("compare", str(cnn), str(other), "--input", "image=1,3,32,32", "--json")
    assert done.returncode == 1 and json.loads(done.stdout)["proves_nothing"].startswith("Nothing was compared")


def test_outputs_paired_by_position_alone_are_compared_and_said_so_and_no_output_compared_is_no_pass(
    cnn: Path, tmp_path: Path
) -> None:
    from core.compare.engine import NO_OUTPUT

    renamed = write(_unrelated([1, 1000]), tmp_path / "renamed.onnx")  # the logits' shape under another name
    report = _compare(cnn, renamed, IMAGE)
    assert report.proves_nothing == "" and len(report.outputs) == 1 and not report.nodes
    done = cli("compare", str(cnn), str(renamed), "--input", "image=1,3,32,32")
    assert done.returncode == 0, done.stderr
    assert "only their outputs, paired by position" in done.stdout and "No node leaves" not in done.stdout

    headless = _cnn()  # the same CNN with a head of 10 classes: every tensor inside it, but no output, compared
    fc = next(t for t in headless.graph.initializer if t.name == "fc.weight")
    fc.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(fc)[:, :10], "fc.weight"))
    headless.graph.node[-1].output[0] = "scores"
    del headless.graph.output[:]
    headless.graph.output.append(onnx.helper.make_tensor_value_info("scores", onnx.TensorProto.FLOAT, [1, 10]))
    report = _compare(cnn, write(headless, tmp_path / "headless.onnx"), IMAGE)
    assert report.matched > 0 and report.outputs == [] and report.proves_nothing == NO_OUTPUT


def test_the_worst_nodes_list_leaves_out_the_nodes_that_agree_exactly(cnn: Path, tmp_path: Path) -> None:
    """The list of nodes by error was padded with zero-error rows (the Identity and Reshape nodes before and beside a
    divergence, which are no lead): it lists the nodes that differ, and says how many agree exactly."""
    from ui.compare_view import nodes_frame

    model = _cnn()
    next(n for n in model.graph.node if n.name == "/stem/conv1/Relu").op_type = "Sigmoid"
    b = write(model, tmp_path / "b.onnx")
    report = _compare(cnn, b, IMAGE)
    exact = [n for n in report.nodes if n.max_abs == 0]
    assert exact and report.exact_nodes == len(exact)
    assert report.ranked_nodes and all(n.max_abs > 0 for n in report.ranked_nodes)
    assert report.ranked_nodes[0].node == "/stem/conv1/Relu" or not report.ranked_nodes[0].within
    assert len(nodes_frame(report)) == len(report.nodes) - len(exact)
    done = cli("compare", str(cnn), str(b), "--input", "image=1,3,32,32")
    assert done.returncode in (0, 1), done.stderr
    listed = done.stdout.split("relative", 1)[1]
    assert not any(f"{n.node[:40]:<40} " in listed for n in exact)
    assert f"{len(exact)} other node(s) agree exactly (zero error) and are not listed." in done.stdout
    same = _compare(cnn, cnn, IMAGE)  # a model against itself: nothing to list, and it says so
    assert not same.ranked_nodes and same.exact_nodes == len(same.nodes)


def test_the_first_model_runs_alone_and_its_tensors_wait_on_disk_while_the_second_model_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Never both models' tensors at once (issue #51): every group of the reference runs before the second model's
    first, each of its tensors written to a file as it comes; the second model's groups then take them back from
    disk, each file gone once measured."""
    from core.compare import engine

    model = _cnn(128)  # 3.4 MiB of tensors: several groups of at most 1 MiB
    a = write(model, tmp_path / "a.onnx")
    next(n for n in model.graph.node if n.name == "/layer2/layer2.0/conv1/Relu").op_type = "Sigmoid"
    b = write(model, tmp_path / "b.onnx")
    runs: list[tuple[str, int, int]] = []  # (side, tensors asked, tensors of the reference waiting on disk)
    run_group = engine.run_group

    def spy(side: engine.Prepared, names: list[str], feeds: dict[str, object]) -> object:
        runs.append((side.folder.name, len(names), len(list((side.folder.parent / "spool").glob("*.npy")))))
        return run_group(side, names, feeds)

    monkeypatch.setattr(engine, "run_group", spy)
    plan = [BenchInput(name="image", dtype="float32", shape=[1, 3, 128, 128], batch_axis=0)]
    report = _compare(a, b, plan, group_mb=1)
    sides = [side for side, _asked, _waiting in runs]
    assert sides == ["a"] * report.groups + ["b"] * report.groups and report.groups > 1
    written = [waiting for side, _asked, waiting in runs if side == "a"]
    assert written[0] == 0 and written == sorted(written)  # A's tensors reach the disk group by group
    shared = sum(asked for side, asked, _waiting in runs if side == "a")
    left = [waiting for side, _asked, waiting in runs if side == "b"]
    assert left[0] == shared and left == sorted(left, reverse=True) and left[-1] < shared  # read back, removed
    found = report.first_divergence
    assert found is not None and found.node == "/layer2/layer2.0/conv1/Relu" and report.matched == shared
