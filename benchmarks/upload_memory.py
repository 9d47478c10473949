"""What an upload at the size limit costs the web server's memory.

Starts the app with `python -m core serve` (so Streamlit's own upload limit follows WORKBENCH_MAX_UPLOAD_MB),
uploads an ONNX model of about that size through Chromium, and samples the server process's RSS every 50 ms
from before the upload until the model card shows. The model is opened in a worker process, so the server
holds the upload's bytes (Streamlit keeps them in memory for the session) and writes them to the workspace.

Run: .venv/bin/python benchmarks/upload_memory.py [--mb 200 --mb 500]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._page import ARGS, CHROMIUM  # noqa: E402


@dataclass
class UploadMemory:
    upload_mb: float
    baseline_mb: float  # server RSS with the page open, before the upload
    peak_mb: float  # the highest RSS seen until the model card showed
    seconds: float  # from choosing the file to the model card

    @property
    def growth_mb(self) -> float:
        return self.peak_mb - self.baseline_mb


def big_model(path: Path, megabytes: int) -> Path:
    """An ONNX model whose one weight fills ``megabytes`` (minus a little for the graph)."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    columns = 1024
    rows = max(1, (megabytes * 1_000_000 - 4096) // (4 * columns))
    weight = numpy_helper.from_array(np.ones((rows, columns), np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        "big",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, rows])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, columns])],
        [weight],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path.write_bytes(model.SerializeToString())
    return path


def measure(megabytes: int, folder: Path) -> UploadMemory:
    """Run in a thread of its own, so it works beside a synchronous Playwright (as in the tests)."""
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(_measure, megabytes, folder).result()


def _measure(megabytes: int, folder: Path) -> UploadMemory:
    import psutil
    from playwright.sync_api import sync_playwright

    from benchmarks._server import running_app

    model = big_model(folder / f"big{megabytes}.onnx", megabytes)
    limit = str(megabytes + 1)
    with running_app(folder / "data", max_upload_mb=limit, start_sample="") as (url, pid):
        process = psutil.Process(pid)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            page = browser.new_page()
            page.goto(url)
            page.wait_for_selector('[data-testid="stApp"][data-test-script-state="notRunning"]', timeout=120_000)
            time.sleep(1.0)
            baseline = process.memory_info().rss
            peak = [baseline]
            done = threading.Event()

            def sample() -> None:
                while not done.is_set():
                    peak[0] = max(peak[0], process.memory_info().rss)
                    time.sleep(0.05)

            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
            start = time.monotonic()
            page.locator('[data-testid="stFileUploader"] input[type="file"]').set_input_files(str(model))
            page.locator('[data-testid="stSidebar"]').get_by_text(model.stem, exact=True).wait_for(timeout=600_000)
            seconds = time.monotonic() - start
            time.sleep(1.0)
            done.set()
            sampler.join()
            browser.close()
        return UploadMemory(model.stat().st_size / 1e6, baseline / 1e6, peak[0] / 1e6, seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=int, action="append", help="upload size(s) in MB (default 200 and 500)")
    args = parser.parse_args()
    print(f"{'upload':>9} {'baseline':>9} {'peak':>9} {'growth':>9} {'growth/upload':>14} {'time':>7}")
    for megabytes in args.mb or [200, 500]:
        with tempfile.TemporaryDirectory() as tmp:
            m = measure(megabytes, Path(tmp))
        print(f"{m.upload_mb:>7.0f}MB {m.baseline_mb:>7.0f}MB {m.peak_mb:>7.0f}MB {m.growth_mb:>7.0f}MB "
              f"{m.growth_mb / m.upload_mb:>14.2f} {m.seconds:>6.1f}s")  # fmt: skip


if __name__ == "__main__":
    main()
