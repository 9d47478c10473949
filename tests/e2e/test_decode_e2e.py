"""In Chromium: decode TinyCNN, read the annotated header, click a node in the graph and see its attributes."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from core.model import zoo
from tests.e2e.conftest import shot, upload, wait_idle

pytestmark = pytest.mark.e2e


def test_decode_tinycnn_header_and_click_a_conv_node(page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "tinycnn.onnx"
    torch.onnx.export(
        zoo.build_model("tinycnn"),
        tuple(zoo.example_inputs("tinycnn").values()),
        str(path),
        dynamo=False,
        opset_version=17,
        input_names=["input"],
        dynamic_axes={"input": {0: "batch"}},
    )
    upload(page, path)
    page.get_by_role("link", name="Decode", exact=True).click()
    page.get_by_role("heading", name="1. The first bytes").wait_for(timeout=60_000)
    wait_idle(page)
    header = page.locator('[data-testid="stTable"]').first
    assert "ir_version" in header.inner_text() and "08 08" in header.inner_text()
    shot(page, "20-decode-top")

    graph = page.locator(".graph-canvas[data-ready='true']")
    graph.wait_for(timeout=60_000)
    assert graph.get_attribute("data-nodes") == "8"  # Conv ×2, Relu ×2, MaxPool ×2, Flatten, Gemm
    _find(page, "Conv")
    page.get_by_text("kernel_shape").first.wait_for(timeout=30_000)  # the node's attributes, in full
    wait_idle(page)
    card = page.locator('[data-testid="stTable"]', has_text="% zeros").first  # the weights' statistics
    assert "min " in card.inner_text() and "std " in card.inner_text()
    assert "node=" in page.url  # its link opens the page on this node
    shot(page, "21-decode-node-selected")
    _find(page, "Gemm")  # another node shows at once
    page.get_by_text("transB").first.wait_for(timeout=30_000)
    assert "Gemm" in page.url and "Conv" not in page.url


def _find(page, text: str) -> None:  # type: ignore[no-untyped-def]
    """Find a node with the graph view's search box and jump to the first match."""
    page.get_by_placeholder("Find a node by name or op").fill(text)
    page.locator(".gv-results button").first.click()
    wait_idle(page)


def _wild_model(kind: str, folder: Path) -> Path:
    import onnx

    from tests.graph_models import transformer_like
    from tests.real_models import real_model

    if kind == "detector":
        return real_model("ocr_det")  # PaddleOCR's text detector: 672 nodes, its weights in Constant nodes
    path = folder / f"{kind}.onnx"
    onnx.save(transformer_like(1500), path)
    return path


@pytest.mark.parametrize("kind", ["detector", "transformer-30k"])  # the 1,715-node CNN: test_graph_html_e2e
def test_a_deep_node_of_a_big_model_is_found_read_and_shown_with_its_neighbours(
    page, tmp_path: Path, kind: str
) -> None:  # type: ignore[no-untyped-def]
    """A real detector and a 30,003-node transformer-like model: a node deep in each is found by name, drawn
    life-size with the nodes around it."""
    import onnx

    from core.graph import view_graph

    path = _wild_model(kind, tmp_path)
    view = view_graph(onnx.load(path, load_external_data=False))
    ops = [n for n in view.nodes if n.op not in ("Input", "Output")]
    target = ops[len(ops) * 2 // 3]  # deep in the graph
    neighbours = [view.nodes[e.source].name for e in view.edges if e.target == target.id]
    neighbours += [view.nodes[e.target].name for e in view.edges if e.source == target.id]
    upload(page, path)
    page.get_by_role("link", name="Decode", exact=True).click()
    graph = page.locator(".graph-canvas[data-ready='true']")
    graph.wait_for(timeout=120_000)
    assert graph.get_attribute("data-nodes") == str(view.node_count)
    wait_idle(page)
    _find(page, target.name)
    page.locator('[data-testid="stMarkdownContainer"]', has_text=target.name).first.wait_for(timeout=30_000)
    assert (
        "node=" in page.url
        and page.locator(".graph-canvas[data-selected]").get_attribute("data-selected") == target.name
    )
    size = graph.bounding_box()
    for name in [target.name, *neighbours[:3]]:
        box = page.evaluate("(n) => window.__graphView.screenBox(n)", name)  # the node and those around it
        assert box and box["x"] + box["w"] >= 0 and box["x"] < size["width"], (name, box)
        assert box["y"] + box["h"] >= 0 and box["y"] < size["height"], (name, box)
    box = page.evaluate("(n) => window.__graphView.screenBox(n)", target.name)
    assert box["h"] >= 36  # life-size at least: its labels are readable
    if target.folded:
        page.locator('[data-testid="stTable"]', has_text="% zeros").first.wait_for()  # its weights' statistics
    # the page ran again for the selection, and the graph stayed as it was: not sent or laid out again
    assert page.evaluate("() => window.__graphTimings.mounts") == 1
    shot(page, f"23-decode-{kind}-found")
