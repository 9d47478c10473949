"""The graph view at scale: a 30,000-node transformer-like model, from the ONNX file to the first frame.

Run: .venv/bin/python benchmarks/graph_view.py [--layers 1500] [--out /tmp/graph.html]
Times view_graph (the Python side), writes the HTML as `python -m core graph` does, opens it in Debian's
Chromium (headless, --disable-gpu: the canvas is drawn in software) and prints what the page measured with
performance.now(): data received -> first frame, and expanding groups. Targets (issue #14): first frame
within 2 s of the data reaching the browser, a group expanded in under 200 ms.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.cli.graph import BUNDLE
from core.graph import view_graph
from core.graph.page import graph_page
from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS
from tests.graph_models import transformer_like


def _frames(page: Any, zoom_in: int) -> list[float]:
    """Zoom in by ``zoom_in`` wheel steps from the whole graph, then pan and zoom with the mouse: 40 frames drawn,
    each frame's drawing time in ms (from performance.now() in the renderer)."""
    page.get_by_role("button", name="Fit").click()
    page.mouse.move(700, 450)
    for _ in range(zoom_in):
        page.mouse.wheel(0, -240)
        page.wait_for_timeout(20)
    page.evaluate("window.__graphTimings.frames = []")
    for step in range(20):
        page.mouse.wheel(0, -60 if step % 2 else 60)
        page.wait_for_timeout(20)
    page.mouse.down()
    for step in range(20):
        page.mouse.move(700 + 15 * step, 450 + 10 * step)
        page.wait_for_timeout(20)
    page.mouse.up()
    return list(page.evaluate("window.__graphTimings.frames"))


def _browser(html: Path) -> dict[str, object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        start = time.perf_counter()
        page.goto(html.as_uri())
        page.wait_for_selector("#graph[data-ready='true']", timeout=60_000)
        loaded = time.perf_counter() - start
        for path in ("encoder", "encoder/layer.700", "encoder/layer.700/attn"):
            box = page.evaluate("(n) => { const v = window.__graphView; v.select(null); return v.screenBox(n); }", path)
            if box is None or not (0 < box["y"] < 880 and 0 < box["x"] < 1380):  # off screen: open it by name
                page.evaluate("(n) => window.__graphView.expandGroup(n)", path)
            else:
                page.mouse.click(box["x"] + box["w"] / 2, box["y"] + box["h"] / 2)
            page.wait_for_timeout(100)
        page.evaluate("window.__graphView.expandAll()")
        timings: dict[str, object] = page.evaluate("window.__graphTimings")
        timings["pan_zoom"] = {
            "whole graph": _frames(page, zoom_in=0),  # every one of the 30,000 boxes on screen at once
            "readable": _frames(page, zoom_in=14),  # zoomed in until the labels show, then panned
        }
        timings["visible"] = page.get_attribute("#graph", "data-visible")
        timings["page_load_s"] = loaded
        browser.close()
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=1500, help="blocks of 20 nodes (1500: 30,003 nodes)")
    parser.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "graph_view_bench.html")
    args = parser.parse_args()
    model = transformer_like(args.layers)
    start = time.perf_counter()
    view = view_graph(model)
    python_s = time.perf_counter() - start
    start = time.perf_counter()
    args.out.write_text(graph_page(view, BUNDLE.read_text()), encoding="utf-8")
    page_s = time.perf_counter() - start
    notes = "; ".join(view.notes) or "shapes inferred"
    print(f"model           {view.node_count:,} nodes, {len(view.groups):,} groups ({notes})")
    print(f"view_graph      {python_s:.2f} s (2-core machine; includes ONNX shape inference)")
    print(f"HTML written    {page_s:.2f} s, {args.out.stat().st_size / 1e6:.1f} MB -> {args.out}")
    t = _browser(args.out)
    expands = ", ".join(f"{ms:.0f}" for ms in t["expand"])  # type: ignore[attr-defined]
    print(f"first frame     {t['firstFrameMs']:.0f} ms after the data reached the page (target 2000)")
    print(f"expand          {expands} ms (encoder, a layer, its attention; target 200 each)")
    print(f"all expanded    {t['expandAll']:.0f} ms to lay out and draw every node")
    for what, frames in t["pan_zoom"].items():  # type: ignore[attr-defined]
        ordered = sorted(frames)
        print(
            f"pan and zoom    {what}: a frame in {ordered[len(ordered) // 2]:.1f} ms median, "
            f"{ordered[-1]:.1f} ms at most ({len(ordered)} frames; 16.7 ms is 60 per second)"
        )
    print(f"page load       {t['page_load_s']:.2f} s from goto to data-ready (parsing the 3 MB page included)")
    print(f"visible items   {t['visible']} after the expansions; drawn with canvas 2D in software (--disable-gpu)")


if __name__ == "__main__":
    main()
