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

    points = page.locator('[data-testid="stPlotlyChart"]').first.locator(".scatterlayer .trace .points path")
    points.first.wait_for(timeout=30_000)
    assert points.count() == 8 + 2  # eight nodes, one input, one output
    points.nth(1).click(force=True)  # the first trace after the input diamond holds the Conv nodes
    page.get_by_text("kernel_shape").first.wait_for(timeout=30_000)
    wait_idle(page)
    details = page.get_by_text("Conv from ai.onnx").first
    assert details.is_visible()
    shot(page, "21-decode-node-clicked")
    # one more click on another node shows that node at once
    # points by trace: input, Conv ×2, Relu ×2, MaxPool ×2, Flatten, Gemm, output (then the selection ring)
    points.nth(8).click(force=True)
    page.get_by_text("Gemm from ai.onnx").first.wait_for(timeout=30_000)
    assert page.get_by_text("Conv from ai.onnx").count() == 0


def test_a_5000_node_model_is_drawn_a_window_at_a_time(page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from tests import builders

    path = builders.write(builders.chain_model(5000), tmp_path / "deep_chain.onnx")
    upload(page, path)
    page.get_by_role("link", name="Decode", exact=True).click()
    page.get_by_text("Showing layers 0–").wait_for(timeout=90_000)
    wait_idle(page)
    points = page.locator('[data-testid="stPlotlyChart"]').first.locator(".scatterlayer .trace .points path")
    points.first.wait_for(timeout=30_000)
    assert 0 < points.count() <= 450
    page.get_by_text("the neighbourhood of one node").click()
    page.get_by_text("nodes within 3 edges").wait_for(timeout=60_000)
    shot(page, "22-decode-5000-nodes")
