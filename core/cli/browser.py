"""browser-bench: one HTML file that benchmarks the model in whatever browser opens it (core.browser.page)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from core import jobs
from core.browser import BrowserRequest, runtime_files
from core.browser.page import bench_message, standalone_page
from core.cli.plan import add_measured_inputs, add_model_arguments, measured
from core.errors import WorkbenchError
from core.i18n import _, language
from core.jobs import BROWSER
from core.settings import load_settings

__all__ = ["register", "run"]


def register(parser: Any) -> None:
    add_model_arguments(parser)
    parser.add_argument("-o", "--output", default="bench.html", help="the HTML file to write (bench.html)")
    parser.add_argument("--iters", type=int, default=200, help="timed calls in the browser (default 200)")
    parser.add_argument("--warmup", type=int, default=20, help="warm-up calls in the browser (default 20)")
    parser.add_argument("--budget", type=float, default=60.0, help="time budget for the timed calls, seconds")
    parser.add_argument(
        "--webgpu",
        action="store_true",
        help="also carry ONNX Runtime Web's WebGPU build (8.8 MB more), used where the browser has a GPU adapter",
    )
    add_measured_inputs(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if not 1 <= args.iters <= 100_000 or not 0 <= args.warmup <= 10_000 or not 0 < args.budget <= 3600:
        raise WorkbenchError(_("--iters takes 1–100,000 calls, --warmup 0–10,000 and --budget 0–3,600 seconds."))
    runtime = runtime_files()
    limit = load_settings().browser_model_mb
    with measured(args, None) as model:
        payload = jobs.run(BROWSER, BrowserRequest(model=model, seed=args.seed, limit_mb=limit))
    meta = bench_message(
        payload, name=model.name or Path(model.path).name, model_id=model.id, iterations=args.iters,
        warmup=args.warmup, budget_s=args.budget, backend="webgpu",
    )  # fmt: skip
    out = Path(args.output).expanduser()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(standalone_page(payload, runtime, meta=meta, webgpu=args.webgpu, language=language()), "utf-8")
    size = out.stat().st_size / 1024 / 1024
    print(
        _("wrote    {path} ({size} MB): open it in a browser; it benchmarks {model} there, offline").format(
            path=out, size=f"{size:.1f}", model=meta["model"]
        )
    )
    return 0
