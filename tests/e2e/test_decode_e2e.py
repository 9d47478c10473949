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


def test_a_5000_node_model_is_drawn_whole_and_found_by_name(page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from tests import builders

    path = builders.write(builders.chain_model(5000), tmp_path / "deep_chain.onnx")
    upload(page, path)
    page.get_by_role("link", name="Decode", exact=True).click()
    graph = page.locator(".graph-canvas[data-ready='true']")
    graph.wait_for(timeout=90_000)
    assert graph.get_attribute("data-nodes") == "5000"
    wait_idle(page)
    _find(page, "relu_1234")
    page.get_by_text("relu_1234").first.wait_for(timeout=30_000)
    shot(page, "22-decode-5000-nodes")


def test_a_1700_node_classic_cnn_is_found_read_and_shown_with_its_neighbours(page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import onnx

    from tests.graph_models import classic_cnn

    path = tmp_path / "cnn-1700.onnx"
    onnx.save(classic_cnn(), path)  # 1,715 nodes: 170 bottlenecks with their BatchNorms, in /layerS/layerS.B scopes
    upload(page, path)
    page.get_by_role("link", name="Decode", exact=True).click()
    graph = page.locator(".graph-canvas[data-ready='true']")
    graph.wait_for(timeout=90_000)
    assert graph.get_attribute("data-nodes") == "1715"
    wait_idle(page)
    target = "/layer3/layer3.86/conv2/Conv"
    _find(page, "layer3.86/conv2/Conv")
    card = page.locator('[data-testid="stMarkdownContainer"]', has_text="in layer3 › layer3.86 › conv2").first
    card.wait_for(timeout=30_000)
    assert "node=" in page.url and page.locator("[data-selected]").get_attribute("data-selected") == target
    size = graph.bounding_box()
    for name in (target, "/layer3/layer3.86/conv1/Relu", "/layer3/layer3.86/conv2/BatchNormalization"):
        box = page.evaluate("(n) => window.__graphView.screenBox(n)", name)  # the node and its neighbours
        assert box and 0 <= box["x"] < size["width"] and 0 <= box["y"] < size["height"], (name, box)
        assert box["h"] >= 36  # life-size at least: its labels are readable
    page.locator('[data-testid="stTable"]', has_text="% zeros").first.wait_for()  # its weights' statistics
    # the page ran again for the selection, and the graph stayed as it was: not sent or laid out again
    assert page.evaluate("() => window.__graphTimings.mounts") == 1
    shot(page, "23-decode-cnn-1700-found")
