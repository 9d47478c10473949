"""Many users at once: N browser sessions in Chromium, each uploading its own model, decoding it and running a
short benchmark at the same time, while one more visitor opens the landing page.

Prints, per user: time to the first page, to the model card, to the decode, and from pressing "Run the
benchmark" to the result, with the place in the benchmark queue each saw; and the landing page's time while
the queue was full. The end-to-end test tests/e2e/test_many_users_e2e.py runs the same scenario and checks
that nothing crossed between sessions and that the benchmarks never overlapped.

Run: .venv/bin/python benchmarks/many_users.py [--users 8]   (starts its own server on a free port)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._page import ARGS, CHROMIUM, IDLE  # noqa: E402

# Measured calls per configuration: each user's benchmark must last about a second (a small model's call takes
# ~0.1 ms, two configurations), or the queue drains before the last of the simultaneous clicks lands, which on a
# busy machine is up to a second after the first. With 50 calls a benchmark took 0.4 s once it stopped importing
# PyTorch, and the queue of four was never seen holding two.
CALLS = 5000


@dataclass
class UserRun:
    user: int
    model: str
    input_name: str
    page_s: float = 0.0  # the landing page, start sample loaded
    card_s: float = 0.0  # upload to the model card
    decode_s: float = 0.0  # to the decoded page
    bench_s: float = 0.0  # "Run the benchmark" to the headline
    queue_seen: list[int] = field(default_factory=list)  # places in the queue the status box showed
    inputs_row: str = ""  # the benchmark's inputs, as the environment table shows them
    sidebar: str = ""
    error: str = ""


@dataclass
class CrowdReport:
    users: list[UserRun]
    landing_s: float  # a visitor's landing page while the benchmark queue was full
    seconds: float
    landing_while_queued: bool = True  # False when the queue never filled and the visitor came at the end


def user_model(user: int, folder: Path) -> tuple[Path, str]:
    """A model only this user has: its own input name and length."""
    from tests import builders

    model = builders.chain_model(20 + 4 * user)
    name = f"input_of_user{user}"
    for node in model.graph.node:
        node.input[:] = [name if i == "x" else i for i in node.input]
    model.graph.input[0].name = name
    return builders.write(model, folder / f"user{user}.onnx"), name


async def _idle(page: Any, timeout: float = 300_000) -> None:
    await page.wait_for_timeout(600)
    await page.wait_for_selector(IDLE, timeout=timeout)


async def _one_user(
    browser: Any, url: str, run: UserRun, path: Path, queue_full: asyncio.Event, full_at: int, ready: asyncio.Barrier
) -> None:
    context = await browser.new_context(viewport={"width": 1300, "height": 1000})
    page = await context.new_page()
    try:
        start = time.monotonic()
        await page.goto(url, timeout=180_000)  # many first loads at once: 6-9 CPU-s of Chromium each
        await page.get_by_text("256,074").wait_for(timeout=300_000)
        run.page_s = time.monotonic() - start

        start = time.monotonic()
        await page.locator('[data-testid="stFileUploader"] input[type="file"]').set_input_files(
            str(path), timeout=300_000
        )
        await page.locator('[data-testid="stSidebar"]').get_by_text(run.model, exact=True).wait_for(timeout=300_000)
        await _idle(page)
        run.card_s = time.monotonic() - start

        start = time.monotonic()
        await page.get_by_role("link", name="Decode", exact=True).click()
        await page.get_by_role("heading", name="2. The model").wait_for(timeout=300_000)
        # the model's inputs: a Markdown table (ui.text.md_table), as the Model page's card writes them
        await page.locator("table").get_by_text(run.input_name).first.wait_for(timeout=300_000)
        await _idle(page)
        run.decode_s = time.monotonic() - start

        await page.get_by_role("link", name="Benchmark", exact=True).click()
        iterations = page.get_by_label("Measured calls per configuration")
        await iterations.wait_for(timeout=300_000)
        await iterations.fill(str(CALLS))
        await page.get_by_label("Warm-up calls", exact=True).fill("5")
        await ready.wait()  # everyone presses at once: the benchmarks must queue, however fast each one is
        start = time.monotonic()
        await page.get_by_role("button", name="Run the benchmark").click()
        # a settled number, or with eight users at once more likely the interval of a noisy run
        headline = page.get_by_text(re.compile(r"ONNX Runtime \(\w+\) (is|was|and) .*95 % CI"))
        while not await headline.count():
            status = await page.locator('[data-testid="stExpander"]').all_inner_texts()
            for text in status:
                match = re.search(r"(\d+) jobs? ahead of yours", text)
                if match:
                    run.queue_seen.append(int(match.group(1)))
                    if int(match.group(1)) >= full_at:
                        queue_full.set()
            await page.wait_for_timeout(200)
            if time.monotonic() - start > 600:
                raise TimeoutError("no benchmark result after 600 s")
        run.bench_s = time.monotonic() - start
        await _idle(page)
        rows = await page.locator('[data-testid="stTable"]').last.inner_text()
        run.inputs_row = next((line for line in rows.splitlines() if "seed" in line), "")
        run.sidebar = await page.locator('[data-testid="stSidebar"]').inner_text()
    except Exception as exc:
        run.error = f"{type(exc).__name__}: {exc}"
        await ready.abort()  # the others stop waiting for this user
    finally:
        await context.close()


async def _visitor(browser: Any, url: str, queue_full: asyncio.Event) -> float:
    """Opens the landing page once the benchmark queue is full (or after two minutes); returns its seconds."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(queue_full.wait(), timeout=120)
    context = await browser.new_context()
    page = await context.new_page()
    start = time.monotonic()
    await page.goto(url, timeout=180_000)
    await page.get_by_text("256,074").wait_for(timeout=300_000)
    seconds = time.monotonic() - start
    await context.close()
    return seconds


async def _crowd(url: str, users: int, folder: Path) -> CrowdReport:
    from playwright.async_api import async_playwright

    runs, paths = [], []
    for user in range(users):
        path, input_name = user_model(user, folder)
        runs.append(UserRun(user, path.stem, input_name))
        paths.append(path)
    queue_full = asyncio.Event()
    started = time.monotonic()
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        visitor = asyncio.create_task(_visitor(browser, url, queue_full))
        full_at = max(1, min(2, users - 1))  # two waiting, or one when only two users run
        ready = asyncio.Barrier(users)
        await asyncio.gather(
            *[_one_user(browser, url, r, path, queue_full, full_at, ready) for r, path in zip(runs, paths, strict=True)]
        )
        while_queued = queue_full.is_set()
        queue_full.set()  # a queue that never filled: the visitor comes now
        landing = await visitor
        await browser.close()
    return CrowdReport(runs, landing, time.monotonic() - started, while_queued)


def crowd(url: str, users: int, folder: Path) -> CrowdReport:
    """Run the scenario in a thread of its own, so it works beside a synchronous Playwright (as in the tests)."""
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, _crowd(url, users, folder)).result()


def print_report(report: CrowdReport) -> None:
    print(f"{len(report.users)} users at once, {report.seconds:.0f} s in all")
    print(f"{'user':<6} {'page':>6} {'card':>6} {'decode':>7} {'bench':>7}  queue places seen")
    for r in report.users:
        places = ", ".join(map(str, sorted(set(r.queue_seen), reverse=True))) or "-"
        print(f"{r.user:<6} {r.page_s:>5.1f}s {r.card_s:>5.1f}s {r.decode_s:>6.1f}s {r.bench_s:>6.1f}s  {places}"
              + (f"  ERROR {r.error}" if r.error else ""))  # fmt: skip
    when = "while the benchmark queue was full" if report.landing_while_queued else "after the users (no queue formed)"
    print(f"landing page for a visitor {when}: {report.landing_s:.1f} s")


def main() -> None:
    from benchmarks._server import running_app

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--users", type=int, default=8)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, running_app(Path(tmp) / "data") as (url, _):
        print_report(crowd(url, args.users, Path(tmp)))


if __name__ == "__main__":
    main()
