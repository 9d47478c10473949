"""How long the pages take to show a large model's graph: a 30,000-node transformer-like model uploaded in
Chromium, then Decode and Partition until the graph view has drawn its first frame and until the page's last
run ended (on the page's own clock: benchmarks/_page.py), and the server's memory;
then the command line's `partition --levels` of the same model.

Run: .venv/bin/python benchmarks/graph_pages.py [--layers 1500] [--root OTHER_CHECKOUT] [--no-cli]
Starts the app (`python -m core serve`) on a free port with a fresh data folder and drives Debian's Chromium
with Playwright. Prints each step's wall time (upload, Decode, Partition) and the server's resident memory
after each, then each figure in units (benchmarks/_unit.py: a fresh interpreter's import of onnx, onnxruntime
and numpy, measured in the same run) beside its goal where it has one (the Partition page and the command's
levels are judged against their floor by benchmarks/floors.py). ``--root`` runs another checkout (the commit
before a change, say) to compare both in one run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._page import ARGS, CHROMIUM, IDLE, graph_drawn, new_page, now, settled
from benchmarks._server import ROOT, running_app
from benchmarks._unit import machine, measure_unit, report, unit_samples


def _rss_mb(pid: int) -> float:
    import psutil

    return psutil.Process(pid).memory_info().rss / 2**20


def walk(url: str, pid: int, model: Path) -> list[tuple[str, float, float]]:
    """(step, seconds, server MB) for the upload, Decode and Partition of ``model``."""
    from playwright.sync_api import sync_playwright

    steps = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = new_page(browser)
        page.goto(url)
        page.wait_for_selector(IDLE, timeout=120_000)
        began = now(page)
        page.locator('[data-testid="stFileUploader"] input[type="file"]').first.set_input_files([str(model)])
        page.get_by_role("heading", name=model.stem).first.wait_for(timeout=120_000)  # its model card
        steps.append(("upload and model card", settled(page, shown=now(page)) - began, _rss_mb(pid)))
        for name in ("Decode", "Partition"):
            began = now(page)
            page.get_by_role("link", name=name, exact=True).click()
            page.get_by_role("heading", name=name, exact=True).wait_for(timeout=120_000)
            drawn = graph_drawn(page, since=began)  # this page's graph view, not the last page's still shown
            steps.append((f"{name}: graph drawn", drawn - began, _rss_mb(pid)))
            steps.append((f"{name}: page finished", settled(page, shown=drawn) - began, _rss_mb(pid)))
        browser.close()
    return steps


def cli_levels(root: Path, model: Path, data: Path) -> float:
    """Seconds `python -m core partition MODEL --levels` takes, from the checkout at ``root``."""
    env = dict(os.environ, WORKBENCH_DATA_DIR=str(data))
    began = time.monotonic()
    command = [sys.executable, "-m", "core", "partition", str(model), "--levels"]
    subprocess.run(command, cwd=root, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.monotonic() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=1500, help="20 nodes each (1500: 30,003 nodes)")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout to run (default this one)")
    parser.add_argument("--no-cli", action="store_true", help="leave out the command line's partition --levels")
    args = parser.parse_args()
    import onnx

    from tests.graph_models import transformer_like

    before = unit_samples()
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        model = Path(tmp) / f"transformer-{args.layers}.onnx"
        onnx.save(transformer_like(args.layers), model)
        print(f"{model.name}: {model.stat().st_size / 2**20:.1f} MB; {machine()}; serving {args.root}")
        with running_app(Path(tmp) / "data", root=args.root, start_sample="") as (url, pid):
            for step, seconds, mb in walk(url, pid, model):
                print(f"{step:28s} {seconds:6.1f} s   server {mb:6.0f} MB", flush=True)
                figures[step] = seconds
        if not args.no_cli:
            figures["partition --levels (CLI)"] = cli_levels(args.root, model, Path(tmp) / "cli-data")
    unit = measure_unit(before, after := unit_samples())
    samples = f"before {statistics.median(before):.2f} s, after {statistics.median(after):.2f} s"
    print(f"\nunit (import onnx, onnxruntime, numpy; median of 6): {unit:.2f} s ({samples}); in units:")
    print("\n".join(report(figures, unit)))


if __name__ == "__main__":
    main()
