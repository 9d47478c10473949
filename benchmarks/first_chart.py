"""How long a newcomer waits: from opening the app to the first benchmark chart of the start sample (TinyCNN),
with the page's defaults, in Chromium; and how long Decode and Partition of that model take to answer.

Run: .venv/bin/python benchmarks/first_chart.py [--repeat 2] [--root OTHER_CHECKOUT]
Starts the app (`python -m core serve`) on a free port with a fresh data folder, drives Debian's Chromium with
Playwright and prints each step's wall time, on the page's own clock from the click (or the navigation)
to the end of the app's last run for it: the first page, Decode, Partition, the one-click export and the
benchmark with the defaults until its chart is drawn. Each figure is also given in units (benchmarks/_unit.py:
a fresh interpreter's import of onnx, onnxruntime and numpy, measured in the same run), beside its goal where it
has one; the first page and the Decode and Partition pages answering are judged against their floors by
benchmarks/floors.py.
``--root`` serves another checkout (the commit before a change, say) to compare both in one run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._page import ARGS, CHROMIUM, new_page, now, open_page, settled
from benchmarks._server import ROOT, running_app
from benchmarks._unit import machine, measure_unit, report, unit_samples


def one_walk(url: str) -> dict[str, float]:
    """Seconds for each step of one walk, in a new browser context (a new session)."""
    from playwright.sync_api import sync_playwright

    times: dict[str, float] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = new_page(browser)
        page.goto(url)  # the page's clock starts at its navigation
        page.get_by_text("256,074").wait_for(timeout=120_000)  # the start sample's card
        times["first page"] = settled(page, shown=now(page))
        open_page(page, "Benchmark")
        step = now(page)
        page.get_by_role("button", name="Export with the defaults and continue").click()
        page.get_by_role("button", name="Run the benchmark").wait_for(timeout=300_000)
        times["one-click export"] = settled(page) - step
        step = now(page)
        page.get_by_role("button", name="Run the benchmark").click()
        page.locator('[data-testid="stPlotlyChart"]').first.wait_for(timeout=600_000)
        chart = settled(page, shown=now(page))
        times["benchmark to its chart"] = chart - step
        times["open to first chart"] = chart
        for name in ("Decode", "Partition"):
            times[f"{name} answers"] = open_page(page, name)
        browser.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2, help="walks, each in a new session (default 2)")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout to serve (default this one)")
    args = parser.parse_args()
    before = unit_samples()
    print(f"{machine()}; serving {args.root}", flush=True)
    walks = []
    with tempfile.TemporaryDirectory() as tmp, running_app(Path(tmp), root=args.root) as (url, _pid):
        for n in range(args.repeat):
            walks.append(one_walk(url))
            print(f"walk {n + 1}: " + ", ".join(f"{k} {v:.1f} s" for k, v in walks[-1].items()), flush=True)
    unit = measure_unit(before, after := unit_samples())
    samples = f"before {statistics.median(before):.2f} s, after {statistics.median(after):.2f} s"
    print(f"\nunit (import onnx, onnxruntime, numpy; median of 6): {unit:.2f} s ({samples})")
    print("first walk (a server just started; its figures are the goals'):")
    print("\n".join(report(walks[0], unit)))
    if len(walks) > 1:
        print(f"median of {len(walks)} walks:")
        print("\n".join(report({key: statistics.median(w[key] for w in walks) for key in walks[0]}, unit)))


if __name__ == "__main__":
    main()
