"""How long the pages take to show a large model's graph: a 30,000-node transformer-like model uploaded in
Chromium, then Decode and Partition until the graph view has drawn its first frame, and the server's memory.

Run: .venv/bin/python benchmarks/graph_pages.py [--layers 1500]
Starts the app (`python -m core serve`) on a free port with a fresh data folder and drives Debian's Chromium
with Playwright. Prints each step's wall time (upload, Decode, Partition) and the server's resident memory
after each; run it on an idle machine.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._server import running_app

CHROMIUM = os.environ.get("WORKBENCH_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip
IDLE = '[data-testid="stApp"][data-test-script-state="notRunning"]'
READY = ".graph-canvas[data-ready='true']"


def _rss_mb(pid: int) -> float:
    import psutil

    return psutil.Process(pid).memory_info().rss / 2**20


def walk(url: str, pid: int, model: Path) -> list[tuple[str, float, float]]:
    """(step, seconds, server MB) for the upload, Decode and Partition of ``model``."""
    from playwright.sync_api import sync_playwright

    steps = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
        page.goto(url)
        page.wait_for_selector(IDLE, timeout=120_000)
        began = time.monotonic()
        page.locator('[data-testid="stFileUploader"] input[type="file"]').first.set_input_files([str(model)])
        page.get_by_role("heading", name=model.stem).first.wait_for(timeout=120_000)  # its model card
        page.wait_for_timeout(300)
        page.wait_for_selector(IDLE, timeout=300_000)
        steps.append(("upload and model card", time.monotonic() - began, _rss_mb(pid)))
        for name in ("Decode", "Partition"):
            began = time.monotonic()
            page.get_by_role("link", name=name, exact=True).click()
            page.wait_for_selector(READY, timeout=300_000)
            steps.append((f"{name}: graph drawn", time.monotonic() - began, _rss_mb(pid)))
            page.wait_for_selector(IDLE, timeout=300_000)
            steps.append((f"{name}: page finished", time.monotonic() - began, _rss_mb(pid)))
        browser.close()
    return steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=1500, help="20 nodes each (1500: 30,003 nodes)")
    args = parser.parse_args()
    import onnx

    from tests.graph_models import transformer_like

    with tempfile.TemporaryDirectory() as tmp:
        model = Path(tmp) / f"transformer-{args.layers}.onnx"
        onnx.save(transformer_like(args.layers), model)
        print(f"{model.name}: {model.stat().st_size / 2**20:.1f} MB, {os.cpu_count()} cores")
        with running_app(Path(tmp) / "data", start_sample="") as (url, pid):
            for step, seconds, mb in walk(url, pid, model):
                print(f"{step:28s} {seconds:6.1f} s   server {mb:6.0f} MB")


if __name__ == "__main__":
    main()
