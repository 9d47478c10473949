"""A crawl of every page in Chromium with Markdown, HTML and scripts in every string a model, an archive and the
shared history can carry: nothing becomes a live link (not even a bare address), an image, bold text, a style or a
script, and nothing runs; the text is shown as text, and the graph view finds nodes by those names."""

from __future__ import annotations

import dataclasses
import zipfile
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from core.bench import BenchRequest, run_benchmark
from core.model.inputs import BenchInput
from core.model.measured import MeasuredModel
from core.store import Store
from tests.adversarial.hostile import SCRIPT
from tests.e2e.conftest import go_to, shot, upload, wait_idle

pytestmark = pytest.mark.e2e

EVIL = "evil.example"
MARKUP = (
    f"[md](https://{EVIL}/m) ![pic](https://{EVIL}/p.png) <a href=https://{EVIL}/a>link</a> "
    f'<span style="color:rgb(255,0,1)">styled</span> <img src=https://{EVIL}/i.png> <b>bold</b> **strong** '
    f"https://{EVIL}/bare "  # a bare address, which Markdown would make a link
    + SCRIPT  # sets the title to "pwned" and opens a dialog, if it ever runs
)
PAGES = ["Decode", "Partition", "Benchmark", "Quantize", "History"]

_FIND_LIVE = """() => {
  const links = [...document.querySelectorAll('a')]
      .map(a => a.getAttribute('href') || a.getAttribute('xlink:href') || '')
      .filter(h => h.includes('EVIL') || h.startsWith('javascript:'));
  const images = [...document.querySelectorAll('img, image')].map(i =>
      i.getAttribute('src') || i.getAttribute('href') || '').filter(s => s.includes('EVIL') || s === 'x');
  const bold = [...document.querySelectorAll('strong, b')].filter(e =>
      ['strong', 'bold'].includes(e.textContent.trim())).length;
  const styled = [...document.querySelectorAll('[style]')].filter(e =>
      e.getAttribute('style').replace(/ /g, '').includes('rgb(255,0,1)')).length;
  const scripts = [...document.querySelectorAll('script')].filter(s => s.textContent.includes('pwned')).length;
  return {links, images, styled, bold, scripts, title: document.title === 'pwned' ? 1 : 0};
}""".replace("EVIL", EVIL)


def _hostile_archive(folder: Path) -> Path:
    """A model with markup in its names, doc strings and metadata (a megabyte of each), zipped under a markup
    name."""
    w = numpy_helper.from_array(np.ones((4, 4), np.float32), "w " + MARKUP)
    x = helper.make_tensor_value_info("x " + MARKUP, TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y " + MARKUP, TensorProto.FLOAT, [1, 4])
    node = helper.make_node("MatMul", [x.name, w.name], [y.name], name="node " + MARKUP, doc_string=MARKUP)
    graph = helper.make_graph([node], "graph " + MARKUP, [x], [y], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name=MARKUP)
    model.ir_version = 8
    model.doc_string = MARKUP + "A" * 1_000_000  # a megabyte of doc string and of metadata value, shown in full
    helper.set_model_props(model, {"author": MARKUP, "notes " + MARKUP: "B" * 1_000_000})
    archive = folder / "hostile.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("<b>zip<b>[l](javascript:alert(1)) <img src=x>.onnx", model.SerializeToString())
    return archive


def _seed_history(data_dir: Path, folder: Path) -> None:
    """Two runs in the shared history whose model and configuration names are markup, as another user's file
    name would make them."""
    model = folder / "plain.onnx"
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
    )  # fmt: skip
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(model))
    store = Store(f"sqlite:///{data_dir / 'history.sqlite'}")
    measured = MeasuredModel(path=str(model), inputs=[BenchInput(name="x", dtype="float32", shape=[1, 4])])
    for n in range(2):
        report = run_benchmark(BenchRequest(model=measured, iterations=5, warmup=1, seed=n))
        results = [dataclasses.replace(r, label=f"{r.label} {MARKUP}") for r in report.results]
        store.save(dataclasses.replace(report, id=f"markup{n}", model=MARKUP, results=results, headline=MARKUP))


def test_no_markup_from_a_model_or_the_history_is_live_on_any_page(page, data_dir: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    dialogs: list[str] = []
    requests: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.on("request", lambda r: requests.append(r.url) if EVIL in r.url else None)
    _seed_history(data_dir, tmp_path)
    upload(page, _hostile_archive(tmp_path))
    page.get_by_text("styled", exact=False).first.wait_for(timeout=60_000)
    seen = {"Model": page.evaluate(_FIND_LIVE)}
    for name in PAGES:
        go_to(page, name)
        if name == "History":
            page.get_by_text("Median latency per configuration").wait_for(timeout=60_000)
            wait_idle(page)
        if name in ("Decode", "Partition"):  # the graph view shows the names and finds the node by them
            page.locator(".graph-canvas[data-ready='true']").wait_for(timeout=60_000)
            page.get_by_placeholder("Find a node by name or op").fill("pwned")
            assert "pwned" in page.locator(".gv-results").inner_text(), name
        seen[name] = page.evaluate(_FIND_LIVE)
        shot(page, f"75-markup-{name.lower()}")
        assert page.get_by_text(EVIL, exact=False).count() > 0, f"{name} does not show the names"
    live = {name: found for name, found in seen.items() if any(found.values())}
    assert not live, {name: {k: v for k, v in found.items() if v} for name, found in live.items()}
    assert not dialogs and not requests, (dialogs, requests)
