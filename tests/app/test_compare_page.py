"""The Compare page through AppTest: the current model against a copy with one op swapped, uploaded as B; the first
divergence named with its cause, the nodes by error, and the graph coloured by error with that node marked."""

from __future__ import annotations

import hashlib
from pathlib import Path

from streamlit.testing.v1 import AppTest

from core.compare import CompareReport
from core.graph.colourings import FIRST_DIVERGENCE, error_colouring
from core.jobs import COMPARE, GRAPH
from core.store import Store
from tests.app.pages import open_page, texts, upload
from tests.graph_models import classic_cnn
from tests.reports import made_report


def _models() -> tuple[bytes, bytes]:
    model = classic_cnn((1, 1, 1, 1), width=4)
    for dim in model.graph.input[0].type.tensor_type.shape.dim[2:]:
        dim.dim_value = 32
    original = model.SerializeToString()
    next(n for n in model.graph.node if n.name == "/layer1/layer1.0/conv2/Relu").op_type = "Sigmoid"
    return original, model.SerializeToString()


def _compare(at: AppTest, level_b: str | None = "disable") -> CompareReport:
    """Press Compare, B at ``level_b`` (None: the level the page chose), and the report it made."""
    if level_b is not None:
        at.selectbox(key="compare_level_b").set_value(level_b)
    next(b for b in at.button if b.label == "Compare").click()
    at.run()
    assert not at.exception, at.exception
    report: CompareReport = at.session_state[COMPARE.name][1]
    return report


def _against_upload(at: AppTest, name: str, data: bytes) -> CompareReport:
    """The current model compared with ``data`` uploaded as B (at DISABLE_ALL)."""
    at.radio(key="compare_against").set_value("upload")
    at.file_uploader(key="compare_upload").set_value((name, data, "application/octet-stream"))
    return _compare(at)


def test_an_uploaded_copy_with_a_swapped_op_diverges_at_that_node_on_the_page_and_in_the_graph() -> None:
    original, swapped = _models()
    at = open_page("compare", model=("cnn.onnx", original), timeout=240)
    assert "Choose B and press Compare" in "".join(i.value for i in at.info).replace("*", "")
    report = _against_upload(at, "cnn_swapped.onnx", swapped)
    assert report.first_divergence is not None and report.first_divergence.node == "/layer1/layer1.0/conv2/Relu"
    said = "".join(e.value for e in at.error).replace("\\", "")
    assert "first divergence" in said and "/layer1/layer1.0/conv2/Relu" in said
    assert "a different op in the second model" in said
    assert "Sigmoid" in texts(at)
    nodes = next(d.value for d in at.dataframe if "module" in d.value.columns)
    assert nodes.iloc[0]["within"] == "no" and len(nodes) == len(report.ranked_nodes)  # the nodes that differ
    assert f"{report.exact_nodes} other node(s) agree exactly (zero error) and are not listed." in texts(at)
    view = at.session_state[GRAPH.name][1]
    colouring = error_colouring(view, {n.index: n.relative for n in report.nodes}, report.first_divergence.index)
    assert colouring.order[0] == FIRST_DIVERGENCE and list(colouring.keys.values()).count(FIRST_DIVERGENCE) == 1


def test_an_earlier_version_from_the_library_is_b_and_a_history_run_of_it_links_here(tmp_path: Path) -> None:
    """Two versions of cnn.onnx uploaded one after the other: the earlier one, kept in the library, is offered as
    B (and nothing else in the library is ONNX); a History run that measured it links to Compare with it chosen."""
    original, swapped = _models()
    at = open_page(model=("cnn.onnx", original), timeout=240)
    upload(at, "cnn.onnx", swapped)  # the new version is the current model now
    earlier = hashlib.sha256(original).hexdigest()
    store = Store(f"sqlite:///{tmp_path / 'data' / 'history.sqlite'}")
    run = made_report("r-earlier", model="cnn.onnx")
    run.model_id = earlier
    store.save(run)

    at.switch_page("app_pages/history.py").run()
    at.multiselect(key="history_compare").set_value(["r-earlier"]).run()
    assert not at.exception, at.exception
    (link,) = [p for p in at.get("page_link") if "version this run measured" in p.proto.label]
    assert link.proto.page.endswith("compare") and f"b={earlier}" in link.proto.query_string

    at.query_params["b"] = earlier  # what following the link does
    at.switch_page("app_pages/compare.py").run()
    assert not at.exception, at.exception
    assert at.radio(key="compare_against").value == "version"
    assert at.selectbox(key="compare_version").options[0].startswith("cnn · ")
    assert at.selectbox(key="compare_version").value == earlier
    report = _compare(at)
    assert report.b == f"cnn ({earlier[:8]})"
    assert report.first_divergence is not None and report.first_divergence.node == "/layer1/layer1.0/conv2/Relu"
    assert at.query_params["b"] == earlier  # the address keeps which B


def test_without_another_model_in_the_library_no_version_is_offered() -> None:
    page = open_page("compare", model=("cnn.onnx", _models()[0]), timeout=240)
    assert "version" not in page.radio(key="compare_against").options


def test_a_pytorch_model_run_eagerly_against_its_export_on_the_page() -> None:
    at = open_page("compare", timeout=240)  # the start sample, TinyCNN in PyTorch: exported in one click
    at.button(key="export_defaults").click().run()
    assert not at.exception, at.exception
    assert at.radio(key="compare_against").value == "eager"  # the first question after an export
    report = _compare(at, "disable")  # ALL fuses most of TinyCNN: fewer tensors to compare
    assert report.a_level == "PyTorch eager" and report.a.endswith("(PyTorch eager)")
    assert report.first_divergence is None and report.matched >= 6
    assert any("No node leaves the tolerance" in s.value for s in at.success)


def test_the_same_model_at_another_level_with_the_defaults_runs_b_at_all_and_a_variant_at_as_level() -> None:
    """B's level starts at A's, so a variant's differences are its own; the same model at the same level would
    be itself, so that choice runs B at ALL and says so."""
    original, _swapped = _models()
    at = open_page("compare", model=("cnn.onnx", original), timeout=240)
    assert at.selectbox(key="compare_level_b").value == at.selectbox(key="compare_level_a").value == "disable"
    at.radio(key="compare_against").set_value("level")
    report = _compare(at, level_b=None)
    assert (report.a_level, report.b_level) == ("DISABLE_ALL", "ALL"), (report.a_level, report.b_level)
    assert "B runs at ALL: at A's level it would be the same model." in [c.value for c in at.caption]


def test_a_model_that_shares_nothing_with_it_gets_a_warning_that_nothing_was_compared_never_a_green_verdict() -> None:
    from onnx import TensorProto, helper

    graph = helper.make_graph(  # the image's mean: none of the CNN's tensors, and an output of another shape
        [helper.make_node("ReduceMean", ["image"], ["unrelated"], name="unrelated", keepdims=1)], "unrelated",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, 32, 32])],
        [helper.make_tensor_value_info("unrelated", TensorProto.FLOAT, [1, 1, 1, 1])],
    )  # fmt: skip
    unrelated = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    at = open_page("compare", model=("cnn.onnx", _models()[0]), timeout=240)
    assert _against_upload(at, "unrelated.onnx", unrelated).proves_nothing
    warned = " ".join(w.value for w in at.warning)
    assert "Nothing was compared: the two models share no tensor" in warned
    assert not any("No node leaves the tolerance" in s.value for s in at.success)
