"""In Chromium, the graph HTML that `python -m core graph` writes, opened from file:// with no network: it is
drawn, its groups open on a click, a search jumps to a node, and the colour switch recolours it."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest

from tests.cli import cli
from tests.e2e.conftest import ARTIFACTS, offline_page
from tests.graph_models import classic_cnn, transformer_like

pytestmark = [pytest.mark.e2e]


def _shot(page, name: str) -> None:  # type: ignore[no-untyped-def]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"))


def _click(page, name_or_path: str) -> None:  # type: ignore[no-untyped-def]
    box = page.evaluate("(n) => window.__graphView.screenBox(n)", name_or_path)
    assert box, f"{name_or_path} is not drawn"
    page.mouse.click(box["x"] + box["w"] / 2, box["y"] + box["h"] / 2)


def test_graph_html_opens_offline_expands_groups_and_finds_a_node(browser, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    model = tmp_path / "scoped.onnx"
    onnx.save(transformer_like(15), model)  # 303 nodes: above 300, so it opens collapsed
    html = tmp_path / "graph.html"
    result = cli("graph", str(model), "-o", str(html))
    assert result.returncode == 0, result.stderr
    assert "303 nodes" in result.stdout

    context, page, errors = offline_page(browser)
    page.goto(html.as_uri())
    root = page.locator("#graph[data-ready='true']")
    root.wait_for(timeout=15_000)
    assert root.get_attribute("data-nodes") == "303"
    assert root.get_attribute("data-visible") == "5"  # input, Gather, encoder, head, output
    _shot(page, "70-graph-collapsed")

    _click(page, "encoder")
    page.locator("#graph[data-expanded='1']").wait_for()
    assert int(root.get_attribute("data-visible") or 0) == 5 - 1 + 15  # the encoder opens into its 15 layers
    _click(page, "encoder/layer.1")
    page.locator("#graph[data-expanded='2']").wait_for()
    _shot(page, "70-graph-expanded")

    name = "/encoder/layer.7/attn/Softmax"
    page.get_by_placeholder("Find a node by name or op").fill("layer.7/attn/soft")
    page.locator(".gv-results button", has_text=name).click()
    page.locator(f"#graph[data-selected='{name}']").wait_for()
    details = page.locator(".gv-details")
    assert "Softmax" in details.inner_text() and "encoder › layer.7 › attn" in details.inner_text()
    assert "float32 batch×16×16" in details.inner_text()  # its input's shape, from shape inference
    _shot(page, "70-graph-search")

    page.get_by_label("Colour by").select_option("dtype")
    legend = page.locator(".gv-legend").inner_text()
    assert "fp32" in legend and "fp16" in legend
    _shot(page, "70-graph-dtype")
    timings = page.evaluate("window.__graphTimings")
    assert timings["firstFrameMs"] < 2000 and max(timings["expand"]) < 200
    assert not errors
    context.close()


# Names drawn from the HTML tokenizer's script-data states: '<!--' escapes, '<script' then double-escapes (after
# which '</script>' no longer ends the element, so the data script swallowed the renderer's), '</script' ends
# it in any case and with a space or a slash after it, '-->' and ']]>' end comments and CDATA, U+2028/2029 end
# lines in older JavaScript; entities are not decoded in a script and must arrive as written.
TOKENIZER_NAMES = [
    "<!--<script>",
    "<!--",
    "<script",
    "</script",
    "</SCRIPT ",
    "</script/",
    "-->",
    "]]>",
    "&lt;/script&gt;",
    "line\u2028separator\u2029",
]


def _named_model(name: str) -> onnx.ModelProto:
    """x → Relu → Neg → y, the Relu and the tensor it makes named ``name``, and the graph too."""
    from onnx import TensorProto, helper

    nodes = [helper.make_node("Relu", ["x"], [name], name=name), helper.make_node("Neg", [name], ["y"], name="neg")]
    graph = helper.make_graph(
        nodes,
        name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_names_from_the_html_tokenizers_states_leave_the_page_drawn(browser, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A node named '<!--<script>' once blanked the page: the data script swallowed the renderer's. One page per
    name (a later '-->' would end the escape and hide the harm): each draws, and its name arrives as written.
    The first through the command, as it was found; the rest through the same page writer, without a worker."""
    from core.cli.graph import BUNDLE
    from core.graph import view_graph
    from core.graph.page import graph_page

    pages = []
    for index, name in enumerate(TOKENIZER_NAMES):
        model, html = tmp_path / f"{index}.onnx", tmp_path / f"tokenizer-{index}.html"
        onnx.save(_named_model(name), model)
        if index == 0:
            assert cli("graph", str(model), "-o", str(html)).returncode == 0
        else:
            html.write_text(graph_page(view_graph(onnx.load(model), name=model.stem), BUNDLE.read_text()))
        pages.append((name, html, f"{model.stem} · graph"))

    context, page, errors = offline_page(browser)
    page.on("dialog", lambda dialog: errors.append(f"a dialog: {dialog.message}"))
    try:
        for name, html, title in pages:
            page.goto(html.as_uri())
            root = page.locator("#graph[data-ready='true']")
            root.wait_for(timeout=15_000)
            assert root.get_attribute("data-nodes") == "2", name  # the named Relu and the Neg after it
            assert page.evaluate("(n) => window.__graphView.screenBox(n)", name), f"{name!r} is not drawn"
            assert page.title() == title and not errors, (name, errors)
    finally:
        context.close()


def _model(kind: str, folder: Path) -> Path:
    if kind == "detector":
        from tests.real_models import real_model

        return real_model("ocr_det")  # PaddleOCR's text detector as rapidocr ships it: about 600 nodes
    if kind == "cnn-1700":
        path = folder / "cnn-1700.onnx"
        onnx.save(classic_cnn(), path)  # 1,715 nodes: 170 bottlenecks with their BatchNorms
        return path
    path = folder / "transformer-30k.onnx"
    onnx.save(transformer_like(1500), path)  # 30,003 nodes in named blocks, as today's exports have
    return path


@pytest.mark.parametrize("kind", ["detector", "cnn-1700", "transformer-30k"])
def test_a_real_detector_a_classic_cnn_and_a_30000_node_model_are_readable_and_searchable(
    browser, tmp_path: Path, kind: str
) -> None:  # type: ignore[no-untyped-def]
    from core.graph import view_graph

    path = _model(kind, tmp_path)
    view = view_graph(onnx.load(path, load_external_data=False))
    ops = [n for n in view.nodes if n.op not in ("Input", "Output")]
    target = ops[len(ops) * 2 // 3]  # a node deep in the graph
    html = tmp_path / "graph.html"
    assert cli("graph", str(path), "-o", str(html)).returncode == 0

    context = browser.new_context(viewport={"width": 1400, "height": 900}, offline=True)
    page = context.new_page()
    try:
        page.goto(html.as_uri())
        root = page.locator("#graph[data-ready='true']")
        root.wait_for(timeout=30_000)
        assert root.get_attribute("data-nodes") == str(view.node_count)
        # it opens on its input, in the middle (the detector's opened against the right edge, under the legend)
        first = next(n for n in view.nodes if n.op == "Input")
        box, frame = page.evaluate("(n) => window.__graphView.screenBox(n)", first.name), root.bounding_box()
        assert box and frame and abs(box["x"] + box["w"] / 2 - frame["width"] / 2) < frame["width"] * 0.1, (box, frame)
        page.get_by_placeholder("Find a node by name or op").fill(target.name)
        page.locator(".gv-results button", has_text=target.name).first.click()
        page.locator("#graph[data-selected]").wait_for()
        assert root.get_attribute("data-selected") == target.name
        details = page.locator(".gv-details").inner_text()
        assert target.op in details and target.name in details
        found = page.evaluate("(n) => window.__graphView.screenBox(n)", target.name)
        assert found["h"] >= 36, found  # drawn at least life-size: its labels are readable
        # its neighbours are drawn around it, labelled: the node that feeds it is on screen
        feeder = next((view.nodes[e.source] for e in view.edges if e.target == target.id), None)
        if feeder is not None and feeder.op not in ("Input",):
            box = page.evaluate("(n) => window.__graphView.screenBox(n)", feeder.name)
            assert box and box["x"] + box["w"] > 0 and box["x"] < 1400 and box["y"] + box["h"] > 0 and box["y"] < 900
        _shot(page, f"72-graph-{kind}-found")
    finally:
        context.close()
