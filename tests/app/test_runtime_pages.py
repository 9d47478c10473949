"""The runtimes on the pages: the Partition page's runtime picker (shown because make test builds the OpenVINO runtime),
the nodes OpenVINO declined with their reasons, the same model on another runtime side by side, and the Deploy page's
tuning across the runtimes picked."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from streamlit.testing.v1 import AppTest

from tests.app.pages import open_page, texts
from tests.runtimes import OPENVINO, require_openvino, split_model


@pytest.fixture(scope="module")
def split_bytes() -> bytes:
    require_openvino()
    return split_model("Det").SerializeToString()


@pytest.fixture
def split_on(split_bytes: bytes, monkeypatch: pytest.MonkeyPatch) -> Callable[[str], AppTest]:
    """Opens a page on the split model (OpenVINO takes one of its three nodes), in a session with no start sample."""
    monkeypatch.setenv("WORKBENCH_START_SAMPLE", "")
    return lambda page: open_page(page, ("split.onnx", split_bytes))


def test_the_partition_page_places_a_model_on_the_runtime_picked_and_beside_another(
    split_on: Callable[[str], AppTest],
) -> None:
    at = split_on("partition")
    labels = at.selectbox(key="partition_runtime").options
    assert labels[0].startswith("default (onnxruntime ") and labels[1] == "openvino (onnxruntime-openvino 1.24.1)"
    assert [s.value for s in at.subheader] == ["3 nodes in the main graph: 3 on CPU"]  # the default, as before

    at.selectbox(key="partition_runtime").set_value(OPENVINO).run()
    assert not at.exception
    assert at.subheader[0].value == "3 nodes in the main graph: 1 on OpenVINO in 1 partition, 2 fall back to CPU"
    declined = next(d.value for d in at.dataframe if "declined by" in d.value.columns)
    assert list(declined["node"]) == ["relu_in", "det"] and set(declined["declined by"]) == {"OpenVINO"}
    assert "does not take Det" in declined["why"].iloc[1] and "tried alone" in declined["why"].iloc[1]
    shown = next(m for m in at.multiselect if (m.key or "").endswith("_filter"))  # the node table's providers
    assert shown.value == shown.options == ["CPU", "OpenVINO"]  # all of this runtime's, not the last run's CPU alone

    compare = next(s for s in at.selectbox if (s.key or "").endswith("_compare"))
    compare.set_value("default").run()
    assert not at.exception
    table = next(t.value for t in at.table if any(c.startswith("openvino (1.24.1)") for c in t.value.columns))
    rows = table.set_index(table.columns[0]).map(lambda cell: str(cell).replace("\\", ""))  # as shown
    assert rows.loc["OpenVINO"].tolist() == ["1 (1)", "—"] and rows.loc["CPU"].tolist() == ["2 (1)", "3 (1)"]
    assert "Side by side with another runtime" in [h.value for h in at.header]
    assert "the CPU provider runs the other 2" in texts(at)


def test_the_benchmark_page_measures_each_provider_of_the_runtime_picked_on_one_chart(
    split_on: Callable[[str], AppTest],
) -> None:
    at = split_on("benchmark")
    at.selectbox(key="bench_runtime").set_value(OPENVINO)
    at.multiselect(key="bench_levels").set_value(["all"])
    at.multiselect(key="bench_threads").set_value([1])
    at.number_input(key="bench_iters").set_value(20)
    at.number_input(key="bench_warmup").set_value(2)
    next(b for b in at.button if b.label == "Run the benchmark").click()
    at.run()
    assert not at.exception
    table = next(d.value for d in at.dataframe if "configuration" in d.value.columns)
    shares = dict(zip(table["configuration"], table["nodes per provider"], strict=True))
    assert shares == {
        "ORT ALL on openvino/OpenVINOExecutionProvider": "CPU 2 · OpenVINO 1",
        "ORT ALL on openvino/CPUExecutionProvider": "CPU 3",
    }
    assert "OpenVINO runs 1 of the 3 nodes; the CPU provider runs the other 2." in texts(at)


def test_the_deploy_page_tunes_on_each_runtime_picked_and_never_chooses_a_fallback_when_strict(
    split_on: Callable[[str], AppTest],
) -> None:
    at = split_on("deploy")
    picker = at.multiselect(key="deploy_runtimes")  # the Benchmark page's choices, several at once
    assert picker.value == ["default"] and picker.options[1] == "openvino (onnxruntime-openvino 1.24.1)"
    picker.set_value(["default", OPENVINO])
    # each runtime's search gets its share of the budget, and its final round must fit in it on a busy machine too
    at.number_input(key="deploy_budget").set_value(10)
    at.multiselect(key="deploy_variants").set_value([])
    at.checkbox(key="deploy_strict").check()
    next(b for b in at.button if b.label == "Tune").click()
    at.run()
    assert not at.exception
    table = next(d.value for d in at.dataframe if "configuration" in d.value.columns)
    shares = dict(zip(table["configuration"], table["nodes per provider"], strict=True))
    assert shares["ORT defaults (final round)"] == "CPU 3"
    assert shares["ORT defaults on openvino (final round)"] == "CPU 3"  # the other runtime's defaults, measured too
    assert shares["OpenVINO, CPU on openvino"] == "⚠ CPU 2 · OpenVINO 1"  # measured and shown, marked
    said = [m.value for m in [*at.success, *at.info] if m.value.startswith("The runtime")]
    assert said and "Each runtime was tuned in its own worker with the same harness" in said[0]
    chosen = json.loads(next(c.value for c in at.code if c.language == "json"))
    assert chosen["providers"] == ["CPUExecutionProvider"]  # strict: OpenVINO left a node to the CPU provider
