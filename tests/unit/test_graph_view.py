"""The graph view's data (core.graph): folding, attributes, groups, repeats, edge labels, subgraphs; the HTML
page's escaping; and the committed JS bundle matching its sources."""

from __future__ import annotations

import json
import re
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from core.graph import view_graph
from core.graph.page import browser_data, graph_page, script_json
from tests import builders
from tests.bundles import source_hash
from tests.graph_models import transformer_like

COMPONENT = Path(__file__).resolve().parents[2] / "ui" / "graph_component"


def _by_name(view):  # type: ignore[no-untyped-def]
    return {n.name: n for n in view.nodes}


def test_constant_weights_are_folded_into_their_consumers_not_drawn() -> None:
    view = view_graph(builders.constant_weights_model())
    ops = [n.op for n in view.nodes]
    assert "Constant" not in ops and view.folded_constants == 2 and view.node_count == 2
    matmul = _by_name(view)["matmul"]
    assert [(f.name, f.shape, f.dtype) for f in matmul.folded] == [("w", "8×4", "float32")]


def test_initializers_are_folded_and_edges_carry_shape_and_dtype() -> None:
    view = view_graph(builders.chain_model(4))
    add = _by_name(view)["add_0"]
    assert [(f.name, f.shape) for f in add.folded] == [("bias_0", "16")]
    labels = {(view.nodes[e.source].name, view.nodes[e.target].name): e.label for e in view.edges}
    assert labels[("x", "add_0")] == "float32 N×16"
    assert labels[("add_0", "relu_0")] == "float32 N×16"  # known only through shape inference
    assert view.shapes_inferred


def test_key_attributes_are_short_text() -> None:
    conv = helper.make_node(
        "Conv", ["x", "w"], ["y"], name="conv", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], group=32
    )
    cast = helper.make_node("Cast", ["y"], ["z"], name="cast", to=TensorProto.FLOAT16)
    graph = helper.make_graph(
        [conv, cast], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32, 8, 8])], []
    )
    nodes = _by_name(view_graph(graph))
    assert nodes["conv"].attrs == "k=3×3 s=2×2 p=1,1,1,1 g=32"
    assert nodes["cast"].attrs == "to=float16"


def test_name_scopes_become_nested_groups_with_counts_and_repeats() -> None:
    view = view_graph(transformer_like(3))
    paths = {g.path: g for g in view.groups}
    assert paths["encoder"].count == 60 and paths["encoder/layer.1"].count == 20
    assert paths["encoder/layer.1/attn"].parent == paths["encoder/layer.1"].id
    assert paths["encoder/layer.2"].repeat == "layer.0 … layer.2, 3 alike"
    assert "encoder/layer.0/attn/q" not in paths  # a scope of one node is no group: the node sits in attn
    softmax = _by_name(view)["/encoder/layer.0/attn/Softmax"]
    assert view.groups[softmax.group].path == "encoder/layer.0/attn"


def test_torch_name_scope_metadata_wins_over_the_node_name() -> None:
    node = helper.make_node("Relu", ["x"], ["y"], name="relu_3")
    entry = node.metadata_props.add()
    entry.key, entry.value = "pkg.torch.onnx.name_scopes", repr(["", "encoder", "encoder.layer.0", "relu_3"])
    other = helper.make_node("Neg", ["y"], ["z"], name="neg_4")
    entry = other.metadata_props.add()
    entry.key, entry.value = "pkg.torch.onnx.name_scopes", repr(["", "encoder", "neg_4"])
    graph = helper.make_graph([node, other], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])], [])
    view = view_graph(graph)
    assert [g.path for g in view.groups] == ["encoder"]  # layer.0 held one node: folded into encoder
    assert view.groups[view.nodes[1].group].name == "encoder"
    alone = view_graph(helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])], []))
    assert alone.groups == []  # scopes around a single node, however deep, need no box


def test_if_branches_and_loop_bodies_sit_inside_their_node() -> None:
    view = view_graph(builders.control_flow_model())
    nodes = _by_name(view)
    kinds = {g.path: g.kind for g in view.groups}
    assert kinds == {
        "if": "node",
        "if/then_branch": "subgraph",
        "if/else_branch": "subgraph",
        "loop": "node",
        "loop/body": "subgraph",
    }
    holders = {g.name: g for g in view.groups if g.kind == "node"}
    assert holders["if"].owner == nodes["if"].id and holders["loop"].owner == nodes["loop"].id
    assert holders["if"].count == 2 and holders["loop"].count == 2
    assert view.groups[view.groups[nodes["then_relu"].group].parent].owner == nodes["if"].id
    assert nodes["if"].group == -1  # the If itself sits in the main graph; its bodies sit inside it
    feeding = {view.nodes[e.source].name for e in view.edges if e.target == nodes["if"].id}
    assert feeding == {"flag"}  # what a body computes is inside the node, not an edge back into it
    assert any(view.nodes[e.source].name == "x" and e.target == nodes["then_relu"].id for e in view.edges)


def test_bodies_nest_inside_their_nodes_at_any_depth() -> None:
    def branch(name: str, nodes: list[onnx.NodeProto], out: str) -> onnx.GraphProto:
        return helper.make_graph(nodes, name, [], [helper.make_tensor_value_info(out, TensorProto.FLOAT, [2])])

    inner_if = helper.make_node(
        "If",
        ["flag"],
        ["deep"],
        name="inner_if",
        then_branch=branch("t", [helper.make_node("Relu", ["x"], ["r"], name="deepest")], "r"),
        else_branch=branch("e", [helper.make_node("Neg", ["x"], ["n"], name="deep_neg")], "n"),
    )
    middle = helper.make_node(
        "If",
        ["flag"],
        ["mid"],
        name="middle_if",
        then_branch=branch("t", [inner_if], "deep"),
        else_branch=branch("e", [helper.make_node("Abs", ["x"], ["a"], name="mid_abs")], "a"),
    )
    graph = helper.make_graph(
        [middle],
        "nested",
        [
            helper.make_tensor_value_info("flag", TensorProto.BOOL, []),
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
        ],
        [helper.make_tensor_value_info("mid", TensorProto.FLOAT, [2])],
    )
    view = view_graph(graph)
    nodes = _by_name(view)
    chain, group = [], nodes["deepest"].group
    while group >= 0:
        chain.append((view.groups[group].kind, view.groups[group].name))
        group = view.groups[group].parent
    assert chain == [
        ("subgraph", "then_branch"),
        ("node", "inner_if"),
        ("subgraph", "then_branch"),
        ("node", "middle_if"),
    ]
    assert {g.name: g.owner for g in view.groups if g.kind == "node"} == {
        "inner_if": nodes["inner_if"].id,
        "middle_if": nodes["middle_if"].id,
    }


def test_a_local_function_is_a_group_inside_its_call() -> None:
    view = view_graph(builders.function_model())
    holder, body = view.groups
    assert holder.kind == "node" and body.kind == "function" and body.parent == holder.id
    assert body.count == 2 and view.nodes[holder.owner].op != "Input"
    assert view.node_count == 3


def test_dtype_keys_mark_half_precision_and_qdq() -> None:
    q = helper.make_node("QuantizeLinear", ["x", "s"], ["q"], name="q")
    graph = helper.make_graph([q], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])], [])
    assert _by_name(view_graph(graph))["q"].dtype == "qdq"
    assert _by_name(view_graph(builders.fp16_model()))["mm"].dtype == "fp16"


def test_untrusted_names_cannot_close_the_script_element() -> None:
    node = helper.make_node("Relu", ["x"], ["y"], name="</script><img src=x onerror=alert(1)>\u2028")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])], [])
    page = graph_page(view_graph(graph), "/* bundle */")
    data = page.split('type="application/json">', 1)[1].split("</script>", 1)[0]
    assert not {"<", ">", "&", "\u2028"} & set(data)  # nothing the HTML tokenizer acts on inside a script
    assert json.loads(data)["n"]["name"][1].startswith("</script>")
    assert script_json("\u2029") == '"\\u2029"'
    assert script_json("<!--<script>&-->") == '"\\u003c!--\\u003cscript\\u003e\\u0026--\\u003e"'


def test_browser_data_interns_repeated_strings() -> None:
    data = browser_data(view_graph(transformer_like(2)))
    assert len(data["ops"]) < 15 and len(data["n"]["op"]) == 2 * 20 + 3 + 2  # type: ignore[arg-type]


def test_committed_bundle_matches_its_sources_and_lock_file() -> None:
    banner = (COMPONENT / "dist" / "graph.js").read_text().splitlines()[0]
    found = re.search(r"sources sha256 ([0-9a-f]{64})", banner)
    assert found, banner
    assert found.group(1) == source_hash(COMPONENT), "ui/graph_component changed: run `make graph-bundle`"


def test_the_cli_writes_one_html_file_with_no_network_reference(tmp_path: Path) -> None:
    from tests.cli import cli

    model = tmp_path / "m.onnx"
    onnx.save(transformer_like(2), model)
    out = tmp_path / "g.html"
    result = cli("graph", str(model), "-o", str(out), "--color", "dtype")
    assert result.returncode == 0, result.stderr
    page = out.read_text()
    assert "GraphView.mount" in page and '{color: "dtype", colourings:' in page
    assert not re.search(r"(src|href)=[\"']?https?:", page)


def _colourings_in(page: str) -> dict:
    found = re.search(r'<script id="graph-colourings" type="application/json">(.*?)</script>', page, re.S)
    assert found
    return json.loads(found.group(1))


def test_the_cli_colours_by_provider_and_by_what_each_optimizer_level_did(tmp_path: Path) -> None:
    from tests.cli import cli

    model = builders.exported_sample("tinycnn", tmp_path)  # Conv + Relu twice: fused at EXTENDED
    out = tmp_path / "levels.html"
    result = cli("graph", str(model), "-o", str(out), "--color", "level", "--level", "extended")
    assert result.returncode == 0, result.stderr
    assert "coloured by what EXTENDED did: fused" in result.stdout
    colourings = _colourings_in(out.read_text())
    assert set(colourings) == {"basic", "extended", "layout", "all"}
    assert "fused" in colourings["extended"]["keys"].values()
    assert colourings["extended"]["rest"] == "kept as it is"
    assert 'color: "extended"' in out.read_text()

    out = tmp_path / "providers.html"
    result = cli("graph", str(model), "-o", str(out), "--color", "provider", "--providers", "cpu")
    assert result.returncode == 0, result.stderr
    provider = _colourings_in(out.read_text())["provider"]
    assert set(provider["keys"].values()) == {"CPU"} and len(provider["keys"]) == 8


def test_identity_nodes_that_pass_on_a_weight_are_folded_like_one_and_listed() -> None:
    w = helper.make_tensor("w", TensorProto.FLOAT, [2], [1.0, 2.0])
    nodes = [
        helper.make_node("Identity", ["w"], ["w_shared"], name="share_w"),  # a legacy export's shared weight
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("Identity", ["r"], ["r2"], name="pass_r"),  # in the data flow: drawn in line, kept
        helper.make_node("Add", ["r2", "w_shared"], ["y"], name="add"),
    ]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])], [w])  # fmt: skip
    view = view_graph(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    nodes_by = _by_name(view)
    assert "share_w" not in nodes_by and "pass_r" in nodes_by and view.node_count == 3
    assert view.folded_identities == ["share_w: w → w_shared"]
    add = nodes_by["add"]
    assert [(f.name, f.shape) for f in add.folded] == [("w_shared", "2")] and "w" in add.folded[0].stats
    assert not any(e.target == add.id and e.tensor == "w_shared" for e in view.edges)


def test_the_cli_reads_an_onnx_file_given_alone_in_one_job_and_refuses_one_that_is_not_onnx_by_its_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`graph FILE.onnx` runs the graph job alone, in one worker (an intake first read the whole model a second time:
    a second of the command's 5 s at 30,000 nodes, issue #51); a file named .onnx that holds something else is
    refused by its bytes, as before."""
    import zipfile

    from core.jobs.process import ProcessBackend
    from tests.cli import cli

    started: list[str] = []
    submit = ProcessBackend.submit
    monkeypatch.setattr(ProcessBackend, "submit", lambda self, spec: started.append(spec.name) or submit(self, spec))
    model = tmp_path / "m.onnx"
    onnx.save(transformer_like(2), model)
    result = cli("graph", str(model), "-o", str(tmp_path / "g.html"))
    assert result.returncode == 0 and started == ["graph.view"], (result.stderr, started)
    fake = tmp_path / "weights.onnx"
    with zipfile.ZipFile(fake, "w") as archive:  # a PyTorch state_dict by its members, whatever its name says
        archive.writestr("weights/data.pkl", b"\x80\x02}q\x00.")
    result = cli("graph", str(fake), "-o", str(tmp_path / "fake.html"))
    assert result.returncode == 2 and "graph draws ONNX; “weights.onnx” is a" in result.stderr, result.stderr
    assert "Export it first." in result.stderr and not (tmp_path / "fake.html").exists()
