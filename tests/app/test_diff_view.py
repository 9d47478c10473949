"""The diff section (ui/diff_view.py) on a tiny page: what it says, B's graph coloured, and the names from the
models escaped wherever Markdown renders them."""

from __future__ import annotations

from pathlib import Path

import onnx
from onnx import helper
from streamlit.testing.v1 import AppTest

from core.diff import DiffRequest
from core.diff.differ import diff_models
from tests.unit.test_diff import small_net

HOSTILE = "<img src=x onerror=alert(1)> **bold** [link](http://evil.test)"


def _page(a_path: str, b_path: str) -> None:
    from core.model import ModelRecord
    from ui.diff_view import diff_section

    a = ModelRecord(id="a" * 64, name="<b>before</b>.onnx", format="onnx", size_bytes=1, path=a_path, node_count=5)
    b = ModelRecord(id="b" * 64, name="after **new**.onnx", format="onnx", size_bytes=1, path=b_path, node_count=6)
    diff_section(a, b, key="diff")


def test_the_diff_section_lists_the_changes_and_escapes_names_from_the_models(tmp_path: Path) -> None:
    a, b = small_net(), small_net()
    b.graph.node[1].op_type = "Sigmoid"
    b.graph.node[-1].output[0] = "y0"
    b.graph.node.append(helper.make_node("Identity", ["y0"], ["y"], name=HOSTILE))
    onnx.save(a, tmp_path / "a.onnx")
    onnx.save(b, tmp_path / "b.onnx")
    at = AppTest.from_function(_page, args=(str(tmp_path / "a.onnx"), str(tmp_path / "b.onnx")), default_timeout=120)
    at.run()
    assert not at.exception, at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert metrics == {"added": "1", "removed": "0", "changed": "1", "unchanged": "4"}
    shown = [e.value for e in [*at.markdown, *at.caption, *at.subheader]]
    assert any(r"\<b\>before\</b\>" in text for text in shown)  # the model's name, escaped
    assert not any("<b>" in text or "<img" in text for text in shown)
    tables = {str(frame.value.iloc[0, 0]): frame.value for frame in at.dataframe}
    assert HOSTILE in tables  # the added node, as plain text in a table that renders no Markdown
    assert "op: Relu → Sigmoid" in tables["relu"].iloc[0].tolist()


def test_bs_graph_is_coloured_by_what_changed_and_closed_groups_show_a_change(tmp_path: Path) -> None:
    from core.graph import view_graph
    from core.graph.colourings import colouring_json
    from ui.diff_view import diff_colouring

    b = small_net()
    b.graph.node[1].op_type = "Sigmoid"
    b.graph.node[-1].output[0] = "y0"
    b.graph.node.append(helper.make_node("Identity", ["y0"], ["y"], name="extra"))
    onnx.save(small_net(), tmp_path / "a.onnx")
    onnx.save(b, tmp_path / "b.onnx")
    report = diff_models(DiffRequest(path_a=str(tmp_path / "a.onnx"), path_b=str(tmp_path / "b.onnx")))
    shown = colouring_json(diff_colouring(view_graph(b), report))
    assert shown["keys"] == {"relu": "changed", "extra": "added"}
    assert shown["marked"] == ["changed", "added"]  # what a closed group holding one shows (src/colors.js)
