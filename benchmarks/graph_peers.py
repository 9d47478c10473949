"""File → graph drawn: ours against Netron and Model Explorer on the same ONNX file, for 3,000, 30,000 and 100,000
nodes (transformer-like models, tests/graph_models.py, as benchmarks/graph_pages.py builds them).

Run: nice -n 5 .venv/bin/python benchmarks/graph_peers.py [--sizes 3000,30000] [--rounds 3] [--timeout 300]
Needs `make bench-extras` (netron, ai-edge-model-explorer and model-explorer-onnx, pinned in
requirements-bench.txt) and Debian's Chromium (headless, the flags of benchmarks/_page.py). Each side starts from the
file in a fresh process and ends when its graph is drawn in a fresh browser context (the browser itself is started
once, before any timing):

- ours: `python -m core graph FILE -o FILE.html` (the model read in the sandboxed worker, the view's data and the
  renderer written into one HTML file), then that file opened until the view has drawn its first frame on its
  canvas (`#graph[data-ready]`, set with ``window.__graphTimings.firstFrame``: its nodes are canvas boxes, not DOM
  elements);
- Netron 9.3.3: `netron.start(FILE, browse=False)` in a fresh interpreter, its address opened until the layout is
  done and its SVG nodes are present (`g.node` in the page, the body out of its loading screen; its cookie notice
  is answered beforehand with its own cookie, so it opens the file at once);
- Model Explorer 0.1.34 with the `model_explorer_onnx` adapter: `python -m model_explorer FILE --extensions
  model_explorer_onnx --no_open_in_browser`, its address opened until its WebGL renderer is present and no spinner
  is left.

The three sides run in turn within each round, the order rotated each round; each prints its median, and the ratio
of ours to the faster peer's median (goal ≤ 0.5× at every size; issue #51). A side that draws nothing within
--timeout seconds counts as the timeout, so a ratio against it is an upper bound ("<").
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._page import ARGS, CHROMIUM
from benchmarks._server import ROOT
from benchmarks._unit import machine
from core.runtime.processes import stop

GOAL = 0.5  # ours at most half the faster peer's time
# what "drawn" is on each side, as CSS selectors (Netron forbids eval in its page, so no script checks it)
NETRON_DRAWN = "body.default g.node"  # out of the loading screen, the layout done, its SVG nodes there
EXPLORER_DRAWN = "body:not(:has(mat-spinner)) webgl-renderer canvas"  # the renderer there, no spinner left
OURS_DRAWN = "#graph[data-ready='true']"  # set when the view has drawn its first frame


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _address(process: subprocess.Popen[str], pattern: str, deadline: float) -> str:
    """The first match of ``pattern`` in what the peer's server prints (it prints its address once it serves)."""
    assert process.stdout is not None
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            raise RuntimeError(f"the server ended before it served (exit {process.wait()})")
        found = re.search(pattern, line)
        if found:
            return found.group(0)
    raise TimeoutError


def _drawn(browser: Any, url: str, selector: str, deadline: float, cookies: tuple[str, ...] = ()) -> None:
    """Open ``url`` in a fresh context (with ``cookies`` set for it) and wait until ``selector`` is in the page."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.add_cookies([{"name": name, "value": "1", "url": url} for name in cookies])
    try:
        page = context.new_page()
        page.goto(url, timeout=max(1.0, deadline - time.monotonic()) * 1000)
        page.wait_for_selector(selector, state="attached", timeout=max(1.0, deadline - time.monotonic()) * 1000)
    finally:
        context.close()


def ours(browser: Any, model: Path, deadline: float) -> None:
    html = model.with_suffix(".html")
    env = dict(os.environ, WORKBENCH_DATA_DIR=str(model.parent / "data"))
    command = [sys.executable, "-m", "core", "graph", str(model), "-o", str(html)]
    subprocess.run(
        command, cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL, timeout=deadline - time.monotonic()
    )
    _drawn(browser, html.as_uri(), OURS_DRAWN, deadline)


def netron(browser: Any, model: Path, deadline: float) -> None:
    port = _free_port()
    script = (
        "import netron, sys; netron.start(sys.argv[1], ('127.0.0.1', int(sys.argv[2])), browse=False); netron.wait()"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", script, str(model), str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        url = _address(process, r"http://\S+", deadline)
        _drawn(browser, url, NETRON_DRAWN, deadline, cookies=("consent",))  # its cookie notice answered before
    finally:
        stop(process)


def model_explorer(browser: Any, model: Path, deadline: float) -> None:
    port = _free_port()
    command = [sys.executable, "-m", "model_explorer", str(model), "--extensions=model_explorer_onnx",
               "--no_open_in_browser", "--port", str(port), "--host", "127.0.0.1"]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        url = _address(process, rf"http://127\.0\.0\.1:{port}/\S*", deadline)
        _drawn(browser, url, EXPLORER_DRAWN, deadline)
    finally:
        stop(process)


SIDES: dict[str, Callable[[Any, Path, float], None]] = {
    "ours": ours,
    "Netron 9.3.3": netron,
    "Model Explorer 0.1.34": model_explorer,
}


def timed(side: Callable[[Any, Path, float], None], browser: Any, model: Path, timeout: float) -> float:
    """Seconds from the side's start on ``model`` to its graph drawn; ``timeout`` when it did not draw by then."""
    began = time.monotonic()
    try:
        side(browser, model, began + timeout)
    except Exception as exc:  # a peer that fails or times out counts as the timeout, and says why
        print(f"    ({side.__name__}: {type(exc).__name__}: {str(exc)[:160]})", flush=True)
        return timeout
    return time.monotonic() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="3000,30000,100000", help="nodes, about (20 per layer)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per size, each side once per round")
    parser.add_argument("--timeout", type=float, default=300, help="seconds a side may take before it counts as that")
    args = parser.parse_args()
    import onnx
    from playwright.sync_api import sync_playwright

    from tests.graph_models import NODES_PER_LAYER, transformer_like

    print(f"{machine()}; load average {os.getloadavg()[0]:.1f}; {args.rounds} rounds, in turn, order rotated")
    summary = []
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        for size in (int(s) for s in args.sizes.split(",")):
            layers = max(1, size // NODES_PER_LAYER)
            model = Path(tmp) / f"transformer-{layers}.onnx"
            onnx.save(transformer_like(layers), model)
            print(f"\n{len(onnx.load(model).graph.node):,} nodes, {model.stat().st_size / 2**20:.1f} MB", flush=True)
            times: dict[str, list[float]] = {name: [] for name in SIDES}
            names = list(SIDES)
            for round_ in range(args.rounds):
                order = names[round_ % len(names) :] + names[: round_ % len(names)]
                for name in order:
                    seconds = timed(SIDES[name], browser, model, args.timeout)
                    times[name].append(seconds)
                    print(f"  round {round_ + 1} {name:<22} {seconds:7.1f} s", flush=True)
            medians = {name: statistics.median(t) for name, t in times.items()}
            peer = min((n for n in medians if n != "ours"), key=lambda n: medians[n])
            ratio = medians["ours"] / medians[peer]
            bound = "<" if medians[peer] >= args.timeout else ""
            met = "met" if ratio <= GOAL else "NOT met"
            line = (
                f"{size:>7,} nodes: ours {medians['ours']:.1f} s, "
                + ", ".join(
                    f"{n} {'>' if m >= args.timeout else ''}{m:.1f} s" for n, m in medians.items() if n != "ours"
                )
                + f"; against {peer}: {bound}{ratio:.2f}× (goal ≤ {GOAL}×: {met})"
            )
            summary.append(line)
            print(line, flush=True)
        browser.close()
    print("\nmedians:\n" + "\n".join(summary))


if __name__ == "__main__":
    main()
