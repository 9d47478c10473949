"""Partition and optimization levels: every node accounted for, simulated splits, fusions, clear refusals."""

from __future__ import annotations

import json
from pathlib import Path

import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from core.errors import PartitionError
from core.graph.colourings import provider_colours
from core.jobs import PARTITION, run
from core.model import zoo
from core.notes import say
from core.partition import LevelsRequest, PartitionRequest, PartitionResult, optimize_levels, partition_model
from core.partition.optimize import LAYOUT_WARNING, compare_graphs
from core.partition.words import CONSTANTS, SIMULATED_TITLE
from core.runtime.ort import provider_table
from tests import builders
from tests.cli import cli
from ui.partition_view import placement_frame


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("samples")
    return {name: builders.exported_sample(name, folder) for name in zoo.SAMPLES}


def _accounted(result: PartitionResult, path: Path) -> None:
    """Every node of the main graph has a provider, or a reason why it runs nowhere; counts add up."""
    model = onnx.load(str(path), load_external_data=False)
    report = result.reports[0]
    main = [n for n in report.nodes if n.index >= 0]
    assert sorted(n.index for n in main) == list(range(len(model.graph.node)))
    assert all(n.provider or n.note for n in main)
    idle = sum(1 for n in main if not n.provider)
    assert sum(report.providers.values()) + idle == result.node_count == len(model.graph.node)


@pytest.mark.parametrize("name", list(zoo.SAMPLES))
@pytest.mark.parametrize("level", ["disable", "all"])
def test_every_node_of_every_sample_is_accounted_for(samples: dict[str, Path], name: str, level: str) -> None:
    result = partition_model(PartitionRequest(path=str(samples[name]), level=level))
    _accounted(result, samples[name])
    assert set(result.reports[0].providers) == {"CPUExecutionProvider"}
    if level == "disable":  # nothing is removed: only Constant nodes (held as weights) run nowhere
        assert all(n.provider or n.op_type == "Constant" for n in result.reports[0].nodes)
    assert any("Node placements" in line for line in result.reports[0].log)


def test_tinycnn_is_eight_nodes_on_the_cpu_in_one_piece(samples: dict[str, Path]) -> None:
    report = partition_model(PartitionRequest(path=str(samples["tinycnn"]))).reports[0]
    assert report.summary == "8 nodes in the main graph: 8 on CPU"
    assert report.providers == {"CPUExecutionProvider": 8}
    assert len(report.subgraphs) == 1 and report.subgraphs[0].ops["Conv"] == 2
    assert not report.simulated and not report.copies and not report.fallback


def test_simulated_nnapi_split_of_the_transformer(samples: dict[str, Path]) -> None:
    from onnxruntime.tools.mobile_helpers import usability_checker

    path = samples["transformer"]
    result = partition_model(PartitionRequest(path=str(path), simulate=["nnapi", "coreml"]))
    nnapi = next(r for r in result.reports if say(r.title) == "NNAPI (simulated)")
    assert (nnapi.title.key, nnapi.title.values) == (SIMULATED_TITLE, {"name": "NNAPI"})  # data, said where shown
    assert nnapi.simulated and nnapi.summary.endswith("(simulated)")
    assert "LayerNormalization" in nnapi.unsupported_ops
    on_nnapi = nnapi.providers["NnapiExecutionProvider"]
    constants = sum(1 for n in nnapi.nodes if n.op_type == "Constant")  # run nowhere, as in the real partition
    assert on_nnapi + nnapi.providers["CPUExecutionProvider"] + constants == result.node_count
    assert len(nnapi.fallback) == nnapi.providers["CPUExecutionProvider"]
    # the same numbers as ORT's own checker, which counts the Constant nodes of its groups as supported
    model = onnx.load(str(path))
    info = usability_checker.check_nnapi_partitions(model, require_fixed_input_sizes=False)
    grouped = {tuple(n.output) for group in info.supported_groups for n in group if n.op_type == "Constant"}
    assert on_nnapi + sum(tuple(n.output) in grouped for n in model.graph.node) == info.num_supported_nodes
    assert sum(1 for s in nnapi.subgraphs if s.provider == "NnapiExecutionProvider") == info.num_partitions
    assert any(say(r.title) == "CoreML (simulated)" for r in result.reports)


def test_the_simulations_of_a_model_walk_its_graph_for_the_checkers_maps_once(
    samples: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each simulation's checker made the same producer and consumer maps of the whole graph (0.3 s each at 30,000
    nodes): they are made once for the model, and each simulation places every node as it does alone."""
    from core.partition import partitioner

    checker = partitioner._usability_checker()
    made: list[int] = []
    shared = checker.get_producer_consumer_maps
    monkeypatch.setattr(shared, "make", lambda graph, make=shared.make: made.append(1) or make(graph))
    path = str(samples["transformer"])
    both = partition_model(PartitionRequest(path=path, simulate=["nnapi", "coreml"]))
    assert len(made) == 1
    for report in both.reports[1:]:  # each alone, on a model read anew
        key = "nnapi" if "Nnapi" in report.providers_requested[0] else "coreml"
        [alone] = partition_model(PartitionRequest(path=path, simulate=[key])).reports[1:]
        assert [(n.provider, n.subgraph) for n in alone.nodes] == [(n.provider, n.subgraph) for n in report.nodes]
    assert len(made) == 3


def test_a_simulated_partition_counts_constant_nodes_as_the_real_one_does(tmp_path: Path) -> None:
    """Weights in Constant nodes (a Paddle export): they run nowhere in both, so the bars can be compared (an OCR
    detector's simulated bars were 672 nodes long against this machine's 328)."""
    path = tmp_path / "paddle.onnx"
    onnx.save(builders.constant_weights_model(), path)
    result = partition_model(PartitionRequest(path=str(path), level="disable", simulate=["nnapi", "coreml"]))
    real, *simulated = result.reports
    assert sum(real.providers.values()) == 2  # MatMul and Add; the two Constants run nowhere
    for report in simulated:
        assert sum(report.providers.values()) == 2, report.providers
        assert [n.provider for n in report.nodes if n.op_type == "Constant"] == ["", ""]
        assert any(note.key == CONSTANTS and note.values == {"count": 2} for note in report.notes)
        assert any(said.startswith("2 Constant node(s) run nowhere") for said in map(say, report.notes))


def test_dynamo_export_of_the_transformer_matches_the_measured_split(tmp_path: Path) -> None:
    """FACTS: the dynamo export of the small transformer is 103 nodes, 95 on NNAPI in 6 partitions."""

    from core.export import ExportRequest, default_options, export_model
    from core.model.torchload import source_of

    record = zoo.describe_sample("transformer")
    report = export_model(
        ExportRequest(source=source_of(record), options=default_options(record), out_dir=str(tmp_path))
    )
    result = partition_model(PartitionRequest(path=report.onnx_path, simulate=["nnapi"]))
    assert (
        result.reports[1].summary
        == "103 nodes in the main graph: 95 on NNAPI in 6 partitions, 8 fall back to CPU (simulated)"
    )


def test_an_unavailable_provider_is_explained_and_the_cpu_takes_over(samples: dict[str, Path]) -> None:
    result = partition_model(
        PartitionRequest(path=str(samples["tinycnn"]), providers=["CUDAExecutionProvider", "TensorrtExecutionProvider"])
    )
    assert set(result.unavailable) == {"CUDAExecutionProvider", "TensorrtExecutionProvider"}
    assert "onnxruntime-gpu" in result.unavailable["CUDAExecutionProvider"]
    assert result.reports[0].providers == {"CPUExecutionProvider": 8}


def test_unknown_providers_and_simulations_are_refused(samples: dict[str, Path]) -> None:
    with pytest.raises(PartitionError, match="Unknown execution provider FooExecutionProvider"):
        partition_model(PartitionRequest(path=str(samples["tinycnn"]), providers=["FooExecutionProvider"]))
    with pytest.raises(PartitionError, match="Cannot simulate tpu"):
        partition_model(PartitionRequest(path=str(samples["tinycnn"]), simulate=["tpu"]))
    with pytest.raises(PartitionError, match="Unknown optimization level"):
        partition_model(PartitionRequest(path=str(samples["tinycnn"]), level="max"))


def test_the_provider_table_lists_every_provider_with_its_hardware() -> None:
    table = provider_table()
    names = [p.name for p in table]
    assert table[0].available and "CPUExecutionProvider" in names and "CUDAExecutionProvider" in names
    assert len(names) == len(set(names)) >= 19
    assert all(p.hardware for p in table if p.name in ("CUDAExecutionProvider", "NnapiExecutionProvider"))


WILD = {
    "constant_weights": builders.constant_weights_model,
    "control_flow": builders.control_flow_model,
    "fp16": builders.fp16_model,
    "mixed_inputs": builders.mixed_inputs_model,
    "chain": lambda: builders.chain_model(300),
    "function": builders.function_model,
}


@pytest.mark.parametrize("name", list(WILD))
def test_models_from_the_wild_partition_and_optimize(tmp_path: Path, name: str) -> None:
    path = builders.write(WILD[name](), tmp_path / f"{name}.onnx")
    result = partition_model(PartitionRequest(path=str(path), simulate=["nnapi", "coreml"]))
    _accounted(result, path)
    assert set(provider_colours(result.reports[0])) == {f"n{i}" for i in range(result.node_count)}
    for report in result.reports:
        assert len(placement_frame(report.nodes)) == len(report.nodes) == report.node_total
    levels = optimize_levels(LevelsRequest(path=str(path), out_dir=str(tmp_path / "optimized")))
    assert [lv.name for lv in levels.levels] == ["DISABLE_ALL", "BASIC", "EXTENDED", "LAYOUT", "ALL"]
    for level in levels.levels:  # each saved graph loads again in ONNX Runtime, on this machine
        ort.InferenceSession(level.path, providers=["CPUExecutionProvider"])


def test_subgraph_nodes_are_placed_with_their_graph(tmp_path: Path) -> None:
    path = builders.write(builders.control_flow_model(), tmp_path / "cf.onnx")
    nodes = partition_model(PartitionRequest(path=str(path))).reports[0].nodes
    inner = {n.name: n for n in nodes if n.index < 0}
    assert {"then_relu", "else_neg", "body_add"} <= set(inner)
    assert inner["then_relu"].graph.endswith("then_branch") and inner["then_relu"].provider == "CPUExecutionProvider"


def test_function_calls_run_where_their_inlined_bodies_ran(tmp_path: Path) -> None:
    path = builders.write(builders.function_model(), tmp_path / "fn.onnx")
    report = partition_model(PartitionRequest(path=str(path))).reports[0]
    call = next(n for n in report.nodes if n.index == 0)
    assert call.provider == "CPUExecutionProvider" and "inlines" in call.note
    assert sorted(n.op_type for n in report.nodes if n.graph == "added by ORT") == ["Add", "Relu"]


def test_tinycnn_levels_fuse_conv_and_relu(samples: dict[str, Path], tmp_path: Path) -> None:
    report = optimize_levels(LevelsRequest(path=str(samples["tinycnn"]), out_dir=str(tmp_path)))
    by = {lv.name: lv for lv in report.levels}
    assert by["DISABLE_ALL"].node_count == 8 and by["EXTENDED"].node_count < by["DISABLE_ALL"].node_count
    texts = [r.text for r in by["EXTENDED"].rewrites]
    assert texts.count("Conv + Relu → com.microsoft:FusedConv") == 2
    assert "ConvActivationFusion" in by["EXTENDED"].transformers
    assert by["EXTENDED"].op_counts["com.microsoft:FusedConv"] == 2
    layout = by["ALL"].warning
    assert by["EXTENDED"].warning is None and layout is not None and layout.key == LAYOUT_WARNING
    assert layout.severity == "warning" and "specific to this kind of machine" in say(layout)
    assert any(r.kind == "layout" for r in by["ALL"].rewrites)
    assert all(Path(lv.path).is_file() and lv.size_bytes > 0 for lv in report.levels)


def test_compare_graphs_names_removals_fusions_and_additions() -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    original = helper.make_graph(
        [
            helper.make_node("Identity", ["x"], ["a"], name="id"),
            helper.make_node("Add", ["a", "a"], ["b"], name="add"),
            helper.make_node("Relu", ["b"], ["c"], name="relu"),
            helper.make_node("Neg", ["c"], ["y"], name="neg"),
        ],
        "g",
        [x],
        [y],
    )
    optimized = helper.make_graph(
        [
            helper.make_node("AddRelu", ["x", "x"], ["c"], name="fused", domain="test"),
            helper.make_node("Neg", ["c"], ["y"], name="neg"),
            helper.make_node("Print", ["y"], ["unused"], name="extra", domain="test"),
        ],
        "g",
        [x],
        [y],
    )
    rewrites = {r.text: r.kind for r in compare_graphs(original, optimized)}
    assert rewrites == {"Identity + Add + Relu → test:AddRelu": "fused", "test:Print added": "added"}
    only_identity = helper.make_graph(list(original.node)[1:], "g", [x], [y])
    only_identity.node[0].input[:] = ["x", "x"]
    removed = compare_graphs(original, only_identity)
    assert [(r.kind, r.text) for r in removed] == [("removed", "Identity removed")]


def test_partition_job_round_trips_through_the_worker(samples: dict[str, Path]) -> None:
    result = run(PARTITION, PartitionRequest(path=str(samples["resnet"]), simulate=["coreml"]))
    assert isinstance(result, PartitionResult)
    assert result.reports[0].summary == "15 nodes in the main graph: 15 on CPU"
    assert result.node_count == 15


def test_cli_partition_of_the_tinycnn_sample_with_levels() -> None:
    done = cli("partition", "sample:tinycnn", "--levels", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["providers"] == {"CPUExecutionProvider": 8} and len(data["nodes"]) == 8
    assert {n["provider"] for n in data["nodes"]} == {"CPUExecutionProvider"}
    assert data["subgraphs"][0]["nodes"] == 8
    assert data["levels"]["EXTENDED"]["node_count"] < data["levels"]["DISABLE_ALL"]["node_count"]
    assert data["levels"]["EXTENDED"]["op_counts"]["com.microsoft:FusedConv"] == 2


def test_cli_partition_says_its_notes_in_the_readers_language_and_its_json_in_english() -> None:
    """The report keeps its title and notes as data: the text is said in Chinese with --lang zh, the JSON stays
    English for a pipeline."""
    text = cli("--lang", "zh", "partition", "sample:tinycnn", "--simulate", "nnapi")
    assert text.returncode == 0, text.stderr
    assert "主计算图共 8 个节点：8 个在 CPU 上" in text.stdout  # the summary, written in the reader's language
    assert "用 ONNX Runtime 自带的 NNAPI 可用性检查器模拟" in text.stdout and "Simulated with" not in text.stdout
    data = json.loads(cli("--lang", "zh", "partition", "sample:tinycnn", "--simulate", "nnapi", "--json").stdout)
    assert data["title"] == "This machine" and data["summary"] == "8 nodes in the main graph: 8 on CPU"
    (nnapi,) = data["simulations"]
    assert nnapi["title"] == "NNAPI (simulated)"
    assert nnapi["notes"][0].startswith("Simulated with ONNX Runtime's own usability checker for NNAPI")


def test_cli_partition_text_with_an_unavailable_provider_and_a_simulation(
    samples: dict[str, Path], tmp_path: Path
) -> None:
    done = cli(
        "partition", str(samples["transformer"]), "--providers", "cuda,cpu", "--simulate", "nnapi",
        "--levels", "--out-dir", str(tmp_path),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "onnxruntime-gpu" in done.stderr
    assert "(simulated)" in done.stdout and "unsupported ops: " in done.stdout and "LayerNormalization" in done.stdout
    assert "BASIC" in done.stdout and "ConstantFolding" in done.stdout and "Identity removed (×15)" in done.stdout
    assert (tmp_path / "transformer.extended.onnx").is_file()
    bad = cli("partition", str(samples["transformer"]), "--providers", "tpu")
    assert bad.returncode == 2 and "Unknown execution provider" in bad.stderr


def test_counts_agree_and_subgraphs_are_named_apart(tmp_path: Path) -> None:
    """The summary, the metrics and the chart count the main graph; nodes in If bodies are said apart, and the
    levels say how many nodes the bodies hold before and after ORT's optimizer."""
    from core.decode import DecodeRequest, decode_model
    from core.model.intake import IntakeRequest, describe_files
    from tests import wild

    path = builders.write(wild.vad_model(), tmp_path / "vad.onnx")
    result = partition_model(PartitionRequest(path=str(path), simulate=["nnapi"]))
    real, simulated = result.reports
    assert (
        real.summary
        == "6 nodes in the main graph: 6 on CPU; 3 more in subgraphs, with the provider of the node that holds them"
    )
    assert sum(real.providers.values()) == 6 == result.node_count
    assert sum(simulated.providers.values()) == 6 and "partitions" in simulated.summary
    levels = optimize_levels(LevelsRequest(path=str(path), out_dir=str(tmp_path / "levels"), levels=["disable", "all"]))
    assert levels.original_subgraph_nodes == 3 and levels.levels[0].subgraph_nodes == 3
    for name, model in (("det", wild.detector_model()), ("vad", wild.vad_model()), ("ir3", wild.ir3_model())):
        file = builders.write(model, tmp_path / f"{name}.onnx")
        described = describe_files(IntakeRequest(paths=[str(file)]))
        assert described.parameter_count == decode_model(DecodeRequest(path=str(file))).parameter_count, name


def test_rewrites_name_folded_constants_by_count() -> None:
    from core.partition import Rewrite

    fused = Rewrite(
        kind="fused",
        before=["Constant", "Conv", "Constant", "Relu"],
        after=["com.microsoft:FusedConv"],
        nodes_before=[],
        nodes_after=[],
    )
    assert fused.text == "Conv + Relu → com.microsoft:FusedConv (2 Constants folded in)"
    removed = Rewrite(kind="removed", before=["Constant"], after=[], nodes_before=[], nodes_after=[])
    assert removed.text == "Constant removed (its value became a weight)"


def test_a_simulated_partition_does_not_load_torch(tmp_path: Path) -> None:
    """onnxruntime.tools imports torch when it is installed; the usability checker never needs it, and loading it
    made every simulated partition a second slower."""
    import subprocess
    import sys

    path = builders.write(builders.relu_model(), tmp_path / "relu.onnx")
    code = (
        "import sys; from core.partition import PartitionRequest, partition_model; "
        f"r = partition_model(PartitionRequest(path={str(path)!r}, simulate=['nnapi', 'coreml'])); "
        "print(len(r.reports), 'torch' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.split() == ["3", "False"]
