"""The Partition page through AppTest: a PyTorch model exported on the spot, the real and simulated partitions,
an unavailable provider, the optimization levels."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, NoReturn

import pytest
from streamlit.testing.v1 import AppTest

from core.jobs import OPTIMIZE, PARTITION
from tests import builders
from tests.app.pages import md_tables, open_page, texts
from ui import partition_view


@pytest.fixture(scope="module")
def tinycnn_bytes(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    return builders.exported_sample("tinycnn", tmp_path_factory.mktemp("m")).read_bytes()


def open_partition(model_bytes: bytes | None, monkeypatch: pytest.MonkeyPatch) -> AppTest:
    if model_bytes is None:
        return open_page("partition")
    monkeypatch.setenv("WORKBENCH_START_SAMPLE", "")
    return open_page("partition", ("tinycnn.onnx", model_bytes))


def test_real_and_simulated_partitions_and_levels(tinycnn_bytes: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    at = open_partition(tinycnn_bytes, monkeypatch)
    assert [s.value for s in at.subheader] == ["8 nodes in the main graph: 8 on CPU"]
    assert at.radio(key="partition_shown").options == ["This machine", "NNAPI (simulated)", "CoreML (simulated)"]
    table = at.dataframe[0].value
    assert len(table) == 8 and set(table["provider"]) == {"CPU"}
    assert "Conv + Relu → com.microsoft:FusedConv (×2)" in texts(at)
    fused = next(t.value for t in at.table if "what it does" in t.value.columns)  # ORT's fused ops explained
    assert fused["op"].iloc[0] == "FusedConv" and "activation" in fused["what it does"].iloc[0]
    assert any("specific to this kind of machine" in w.value for w in at.warning)
    # the providers' shares and the levels as bars of text: no Plotly, no syntax highlighter for ORT's log
    assert not at.get("plotly_chart") and not at.code
    tables = {tuple(t.columns[:2]): t.replace(r"\\", "", regex=True) for t in md_tables(at)}  # unescaped
    shares = tables[("Partition", "nodes per provider")]
    assert shares["Partition"].tolist() == ["This machine", "NNAPI (simulated)", "CoreML (simulated)"]
    assert shares["nodes per provider"].iloc[0] == ":gray[CPU] 8"  # the CPU provider's grey, as in the graph
    levels = at.session_state[OPTIMIZE.name][1]
    shown = tables[("optimization level", "nodes")]
    assert shown["optimization level"].tolist() == ["as exported", *(lv.name for lv in levels.levels)]
    assert shown["nodes"].tolist() == ["8", *(str(lv.node_count) for lv in levels.levels)]
    assert shown["rewrites"].tolist()[1:] == [str(len(lv.rewrites)) for lv in levels.levels]

    at.radio(key="partition_shown").set_value("NNAPI (simulated)").run()
    assert [s.value for s in at.subheader] == ["8 nodes in the main graph: 8 on NNAPI in 1 partition (simulated)"]
    assert "usability checker" in texts(at)


def test_on_a_very_large_model_the_levels_wait_for_a_click(
    tinycnn_bytes: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(partition_view, "LEVELS_ON_REQUEST", 7)  # TinyCNN's 8 nodes count as very large
    at = open_partition(tinycnn_bytes, monkeypatch)
    assert any("This model has 8 nodes" in i.value and "starts when you ask" in i.value for i in at.info)
    assert OPTIMIZE.name not in at.session_state and "Conv + Relu" not in texts(at)
    next(b for b in at.button if b.label == "Optimize at every level").click().run()
    assert not at.exception
    assert "Conv + Relu → com.microsoft:FusedConv (×2)" in texts(at)
    assert not any("starts when you ask" in i.value for i in at.info)
    assert not any(b.label == "Optimize at every level" for b in at.button)  # done: nothing left to ask for


def test_an_unavailable_provider_gets_a_warning_not_a_crash(
    tinycnn_bytes: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    at = open_partition(tinycnn_bytes, monkeypatch)
    at.multiselect(key="partition_providers").set_value(["CUDAExecutionProvider", "CPUExecutionProvider"])
    at.multiselect(key="partition_simulate").set_value([])
    at.button[0].click()  # the form's submit button
    at.run()
    assert not at.exception
    assert any("onnxruntime-gpu" in w.value for w in at.warning)
    assert [s.value for s in at.subheader] == ["8 nodes in the main graph: 8 on CPU"]
    assert not at.radio  # one partition: nothing to choose


def test_a_pytorch_model_is_exported_in_one_click(monkeypatch: pytest.MonkeyPatch) -> None:
    at = open_partition(None, monkeypatch)  # the start sample, TinyCNN in PyTorch
    assert any("needs an ONNX model" in i.value for i in at.info)
    at.button(key="export_defaults").click().run()
    assert not at.exception
    assert at.session_state["model"].format == "onnx"
    assert [s.value for s in at.subheader] == ["8 nodes in the main graph: 8 on CPU"]


def test_a_model_from_the_wild_with_subgraphs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = open_partition(builders.control_flow_model().SerializeToString(), monkeypatch)
    table = at.dataframe[0].value
    assert {"then_relu", "body_add"} <= set(table["node"])
    assert at.subheader[0].value.startswith("2 nodes in the main graph: 2 on CPU")


def test_placements_are_read_from_the_jobs_file_and_filtered(monkeypatch: pytest.MonkeyPatch) -> None:
    at = open_partition(builders.control_flow_model().SerializeToString(), monkeypatch)
    report = at.session_state[PARTITION.name][1].reports[0]
    assert report.nodes == [] and report.node_rows.rows == report.node_total >= 4  # kept in the job's file
    assert len(at.dataframe[0].value) == report.node_total
    key = next(m.key for m in at.multiselect if m.key.endswith("_filter"))
    assert "CPU" in at.multiselect(key=key).options
    at.multiselect(key=key).set_value(["CPU"]).run()
    table = at.dataframe[0].value
    assert set(table["provider"]) == {"CPU"} and {"then_relu", "body_add"} <= set(table["node"])


@pytest.mark.parametrize("large", [False, True], ids=["small", "over LEVELS_BEFORE_GRAPH"])
def test_the_partition_and_levels_come_from_one_job_and_the_graph_is_drawn_once(
    tinycnn_bytes: bytes, monkeypatch: pytest.MonkeyPatch, large: bool
) -> None:
    """The partition and its levels come from one job (one worker, the partition's session beside the levels',
    the ALL session built once), the levels' files in a folder of their own; the graph waits for them and the page
    does not run again to colour it; the page's next run takes both as they are kept. A large model too, whose
    partition came first from a job of its own, then its levels from another (six sessions), and a rerun."""
    import streamlit as st

    from ui import jobs

    if large:
        monkeypatch.setattr(partition_view, "LEVELS_BEFORE_GRAPH", 7)  # TinyCNN's 8 nodes count as large

    submitted: list[str] = []
    reruns: list[int] = []
    real_submit, real_rerun = jobs.submit, st.rerun

    def submit(job: Any, *args: Any, **kwargs: Any) -> Any:
        submitted.append(job.name)
        return real_submit(job, *args, **kwargs)

    def rerun(*args: Any, **kwargs: Any) -> NoReturn:
        reruns.append(1)
        real_rerun(*args, **kwargs)

    monkeypatch.setattr(jobs, "submit", submit)
    monkeypatch.setenv("WORKBENCH_START_SAMPLE", "")
    at = open_page(model=("tinycnn.onnx", tinycnn_bytes))
    monkeypatch.setattr(st, "rerun", rerun)
    submitted.clear()
    at.switch_page("app_pages/partition.py").run()
    assert not at.exception, at.exception
    assert OPTIMIZE.name not in submitted and submitted.count(PARTITION.name) == 1
    assert reruns == []
    assert "Conv + Relu → com.microsoft:FusedConv (×2)" in texts(at)  # the levels' report, read from their folder
    levels = at.session_state[OPTIMIZE.name][1]
    assert all(
        Path(level.path).is_file() and Path(level.path).parent.name.startswith("optimized") for level in levels.levels
    )
    submitted.clear()
    at.radio(key="partition_shown").set_value("NNAPI (simulated)").run()
    assert not at.exception and submitted == []  # both kept: nothing runs again
    assert "Conv + Relu → com.microsoft:FusedConv (×2)" in texts(at)


def test_a_small_models_levels_that_fail_leave_its_partition_drawn(
    tinycnn_bytes: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The graph of a small model waits for its levels; when they fail (in the partition's worker, then asked for
    alone), the failure is said where their status was and the partition's graph and tables are drawn all the same
    (the levels are not tried a third time)."""
    from core.errors import WorkbenchError
    from ui import jobs

    tried: list[str] = []
    real_start, real_with_slot = jobs.start, jobs._with_slot

    def start(job: Any, *args: Any, **kwargs: Any) -> None:
        if job.name != OPTIMIZE.name:
            real_start(job, *args, **kwargs)

    def with_slot(job: Any, *args: Any, **kwargs: Any) -> Any:
        if job.name == OPTIMIZE.name:
            tried.append(job.name)
            raise WorkbenchError("The levels could not be built here.")
        return real_with_slot(job, *args, **kwargs)

    def run(job: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
        result = real_run(job, request, *args, **kwargs)
        if job.name == PARTITION.name and request.levels_dir:  # the levels failed in the partition's worker
            return dataclasses.replace(result, optimization=None, levels_failed=True)
        return result

    real_run = jobs.run
    monkeypatch.setattr(jobs, "start", start)
    monkeypatch.setattr(jobs, "_with_slot", with_slot)
    monkeypatch.setattr(jobs, "run", run)
    at = open_partition(tinycnn_bytes, monkeypatch)
    assert not at.exception, at.exception
    assert tried == [OPTIMIZE.name]
    assert any("levels could not be built" in e.value for e in at.error), [e.value for e in at.error]
    assert at.dataframe, "the partition's node table is drawn"


def test_the_nodes_that_run_nowhere_are_in_each_partitions_bar_as_in_the_graphs_legend(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Weights held in Constant nodes run nowhere (with no rewrite, beside a MatMul and an Add on the CPU): the bar
    names them and draws them in light blocks, where it counted the placed nodes alone and a bar of 2 of 4 nodes
    said nothing of the other two."""
    at = open_partition(builders.constant_weights_model().SerializeToString(), monkeypatch)
    at.selectbox(key="partition_level").set_value("disable")
    at.button[0].click().run()  # the form's submit button
    report = at.session_state[PARTITION.name][1].reports[0]
    assert report.main_providers.count("") == 2 and report.providers == {"CPUExecutionProvider": 2}
    shares = next(t for t in md_tables(at) if tuple(t.columns[:2]) == ("Partition", "nodes per provider"))
    assert shares.iloc[0, 1] == ":gray[CPU] 2, :gray[runs nowhere] 2"
    assert shares.iloc[0, 2] == ":gray[" + "█" * 12 + "]:gray[" + "░" * 12 + "]"  # half of the bar, faint
