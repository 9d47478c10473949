"""In Chromium: a small ResNet-like model against an uploaded copy with one Relu swapped for a Sigmoid; the first
divergence named with its cause, the nodes by error and the graph coloured by error, and the structural diff
below: that one node changed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.builders import write
from tests.e2e.conftest import choose, go_to, shot, upload, wait_idle
from tests.graph_models import classic_cnn

pytestmark = pytest.mark.e2e

SWAPPED = "/layer1/layer1.0/conv2/Relu"


def test_an_uploaded_copy_with_a_swapped_op_diverges_at_that_node(page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    model = classic_cnn((1, 1, 1, 1), width=4)
    for dim in model.graph.input[0].type.tensor_type.shape.dim[2:]:
        dim.dim_value = 32
    original = write(model, tmp_path / "cnn.onnx")
    next(n for n in model.graph.node if n.name == SWAPPED).op_type = "Sigmoid"
    swapped = write(model, tmp_path / "cnn_swapped.onnx")
    upload(page, original)
    page.get_by_text("cnn.onnx").first.wait_for(timeout=60_000)
    go_to(page, "Compare")
    page.get_by_text("Another ONNX file (another version, another export)").click()
    page.locator('[data-testid="stForm"] input[type="file"]').set_input_files(str(swapped))
    page.wait_for_timeout(500)
    choose(page, "B's optimization level", "DISABLE_ALL")
    page.get_by_role("button", name="Compare", exact=True).click()
    page.get_by_text("The first divergence").first.wait_for(timeout=120_000)
    wait_idle(page)
    said = page.locator('[data-testid="stAlertContentError"]').first.inner_text()
    assert SWAPPED in said and "a different op in the second model" in said
    page.locator(".graph-canvas[data-ready='true']").first.wait_for(timeout=30_000)
    assert page.get_by_text("the first divergence", exact=True).first.is_visible()  # the graph's legend
    shot(page, "85-compare-swapped-op")
    # below it, what changed in the graph: the one node whose op was swapped, nothing added or removed
    page.get_by_role("heading", name="What changed in the graph").wait_for(timeout=120_000)
    wait_idle(page)
    page.get_by_role("heading", name="What changed in the graph").scroll_into_view_if_needed()
    shot(page, "86-compare-structural-diff")
    changed = page.locator('[data-testid="stTable"], [data-testid="stDataFrame"]').filter(has_text="Sigmoid")
    assert changed.count() >= 1
