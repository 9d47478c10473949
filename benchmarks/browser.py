"""The model in the browser against native ONNX Runtime, both on one thread, in one run: the sample TinyCNN and a
real packaged model (tests/real_models.py), each timed natively (core.bench, ORT ALL, 1 thread) and in Debian's
Chromium (headless, --disable-gpu, so WASM) from the page `python -m core browser-bench` writes.

Run: .venv/bin/python benchmarks/browser.py [--models tinycnn,ocr_rec] [--iters 200] [--warmup 20]
Prints, per model: load (session creation), first call and median (95 % CI) natively and in the browser, and the
median ratio browser/native. Goal (issue #30): WASM within 3× of native on one thread. Statistics of both are
core.runtime.stats's (the browser's from its raw call times, core.browser.browser_report).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.bench import BenchRequest, run_benchmark
from core.browser import BrowserRequest, browser_payload, browser_report, runtime_files
from core.browser.page import bench_message, standalone_page
from core.model.inputs import plan_inputs
from core.model.intake import IntakeRequest, describe_files
from core.model.measured import MeasuredModel
from tests import builders
from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS
from tests.real_models import REAL, real_model


def _model(name: str, folder: Path) -> MeasuredModel:
    path = builders.exported_sample(name, folder) if name not in REAL else real_model(name)
    record = describe_files(IntakeRequest(paths=[str(path)]))
    return MeasuredModel(path=str(path), inputs=plan_inputs(record), name=name, id=record.id)


def _browser(model: MeasuredModel, folder: Path, iters: int, warmup: int, page: Any) -> dict[str, Any]:
    payload = browser_payload(BrowserRequest(model=model))
    meta = bench_message(
        payload, name=model.name, model_id=model.id, iterations=iters, warmup=warmup, budget_s=600, backend="wasm"
    )
    html = folder / f"{model.name}.html"
    html.write_text(standalone_page(payload, runtime_files(), meta=meta, webgpu=False, language="en"), "utf-8")
    page.goto(html.as_uri())
    page.locator("html[data-ready='true'], html[data-error]").wait_for(timeout=900_000)
    error = page.get_attribute("html", "data-error")
    if error:
        raise RuntimeError(f"{model.name} in the browser: {error}")
    return dict(json.loads(page.get_attribute("html", "data-result") or "{}"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="tinycnn,ocr_rec")
    parser.add_argument("--iters", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page()
        print(f"{'model':<10} {'where':<14} {'load ms':>9} {'first ms':>9} {'median ms (95 % CI)':>26} {'ratio':>6}")
        for name in args.models.split(","):
            model = _model(name, Path(tmp))
            native = run_benchmark(
                BenchRequest(model=model, engines=["ort"], levels=["all"], threads=[1], iterations=args.iters,
                             warmup=args.warmup, time_budget_s=600)
            ).results[0]  # fmt: skip
            result = _browser(model, Path(tmp), args.iters, args.warmup, page)
            web = browser_report(result).results[0]
            for where, r in (("native 1 thr", native), ("Chromium WASM", web)):
                ratio = f"{web.median_ms / native.median_ms:.2f}×" if r is web else ""
                ci = f"{r.median_ms:.3f} ({r.median_low_ms:.3f}–{r.median_high_ms:.3f})"
                print(f"{name:<10} {where:<14} {r.load_ms:>9.1f} {r.first_run_ms:>9.1f} {ci:>26} {ratio:>6}")
            print(f"{name:<10} max |browser - native| {result['max_abs_diff']:.1e}; {result['environment']['ort_web']}")
        browser.close()


if __name__ == "__main__":
    main()
