"""In Chromium: pick the transformer sample, export it from the Partition page in one click, and see its graph
coloured by provider, with the simulated NNAPI split and the optimization levels."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import shot, wait_idle

pytestmark = pytest.mark.e2e


def test_transformer_partition_coloured_by_provider(page) -> None:  # type: ignore[no-untyped-def]
    page.get_by_role("tab", name="Pick a sample").click()
    page.locator('[data-testid="stSelectbox"]').first.click()
    page.get_by_role("option", name="Tiny Transformer encoder").click()
    page.get_by_role("button", name="Use this sample").click()
    page.get_by_text("66,944").wait_for(timeout=60_000)
    wait_idle(page)

    page.get_by_role("link", name="Partition", exact=True).click()
    page.get_by_role("button", name="Export with the defaults and continue").click()
    page.get_by_text("103 nodes in the main graph: 103 on CPU").wait_for(timeout=120_000)
    wait_idle(page, timeout=120_000)
    shot(page, "40-partition-cpu")

    page.locator('[data-testid="stRadio"]').get_by_text("NNAPI (simulated)").click()
    page.get_by_text(
        "103 nodes in the main graph: 95 on NNAPI in 6 partitions, 8 fall back to CPU (simulated)"
    ).wait_for(timeout=30_000)
    wait_idle(page)
    graph = page.locator(".graph-canvas[data-ready='true']")
    graph.wait_for(timeout=60_000)
    legend = page.locator(".gv-legend").inner_text()
    assert "execution provider" in legend and "NNAPI" in legend and "CPU" in legend  # coloured by provider
    switch = page.get_by_label("Colour by")
    options = switch.locator("option").all_inner_texts()
    assert "Colour: what EXTENDED did" in options and "Colour: what LAYOUT did" in options
    switch.select_option("extended")  # what the optimizer fused at EXTENDED, marked in the graph
    legend = page.locator(".gv-legend").inner_text()
    assert "fused" in legend and "kept as it is" in legend
    shot(page, "42-partition-fused-at-extended")
    switch.select_option("provider")
    assert page.get_by_text("LayerNormalization").first.is_visible()
    page.get_by_text("EXTENDED (95 nodes)").first.wait_for(timeout=60_000)
    assert page.get_by_text("SkipLayerNormalization").first.is_visible()
    shot(page, "41-partition-nnapi-simulated")
