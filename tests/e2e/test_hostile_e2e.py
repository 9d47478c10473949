"""In Chromium: hostile uploads are refused, and the app keeps serving other users meanwhile (markup in a model's
strings is crawled across every page in test_markup_crawl_e2e)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.adversarial import hostile
from tests.e2e.conftest import shot, upload, wait_idle

pytestmark = pytest.mark.e2e


def _clear_uploads(page) -> None:  # type: ignore[no-untyped-def]
    buttons = page.locator('[data-testid="stFileChipDeleteBtn"] button')
    while buttons.count():
        buttons.first.click()
        page.wait_for_timeout(300)
    wait_idle(page)


def test_hostile_uploads_are_refused_and_others_keep_working(browser, app_url: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    victim = browser.new_context(viewport={"width": 1400, "height": 1000})
    other = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        page = victim.new_page()
        page.goto(app_url)
        wait_idle(page)
        cases = [
            (hostile.pickle_exploit(".pt"), "posix.system"),
            (hostile.zip_bomb, "bomb"),
            (hostile.external_dotdot, "outside the model's folder"),
        ]
        for n, (build, words) in enumerate(cases):
            folder = tmp_path / f"case{n}"
            folder.mkdir()
            _clear_uploads(page)  # the upload box keeps earlier files; a user removes them first
            upload(page, *build(folder))
            page.locator('[data-testid="stAlert"]').filter(has_text=words).first.wait_for(timeout=60_000)
            # meanwhile another user opens the app: it answers, with its own start sample
            bystander = other.new_page()
            bystander.goto(app_url)
            bystander.get_by_text("256,074").wait_for(timeout=60_000)
            bystander.close()
        shot(page, "71-hostile-refused")
        assert not (tmp_path / "canary").exists()
    finally:
        victim.close()
        other.close()


def _declaring_domains(folder: Path, size: int = 480_000) -> Path:
    """A one-node model that declares enough operator domains to fill ``size`` bytes, each repeating the words
    between the two values of a card note's template ("{subgraphs} subgraph(s) (If/Loop/Scan), {nodes} nodes in
    all."): text a model chooses, written into a note of its card, that a regular expression made of that template
    matched in time quadratic in its length."""
    import onnx
    from onnx import TensorProto, helper

    count = 900  # under the 1,000 opset imports a model may hold
    words = "1 subgraph(s) (If/Loop/Scan), "
    domains = [helper.make_opsetid(f"{words * (size // count // len(words) + 1)}x{n}", 1) for n in range(count)]
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), *domains])
    path = folder / "domains.onnx"
    onnx.save(model, path)
    assert path.stat().st_size >= size
    return path


def test_a_model_whose_text_fills_its_notes_freezes_nobody(browser, app_url: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A card's notes viewed in Chinese once matched the recorded English against every template as a regular
    expression: a model declaring 480 KB of domains held the server 38 s, health check included. Notes are data
    now (core.notes): the page answers, and meanwhile the health check and another visitor's page do at once."""
    import threading
    import time
    import urllib.request

    model = _declaring_domains(tmp_path)
    victim = browser.new_context(viewport={"width": 1400, "height": 1000})
    other = browser.new_context(viewport={"width": 1400, "height": 1000})
    health: list[float] = []
    done = threading.Event()

    def check_health() -> None:
        while not done.is_set():
            start = time.monotonic()
            urllib.request.urlopen(f"{app_url}/_stcore/health", timeout=30).read()
            health.append(time.monotonic() - start)
            time.sleep(0.2)

    try:
        page = victim.new_page()
        page.goto(f"{app_url}/?lang=zh")
        wait_idle(page)
        checker = threading.Thread(target=check_health, daemon=True)
        checker.start()
        upload(page, model)
        page.locator('[data-testid="stMarkdownContainer"] li').filter(
            has_text="(If/Loop/Scan), 1 subgraph"
        ).first.wait_for(timeout=60_000)
        start = time.monotonic()
        bystander = other.new_page()
        bystander.goto(app_url)
        bystander.get_by_text("256,074").wait_for(timeout=60_000)
        bystander_s = time.monotonic() - start
        page.locator('[data-testid="stSidebar"]').get_by_text("English", exact=True).click()  # said again
        wait_idle(page)
        page.locator('[data-testid="stSidebar"]').get_by_text("中文", exact=True).click()
        wait_idle(page)
        done.set()
        checker.join(timeout=30)
        shot(page, "72-domains-card-zh")
        notes = page.locator('[data-testid="stMarkdownContainer"] li').all_inner_texts()
        said = [n for n in notes if "(If/Loop/Scan), 1 subgraph" in n]
        assert said and all(len(n) < 1_500 for n in said)  # the first few domains and how many more, not 480 KB
        assert "(+" in said[0]
        assert health and max(health) < 1.0, health
        assert bystander_s < 30, bystander_s  # a first page in a warm browser; 40 s and more when it froze
    finally:
        done.set()
        victim.close()
        other.close()
