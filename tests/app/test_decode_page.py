"""The Decode page through AppTest: sections in order, the header, the node table, subgraphs, bad models."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from onnx import TensorProto, helper
from streamlit.testing.v1 import AppTest

from core.decode import DecodeRequest
from core.jobs import DECODE, GRAPH
from tests import builders
from tests.app.conftest import APP
from tests.app.pages import md_tables, open_page
from ui.bars import BAR_WIDTH
from ui.decode_view import OP_ROWS


def open_decode(model_bytes: bytes, name: str = "m.onnx") -> AppTest:
    return open_page("decode", (name, model_bytes), timeout=120)


@pytest.fixture(autouse=True)
def no_start_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_START_SAMPLE", "")


def test_sections_come_in_the_order_a_learner_meets_them() -> None:
    at = open_decode(builders.control_flow_model().SerializeToString())
    headers = [h.value for h in at.header]
    assert headers == ["1. The first bytes", "2. The model", "3. The graph", "4. The nodes", "5. The weights"]
    header = at.table[0].value
    assert header["field"].tolist()[0] == r"1\: ir\_version" and header["value"].tolist()[0] == "8"
    # the first bytes and the text form as plain fixed-width text: no code block, whose syntax highlighter (1.5 MB of
    # JavaScript) the browser would load before the person's next click
    assert not at.code and at.text[0].value.startswith("0000  08 08")
    assert "graph" in at.text[-1].value


def test_the_graph_view_holds_the_subgraphs_as_groups() -> None:
    at = open_decode(builders.control_flow_model().SerializeToString())
    view = at.session_state[GRAPH.name][1]
    subgraphs = [g.name for g in view.groups if g.kind == "subgraph"]
    assert len(subgraphs) == 3 and any(name.endswith("then_branch") for name in subgraphs)
    assert any("groups (they open with a click)" in c.value for c in at.caption)


def test_node_table_filters_by_search() -> None:
    at = open_decode(builders.chain_model(60).SerializeToString())
    at.text_input(key="node_search").set_value("relu_2").run()
    table = at.dataframe[0].value
    assert set(table["name"]) == {
        "relu_2",
        "relu_20",
        "relu_21",
        "relu_22",
        "relu_23",
        "relu_24",
        "relu_25",
        "relu_26",
        "relu_27",
        "relu_28",
        "relu_29",
    }


def test_a_long_node_table_is_read_a_page_at_a_time_from_the_jobs_file() -> None:
    at = open_decode(builders.chain_model(2_500).SerializeToString())
    decoded = at.session_state[DECODE.name][1]
    assert decoded.nodes == [] and decoded.node_rows.rows == 2_500  # the rows stay in the job's file
    assert len(at.dataframe[0].value) == 1_000 and any("1,000 per page" in c.value for c in at.caption)
    at.number_input(key="node_page").set_value(3).run()
    last = at.dataframe[0].value
    assert len(last) == 500 and list(last["#"])[-1] == 2_499
    at.multiselect(key="node_ops").set_value(["Relu"]).run()
    at.text_input(key="node_search").set_value("relu_24").run()
    filtered = at.dataframe[0].value
    assert set(filtered["name"]) == {"relu_24", *(f"relu_24{d}" for d in range(10))}  # 1,250 Add, 1,250 Relu
    assert any(c.value.startswith(f"{len(filtered):,} of 2,500 nodes") for c in at.caption)


def test_a_large_graph_is_drawn_whole_and_its_node_opens_from_the_address() -> None:
    at = open_decode(builders.chain_model(1000).SerializeToString())
    view = at.session_state[GRAPH.name][1]
    assert view.node_count == 1000
    assert any(c.value.startswith("1,000 nodes") for c in at.caption)
    name = view.nodes[500].name
    at.query_params["node"] = name  # a link to one node: the page shows it
    at.run()
    assert any(name in m.value.replace("\\", "") for m in at.markdown)


def test_a_model_with_odd_domains_and_versions_decodes_with_warnings(tmp_path: Path) -> None:
    from onnx import helper

    model = builders.relu_model()
    model.opset_import.append(helper.make_opsetid("com.example.custom", 1))
    model.opset_import[0].version = 999
    at = open_decode(model.SerializeToString())
    warnings = " ".join(w.value for w in at.warning)
    assert "Opset 999 is newer" in warnings and "com\\.example\\.custom" in warnings


def test_a_pytorch_model_is_exported_in_one_click_and_decoded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_START_SAMPLE", "tinycnn")
    at = AppTest.from_file(APP, default_timeout=180)
    at.run()
    at.switch_page("app_pages/decode.py").run()
    assert "Decoding needs an ONNX model" in at.info[0].value
    at.button(key="export_defaults").click().run()
    assert not at.exception and at.session_state["model"].format == "onnx"
    assert [h.value for h in at.header][:2] == ["1. The first bytes", "2. The model"]
    assert any(link.label.startswith("Partition") for link in at.get("page_link"))  # the next steps


def test_identity_nodes_of_weights_are_folded_and_listed_under_the_graph() -> None:
    from onnx import TensorProto, helper

    bias = helper.make_tensor("b", TensorProto.FLOAT, [2], [0.0, 0.0])
    nodes = [helper.make_node("Identity", ["b"], [f"b{i}"], name=f"share_{i}") for i in range(2)]
    nodes += [helper.make_node("Add", ["x", "b0"], ["h"], name="add0"), helper.make_node("Add", ["h", "b1"], ["y"])]
    io = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2]) for n in ("x", "y")]
    graph = helper.make_graph(nodes, "g", io[:1], io[1:], [bias])
    at = open_decode(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    assert any("2 Identity nodes that pass on a weight folded into" in c.value for c in at.caption)
    listed = next(t.value for t in at.table if "Identity node: input → output" in t.value.columns)
    assert len(listed) == 2 and "share\\_0" in listed.iloc[0, 0]


def _job_events(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What the pages ask of the job backend, in order: "submit NAME" and "result NAME"."""
    import ui.jobs
    from core.jobs.process import submit

    events: list[str] = []

    def recorded(job, request, backend=None):  # type: ignore[no-untyped-def]
        handle = submit(job, request, backend)
        events.append(f"submit {job.name}")
        read = handle.result

        def result(timeout=None):  # type: ignore[no-untyped-def]
            events.append(f"result {job.name}")
            return read(timeout)

        handle.result = result
        return handle

    monkeypatch.setattr(ui.jobs, "submit", recorded)
    return events


@pytest.fixture
def apart(monkeypatch: pytest.MonkeyPatch) -> None:
    """The decoding and the graph's layout in two jobs, as for a model past ``TOGETHER_MAX_NODES``."""
    monkeypatch.setattr("ui.decode_view.TOGETHER_MAX_NODES", 0)


def test_a_small_models_decoding_and_graph_come_from_one_job(monkeypatch: pytest.MonkeyPatch) -> None:
    """One worker for both (and one replacement for the warm pool to start while the page is drawn); each result is
    kept as its own job's, so a second visit and Partition's graph run nothing."""
    events = _job_events(monkeypatch)
    at = open_decode(builders.chain_model(30).SerializeToString(), name="chain.onnx")
    mine = [e for e in events if "decode" in e or "graph" in e]
    assert mine == ["submit decode.with_graph", "result decode.with_graph"]
    assert at.session_state[GRAPH.name][1].node_count == 30 and at.session_state[DECODE.name][1].node_count == 30
    assert [h.value for h in at.header] == ["1. The first bytes", "2. The model", "3. The graph", "4. The nodes",
                                            "5. The weights"]  # fmt: skip
    assert any(c.value.startswith("30 nodes") for c in at.caption)  # the graph drawn from it
    decoded = at.session_state[DECODE.name][1]  # the node table in the job's file, as the decoding's own job's
    assert decoded.nodes == [] and decoded.node_rows.rows == 30 and len(at.dataframe[0].value) == 30
    events.clear()
    at.switch_page("app_pages/partition.py").run()
    at.switch_page("app_pages/decode.py").run()
    assert not at.exception and not [e for e in events if "decode" in e or "graph" in e]


def test_a_graph_the_decoding_job_could_not_lay_out_is_asked_of_the_graphs_own_job(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The decoding is shown all the same, and the graph's own job is run for the graph (and says why, if it fails
    again): the job's function, called here (a worker is another process), then the page with such a result."""
    import core.decode.graphed

    def refused(request, limits=None):  # type: ignore[no-untyped-def]
        raise RuntimeError("no layout")

    monkeypatch.setattr(core.decode.graphed, "graph_view_job", refused)
    model = builders.chain_model(3)
    (tmp_path / "chain.onnx").write_bytes(model.SerializeToString())
    both = core.decode.graphed.decode_with_graph(DecodeRequest(path=str(tmp_path / "chain.onnx")))
    assert both.view is None and both.decoded.node_count == len(model.graph.node)
    events = _job_events(monkeypatch)
    monkeypatch.setattr("ui.decode_view.jobs.run", _without_view(monkeypatch))
    at = open_decode(model.SerializeToString(), name="chain.onnx")
    assert [e for e in events if e.startswith("submit")][-1] == "submit graph.view"
    assert at.session_state[GRAPH.name][1].node_count == len(model.graph.node) and not at.exception


def _without_view(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """ui.jobs.run, with the combined job's view taken out of its result (as when the worker could not lay it out)."""
    import dataclasses

    import ui.jobs

    run = ui.jobs.run

    def wrapped(job, request, label, **kwargs):  # type: ignore[no-untyped-def]
        result = run(job, request, label, **kwargs)
        return dataclasses.replace(result, view=None) if job.name == "decode.with_graph" else result

    return wrapped


@pytest.mark.usefixtures("apart")
def test_the_graph_is_laid_out_while_the_model_is_decoded(monkeypatch: pytest.MonkeyPatch) -> None:
    """A larger model's two jobs in two workers side by side: the graph's job is started before the page waits on
    the decoding, and waited on after; a second visit starts neither (both results are kept)."""
    events = _job_events(monkeypatch)
    at = open_decode(builders.chain_model(30).SerializeToString())
    mine = [e for e in events if e.endswith((DECODE.name, GRAPH.name))]
    assert mine == ["submit graph.view", "submit decode.run", "result decode.run", "result graph.view"]
    assert at.session_state[GRAPH.name][1].node_count == 30
    events.clear()
    at.switch_page("app_pages/model.py").run()
    at.switch_page("app_pages/decode.py").run()
    assert not at.exception and not [e for e in events if e.startswith("submit")]
    from ui.jobs import _session_jobs

    deadline = time.monotonic() + 10
    while _session_jobs().running:  # the slot the graph's job held is given back once it has ended
        assert time.monotonic() < deadline, _session_jobs().running
        time.sleep(0.05)


@pytest.mark.usefixtures("apart")
def test_with_one_job_per_session_the_graph_waits_its_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where a session may run one job at a time (hosted), nothing is started ahead: the page runs its jobs one
    after the other, as before, and never refuses its own second job."""
    monkeypatch.setenv("WORKBENCH_MAX_JOBS_PER_SESSION", "1")
    events = _job_events(monkeypatch)
    at = open_decode(builders.chain_model(30).SerializeToString())
    mine = [e for e in events if e.endswith((DECODE.name, GRAPH.name))]
    assert mine == ["submit decode.run", "result decode.run", "submit graph.view", "result graph.view"]
    assert not at.error and at.session_state[GRAPH.name][1].node_count == 30


def test_a_result_started_ahead_and_never_taken_is_dropped(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The person left before the page waited on it: the slot comes back when the job ends, the result goes a
    while later (it can be a large model's graph), and one taken meanwhile is not touched."""
    import ui.jobs

    class Ended:
        def wait(self, timeout: float | None) -> bool:
            return True

    sessions = ui.jobs._session_jobs()
    _lock, started = ui.jobs._started()
    assert sessions.spare("left", 2)
    written = [tmp_path / "placements-1", tmp_path / "optimized-1"]
    for folder in written:
        (folder / "level.onnx").parent.mkdir()
        (folder / "level.onnx").write_bytes(b"x")
    entry = ui.jobs._Started(("model", b"asked"), Ended(), written[0], tuple(map(str, written)), keep_s=0.0)
    started[("left", GRAPH.name)] = entry
    ui.jobs._end_of_started(entry, ("left", GRAPH.name))
    assert ("left", GRAPH.name) not in started and not sessions.running["left"]
    assert not any(folder.exists() for folder in written)  # nobody took it: what it wrote goes with it
    newer = ui.jobs._Started(("model", b"asked again"), Ended(), keep_s=0.0)
    started[("left", GRAPH.name)] = newer
    ui.jobs._end_of_started(entry, ("left", GRAPH.name))  # the older one's end leaves the newer one alone
    assert started.pop(("left", GRAPH.name)) is newer and not sessions.running["left"]  # its slot came back once
    kept = tmp_path / "decode-1"
    kept.mkdir()
    taken = ui.jobs._Started(("model", b"taken"), Ended(), kept, (str(kept),), keep_s=0.0, taken=True)
    started[("left", GRAPH.name)] = taken
    assert sessions.spare("left", 2)
    ui.jobs._end_of_started(taken, ("left", GRAPH.name))
    assert kept.is_dir()  # a page took it: its folder is the page's


@pytest.mark.usefixtures("apart")
def test_a_model_too_large_to_hold_twice_is_laid_out_after_it_is_decoded(monkeypatch: pytest.MonkeyPatch) -> None:
    import ui.graph_panel

    monkeypatch.setattr(ui.graph_panel, "START_AHEAD_MAX_BYTES", 100)  # the chain of 30 is a few kB
    events = _job_events(monkeypatch)
    at = open_decode(builders.chain_model(30).SerializeToString())
    mine = [e for e in events if e.endswith((DECODE.name, GRAPH.name))]
    assert mine == ["submit decode.run", "result decode.run", "submit graph.view", "result graph.view"]
    assert not at.exception


def test_a_long_job_is_announced_in_a_toast_and_so_is_its_end(monkeypatch: pytest.MonkeyPatch) -> None:
    """A status box may be below the window's edge (under a long form's button): a job still running after a few
    seconds says so in a toast, which shows wherever the person has scrolled, and says when it is done."""
    import ui.jobs

    monkeypatch.setattr(ui.jobs, "TOAST_AFTER_S", 0.0)
    at = open_decode(builders.chain_model(30).SerializeToString(), name="chain.onnx")
    said = [t.value for t in at.toast]
    assert "Decoding 'chain': running; its box on the page shows how far it has got." in said
    assert any(s.startswith("Decoding 'chain': done in ") for s in said)


def test_a_quick_job_has_no_toast(monkeypatch: pytest.MonkeyPatch) -> None:
    import ui.jobs

    monkeypatch.setattr(ui.jobs, "TOAST_AFTER_S", 3600.0)  # quicker than this, however busy the machine
    at = open_decode(builders.chain_model(30).SerializeToString())
    assert not at.toast


@pytest.mark.usefixtures("apart")
def test_a_job_that_cannot_start_ahead_gives_its_slot_back_and_runs_in_its_turn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import ui.jobs
    from core.errors import JobError
    from core.jobs.process import submit

    refused = []

    def once(job, request, backend=None):  # type: ignore[no-untyped-def]
        if job.name == GRAPH.name and not refused:
            refused.append(job.name)
            raise JobError("no worker now")
        return submit(job, request, backend)

    monkeypatch.setattr(ui.jobs, "submit", once)
    at = open_decode(builders.chain_model(30).SerializeToString())
    assert refused and at.session_state[GRAPH.name][1].node_count == 30 and not at.error
    assert not ui.jobs._session_jobs().running  # the slot start took came back at once


def test_the_op_types_and_the_largest_layers_are_bars_of_text_not_charts() -> None:
    """Each count beside its bar in a Markdown table: no Plotly chart, whose 4.7 MB of JavaScript the browser
    loaded before the page was done (issue #51), and every number still shown."""
    at = open_decode(builders.mlp_model().SerializeToString())
    assert not at.get("plotly_chart")
    decoded = at.session_state[DECODE.name][1]
    tables = {tuple(t.columns[:2]): t for t in md_tables(at)}
    ops = tables[("op", "nodes")]
    assert dict(zip(ops["op"], ops["nodes"], strict=True)) == {op: str(n) for op, n in decoded.op_counts.items()}
    largest = max(decoded.op_counts.values())
    assert ops.iloc[0, 2] == ":blue[" + "█" * BAR_WIDTH + "]"  # the most frequent op first, its bar the longest
    assert decoded.op_counts[ops["op"].iloc[0]] == largest
    layers = tables[("layer", "parameters")]
    assert sorted(layers["parameters"], key=lambda p: -int(p.replace(",", "")))[0] == layers["parameters"].iloc[0]
    assert {f"{lay.parameters:,}" for lay in decoded.layers} >= set(layers["parameters"])


def test_a_model_of_many_op_types_shows_the_most_frequent_and_says_how_many_are_left() -> None:
    """A table of every op type ran as long as the model had types (a hundred on a model of custom ops)."""
    ops = ["Relu", "Abs", "Neg", "Sigmoid", "Tanh", "Exp", "Softsign", "Softplus", "Elu", "Selu", "HardSigmoid", "Ceil",
           "Floor", "Round", "Sin", "Cos", "Atan", "Sinh", "Asinh", "Erf", "Identity", "LeakyRelu", "Mish",
           "HardSwish", "Sign", "Reciprocal", "Sqrt", "Cosh"]  # fmt: skip
    nodes = [helper.make_node(op, [f"t{i}"], [f"t{i + 1}"], name=f"n{i}") for i, op in enumerate(ops + ops[:3])]
    graph = helper.make_graph(
        nodes, "many", [helper.make_tensor_value_info("t0", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info(f"t{len(nodes)}", TensorProto.FLOAT, [1, 4])],
    )  # fmt: skip
    at = open_decode(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    shown = next(t for t in md_tables(at) if tuple(t.columns[:2]) == ("op", "nodes"))
    assert len(shown) == OP_ROWS == 25 and shown["op"].tolist()[:3] == ["Relu", "Abs", "Neg"]  # twice each, first
    assert any(
        "The other 3 op types hold 3 node(s)" in c.value and "filter lists them all" in c.value for c in at.caption
    )
