"""Speed against the floors (issue #51): each figure beside the least the same work can take, measured in the same
run, the two sides alternating (floor, ours, floor, ours...), so that a fast or a slow machine judges them alike.

Run: .venv/bin/python benchmarks/floors.py [--rounds 5] [--rows first-page,command,levels,pages] [--no-page]
Prints each round's pair as it goes, then for every row the floor's median, ours, the ratio and whether the goal
is met:

- the first page: a bare Streamlit app that writes one title, served beside the app; the same Chromium opens
  each in a fresh context, alternating, until its title (the app: its start sample's card) is shown and the
  last run ended (on the page's own clock: benchmarks/_page.py). Goal ≤ 1.5×.
- a command's fixed cost: `python -m core inspect ONE_NODE.onnx` against `python -c "import onnx, onnxruntime,
  numpy"`, the project's modules compiled first (as make does). Goal ≤ 1.5×.
- Partition with the five levels, a 30,003-node model (tests.graph_models.transformer_like): the command
  `python -m core partition MODEL --levels`, and the Partition page until it finished (upload, Decode, Partition
  as benchmarks/graph_pages.py walks them; ``--no-page`` leaves the page out), against one plain process that
  builds the same five ONNX Runtime sessions with ``optimized_model_filepath``, two at a time. Goal ≤ 1.3×.
- the sample's Decode and Partition pages answering (TinyCNN exported with the defaults, uploaded in a fresh
  session; from the click on the page's link to the end of its last run), against a bare Streamlit button whose
  click runs ``onnx.load`` + ``InferenceSession`` of the same file in-process. Goal ≤ 2×.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._page import ARGS, CHROMIUM, IDLE, UNFLIPPED, graph_drawn, new_page, now, run_after, settled
from benchmarks._server import ROOT, running_app
from benchmarks._unit import machine

PY = sys.executable
GOALS = {"first-page": 1.5, "command": 1.5, "levels": 1.3, "pages": 2.0}
ROWS = tuple(GOALS)
FLOOR_TITLE = "Floor"
SAMPLE_PARAMETERS = "256,074"  # on the start sample's card: the app's first page is shown
# the floor of the Partition levels: the five sessions, two at a time, in one plain process
LEVELS_FLOOR = textwrap.dedent("""
    import sys
    from concurrent.futures import ThreadPoolExecutor
    import onnxruntime as ort
    model, out = sys.argv[1], sys.argv[2]
    def build(level):
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel(level)
        options.optimized_model_filepath = f"{out}/{level}.onnx"
        ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(build, [0, 1, 2, 3, 99]))
""")
# the floor of a page answering: a button whose click opens the model in this very process
BUTTON_APP = textwrap.dedent("""
    import streamlit as st
    st.title("Floor")
    if st.button("Open"):
        import onnx
        import onnxruntime as ort
        model = onnx.load(MODEL)
        session = ort.InferenceSession(MODEL, providers=["CPUExecutionProvider"])
        st.write(len(model.graph.node), [i.name for i in session.get_inputs()])
""")


def _median(values: list[float]) -> float:
    return statistics.median(values)


def _wall(command: list[str], cwd: Path = ROOT, env: dict[str, str] | None = None) -> float:
    """Seconds ``command`` takes to run to its end (it must succeed)."""
    began = time.monotonic()
    subprocess.run(command, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.monotonic() - began


def alternate(rounds: int, floor: Callable[[], float], ours: Callable[[], dict[str, float]], row: str) -> dict:
    """``rounds`` pairs, the floor first in each; each pair printed as it comes."""
    floors: list[float] = []
    oursides: dict[str, list[float]] = {}
    for n in range(rounds):
        floors.append(floor())
        for name, seconds in ours().items():
            oursides.setdefault(name, []).append(seconds)
        said = ", ".join(f"{name} {values[-1]:.2f} s" for name, values in oursides.items())
        print(f"  {row} round {n + 1}: floor {floors[-1]:.2f} s; {said}", flush=True)
    return {"floor": floors, "ours": oursides}


@contextlib.contextmanager
def bare_streamlit(script: str, folder: Path) -> Iterator[str]:
    """A bare Streamlit app running ``script`` (written into ``folder``), served on a free port: its URL."""
    app = folder / "floor_app.py"
    app.write_text(script)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    command = [PY, "-m", "streamlit", "run", str(app), "--server.port", str(port), "--server.address", "127.0.0.1",
               "--server.headless", "true", "--browser.gatherUsageStats", "false"]  # fmt: skip
    server = subprocess.Popen(command, cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok":
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("the bare Streamlit app did not start within 60 s") from None
                time.sleep(0.25)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)


def _fresh(browser: Any) -> Any:
    return new_page(browser)


def first_page_row(browser: Any, app_url: str, floor_url: str, rounds: int) -> dict:
    def floor() -> float:
        page = _fresh(browser)
        page.goto(floor_url)
        page.get_by_role("heading", name=FLOOR_TITLE).wait_for(timeout=120_000)
        seconds = settled(page, shown=now(page))
        page.context.close()
        return seconds

    def ours() -> dict[str, float]:
        page = _fresh(browser)
        page.goto(app_url)
        page.get_by_text(SAMPLE_PARAMETERS).first.wait_for(timeout=120_000)
        seconds = settled(page, shown=now(page))
        page.context.close()
        return {"first page": seconds}

    return alternate(rounds, floor, ours, "first page")


def command_row(model: Path, rounds: int, data: Path) -> dict:
    env = dict(os.environ, WORKBENCH_DATA_DIR=str(data))
    # the project's modules compiled first, as `make run` and `make test` do (the floor's are, in site-packages): a
    # worker cannot write its own (the sandbox shows the code read-only), and PYTHONDONTWRITEBYTECODE may forbid the
    # command to
    compile_env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([PY, "-m", "compileall", "-q", "-j", "0", "core"], cwd=ROOT, env=compile_env, check=True,
                   stdout=subprocess.DEVNULL)  # fmt: skip

    def floor() -> float:
        return _wall([PY, "-c", "import onnx, onnxruntime, numpy"])

    def ours() -> dict[str, float]:
        return {"inspect": _wall([PY, "-m", "core", "inspect", str(model)], env=env)}

    return alternate(rounds, floor, ours, "command")


def _upload(page: Any, url: str, model: Path) -> None:
    """A fresh session with ``model`` uploaded, its card shown and the page's runs ended."""
    page.goto(url)
    page.wait_for_selector(IDLE, timeout=120_000)
    page.locator('[data-testid="stFileUploader"] input[type="file"]').first.set_input_files([str(model)])
    page.get_by_role("heading", name=model.stem).first.wait_for(timeout=120_000)
    settled(page)


def levels_row(browser: Any, model: Path, rounds: int, folder: Path, app_url: str | None) -> dict:
    env = dict(os.environ, WORKBENCH_DATA_DIR=str(folder / "cli-data"))
    out = folder / "floor-levels"
    out.mkdir(exist_ok=True)

    def floor() -> float:
        return _wall([PY, "-c", LEVELS_FLOOR, str(model), str(out)])

    def ours() -> dict[str, float]:
        figures = {"partition --levels": _wall([PY, "-m", "core", "partition", str(model), "--levels"], env=env)}
        if app_url is not None:
            page = _fresh(browser)
            _upload(page, app_url, model)
            began = now(page)
            page.get_by_role("link", name="Partition", exact=True).click()
            page.get_by_role("heading", name="Partition", exact=True).wait_for(timeout=120_000)
            drawn = graph_drawn(page, since=began)
            figures["the Partition page"] = settled(page, shown=drawn, timeout=600_000) - began
            page.context.close()
        return figures

    return alternate(rounds, floor, ours, "levels")


def _answered(page: Any, name: str) -> float:
    """Seconds from the click on ``name``'s link to the end of the page's last run (benchmarks._page.open_page,
    with the click's own run waited for)."""
    began = now(page)
    page.get_by_role("link", name=name, exact=True).click()
    page.get_by_role("heading", name=name, exact=True).wait_for(timeout=120_000)
    run_after(page, began)
    return settled(page) - began


def pages_row(browser: Any, app_url: str, floor_url: str, model: Path, rounds: int) -> dict:
    def floor() -> float:
        page = _fresh(browser)
        page.goto(floor_url)
        page.get_by_role("heading", name=FLOOR_TITLE).wait_for(timeout=120_000)
        settled(page)
        began = now(page)
        page.get_by_role("button", name="Open").click()
        page.get_by_text("input").first.wait_for(timeout=120_000)
        run_after(page, began)
        seconds = settled(page) - began
        page.context.close()
        return seconds

    def ours() -> dict[str, float]:
        page = _fresh(browser)
        _upload(page, app_url, model)
        figures = {f"{name} answers": _answered(page, name) for name in ("Decode", "Partition")}
        page.context.close()
        return figures

    return alternate(rounds, floor, ours, "pages")


def one_node(path: Path) -> Path:
    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "one", [x], [y])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), path)
    return path


def summary(results: dict[str, dict]) -> list[str]:
    """One line per figure: the floor's median, ours, the ratio and the goal, met or not."""
    lines = []
    for row, result in results.items():
        floor = _median(result["floor"])
        goal = GOALS[row]
        for name, values in result["ours"].items():
            ratio = _median(values) / floor
            verdict = "met" if ratio <= goal else "NOT met"
            lines.append(
                f"  {name:<22} floor {floor:6.2f} s  ours {_median(values):6.2f} s  "
                f"{ratio:5.2f}×  goal ≤ {goal:g}×: {verdict}"
            )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="pairs per row, floor then ours (default 5)")
    parser.add_argument("--rows", default=",".join(ROWS), help=f"which rows (default all: {','.join(ROWS)})")
    parser.add_argument("--layers", type=int, default=1500, help="the levels' model: 20 nodes each (1500: 30,003)")
    parser.add_argument("--no-page", action="store_true", help="the levels row without the Partition page")
    args = parser.parse_args()
    rows = [r for r in args.rows.split(",") if r]
    unknown = set(rows) - set(ROWS)
    if unknown:
        parser.error(f"unknown rows {sorted(unknown)}; choose from {', '.join(ROWS)}")
    load = os.getloadavg()
    print(f"{machine()}; load {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; {args.rounds} rounds", flush=True)
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        folder = Path(tmp)
        browser = None
        app_url = floor_url = button_url = None
        if {"first-page", "pages"} & set(rows) or ("levels" in rows and not args.no_page):
            from playwright.sync_api import sync_playwright

            browser = stack.enter_context(sync_playwright()).chromium.launch(executable_path=CHROMIUM, args=ARGS)
            app_url, _pid = stack.enter_context(running_app(folder / "data"))
        if "first-page" in rows:
            (folder / "title").mkdir()
            floor_url = stack.enter_context(bare_streamlit(f'import streamlit as st\nst.title("{FLOOR_TITLE}")\n',
                                                           folder / "title"))  # fmt: skip
            results["first-page"] = first_page_row(browser, app_url or "", floor_url, args.rounds)
        if "command" in rows:
            model = one_node(folder / "one_node.onnx")
            results["command"] = command_row(model, args.rounds, folder / "command-data")
        if "pages" in rows:
            sample = folder / "tinycnn.onnx"
            subprocess.run([PY, "-m", "core", "export", "sample:tinycnn", "-o", str(sample)], cwd=ROOT, check=True,
                           env=dict(os.environ, WORKBENCH_DATA_DIR=str(folder / "export-data")),
                           stdout=subprocess.DEVNULL)  # fmt: skip
            (folder / "button").mkdir()
            script = BUTTON_APP.replace("MODEL", repr(str(sample)))
            button_url = stack.enter_context(bare_streamlit(script, folder / "button"))
            results["pages"] = pages_row(browser, app_url or "", button_url, sample, args.rounds)
        if "levels" in rows:
            import onnx

            from tests.graph_models import transformer_like

            model = folder / f"transformer-{args.layers}.onnx"
            onnx.save(transformer_like(args.layers), model)
            page_url = None if args.no_page else app_url
            results["levels"] = levels_row(browser, model, args.rounds, folder, page_url)
    load = os.getloadavg()
    print(f"\nmedians of {args.rounds} rounds, alternating (load after: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}):")
    print("\n".join(summary(results)))
    if UNFLIPPED:
        print(f"  ({len(UNFLIPPED)} runs ended within one render of the page: their end read from the socket)")


if __name__ == "__main__":
    main()
