"""What a large model costs the web server's memory, from its upload to the end of its session.

Starts the app with `python -m core serve` (so Streamlit's own upload limit follows WORKBENCH_MAX_UPLOAD_MB, and
uploads go to disk: ui/upload_spool.py), and walks a new user's steps in Chromium with an ONNX model whose weight
lies in an external-data file of about the size asked (the .onnx and its .onnx.data selected together): the upload
until the model card shows, Decode until its first section shows, Benchmark with a short budget until its headline
shows; then the browser closes and the session ends (the server forgets a closed tab after 2 s here). The server
process's RSS is sampled every 50 ms throughout: its peak in each step above its RSS with the page open before the
upload, and what it holds once the session has ended.

Goal (issue 50): through upload, Decode and Benchmark of a 1 GB model the server grows by less than 200 MB (a
fifth of the model), and returns to its size when the session ends. Before uploads went to disk, a 1.34 GB model
took it to 4.9-5.3 GB and it still held 2.86 GB 25 minutes after the browser closed.

Run: .venv/bin/python benchmarks/upload_memory.py [--mb 300 --mb 1000]
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._page import ARGS, CHROMIUM, IDLE  # noqa: E402

GOAL_SHARE = 0.2  # of the model's size, the most the server may grow by (200 MB for a 1 GB model)
SESSION_TTL_S = 2  # the server forgets a closed tab's session after this (Streamlit's default is 120 s)
BENCH_BUDGET_S = 5  # the benchmark's time budget (the page's least)
STEPS = ("upload", "decode", "benchmark")


@dataclass
class UploadMemory:
    upload_mb: float
    baseline_mb: float  # server RSS with the page open, before the upload
    peak_mb: float  # the highest RSS seen from the upload to the end of the walk
    seconds: float  # from choosing the files to the model card
    steps_mb: dict[str, float] = field(default_factory=dict)  # each step's peak RSS
    after_mb: float = 0.0  # RSS once the session ended

    @property
    def growth_mb(self) -> float:
        return self.peak_mb - self.baseline_mb

    @property
    def kept_mb(self) -> float:
        """What the server still holds once the session has ended, above its size before the upload."""
        return self.after_mb - self.baseline_mb

    @property
    def goal_mb(self) -> float:
        return GOAL_SHARE * self.upload_mb


def big_model(folder: Path, megabytes: int, external: bool = True) -> list[Path]:
    """An ONNX model whose one weight fills ``megabytes`` (minus a little for the graph): its files, the .onnx and
    (``external``) the .onnx.data that holds the weight."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    columns = 1024
    rows = max(1, (megabytes * 1_000_000 - 4096) // (4 * columns))
    weight = numpy_helper.from_array(np.full((rows, columns), 1e-3, np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        "big",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, rows])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, columns])],
        [weight],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"big{megabytes}.onnx"
    if not external:
        path.write_bytes(model.SerializeToString())
        return [path]
    onnx.save_model(model, str(path), save_as_external_data=True, location=path.name + ".data", size_threshold=0)
    return [path, path.with_name(path.name + ".data")]


def measure(megabytes: int, folder: Path, walk: bool = True) -> UploadMemory:
    """Run in a thread of its own, so it works beside a synchronous Playwright (as in the tests)."""
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(_measure, megabytes, folder, walk).result()


class _Sampler:
    """The server's RSS every 50 ms in a thread: the peak since the last ``step``."""

    def __init__(self, process: Any) -> None:
        self.process, self.peak, self.done = process, 0, threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while not self.done.is_set():
            self.peak = max(self.peak, self.process.memory_info().rss)
            time.sleep(0.05)

    def step(self) -> float:
        """The peak since the last step (MB), and a new step begins."""
        peak, self.peak = self.peak, self.process.memory_info().rss
        return max(peak, self.peak) / 1e6

    def stop(self) -> None:
        self.done.set()
        self.thread.join()


def _idle(page: Any) -> None:
    page.wait_for_timeout(600)
    page.wait_for_selector(IDLE, timeout=600_000)


def _measure(megabytes: int, folder: Path, walk: bool) -> UploadMemory:
    import psutil
    from playwright.sync_api import sync_playwright

    from benchmarks._server import running_app

    files = big_model(folder / "model", megabytes)
    size = sum(f.stat().st_size for f in files) / 1e6
    limit = str(megabytes + 1)
    env = {"STREAMLIT_SERVER_DISCONNECTED_SESSION_TTL": str(SESSION_TTL_S)}
    with running_app(folder / "data", max_upload_mb=limit, start_sample="", warm_workers="0", env=env) as (url, pid):
        process = psutil.Process(pid)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            page = browser.new_page()
            page.goto(url)
            page.wait_for_selector(IDLE, timeout=120_000)
            time.sleep(1.0)
            baseline = process.memory_info().rss / 1e6
            sampler = _Sampler(process)
            start = time.monotonic()
            page.locator('[data-testid="stFileUploader"] input[type="file"]').set_input_files([str(f) for f in files])
            page.locator('[data-testid="stSidebar"]').get_by_text(files[0].stem, exact=True).wait_for(timeout=600_000)
            seconds = time.monotonic() - start
            _idle(page)
            steps = {"upload": sampler.step()}
            if walk:
                page.get_by_role("link", name="Decode", exact=True).click()
                page.get_by_role("heading", name="1. The first bytes").wait_for(timeout=600_000)
                _idle(page)
                steps["decode"] = sampler.step()
                page.get_by_role("link", name="Benchmark", exact=True).click()
                page.get_by_role("button", name="Run the benchmark").wait_for(timeout=600_000)
                _idle(page)
                budget = page.get_by_label(re.compile(r"^Time budget"))
                budget.fill(str(BENCH_BUDGET_S))
                budget.press("Tab")
                page.get_by_role("button", name="Run the benchmark").click()
                page.get_by_text("Saved to the history as run").first.wait_for(timeout=600_000)
                _idle(page)
                steps["benchmark"] = sampler.step()
            browser.close()
        peak = max(sampler.step(), *steps.values())
        sampler.stop()
        time.sleep(SESSION_TTL_S + 6)  # the session is forgotten, its workspace swept (every ~1 s here)
        after = []
        for _sample in range(5):
            after.append(process.memory_info().rss / 1e6)
            time.sleep(0.2)
    return UploadMemory(size, baseline, peak, seconds, steps, min(after))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=int, action="append", help="model size(s) in MB (default 300)")
    parser.add_argument("--upload-only", action="store_true", help="measure the upload alone (no Decode, Benchmark)")
    args = parser.parse_args()
    print(f"{'model':>8} {'baseline':>9} {'upload':>8} {'decode':>8} {'bench':>8} {'growth':>8} {'goal':>7} "
          f"{'after':>8} {'kept':>7} {'upload s':>9}")  # fmt: skip
    for megabytes in args.mb or [300]:
        with tempfile.TemporaryDirectory() as tmp:
            m = measure(megabytes, Path(tmp), walk=not args.upload_only)
        up, decode, bench = (f"{m.steps_mb[k]:.0f}MB" if k in m.steps_mb else "-" for k in STEPS)
        print(f"{m.upload_mb:>6.0f}MB {m.baseline_mb:>7.0f}MB {up:>8} {decode:>8} {bench:>8} {m.growth_mb:>6.0f}MB "
              f"{m.goal_mb:>5.0f}MB {m.after_mb:>6.0f}MB {m.kept_mb:>5.0f}MB {m.seconds:>8.1f}s")  # fmt: skip


if __name__ == "__main__":
    main()
