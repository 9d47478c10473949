"""In Chromium, ui.graph_canvas in a small Streamlit script (tests/e2e/graph_canvas_app.py): the view is drawn,
a colouring from Python is in the colour switch with its legend counts, a search or a click sends the node's
name back to Python, a rerun neither remounts the view nor resends the graph, and ``selected=`` opens on a node
(at mount and, later, without a remount)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from core.graph import view_graph
from tests.e2e.conftest import ARTIFACTS, serve_app, wait_idle
from tests.graph_models import transformer_like

pytestmark = [pytest.mark.e2e]

ROOT_SELECTOR = ".graph-canvas[data-ready='true']"


@pytest.fixture(scope="module")
def canvas_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serve_app(tmp_path_factory.mktemp("graph-canvas"), {}, script="tests/e2e/graph_canvas_app.py") as url:
        yield url


def _shot(page, name: str) -> None:  # type: ignore[no-untyped-def]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"71-graph-component-{name}.png"))


def _selected_text(page, name: str) -> None:  # type: ignore[no-untyped-def]
    page.get_by_text(f"selected: {name}", exact=True).wait_for(timeout=10_000)


def test_graph_component_colours_selects_and_keeps_its_view_across_reruns(browser, canvas_app: str) -> None:  # type: ignore[no-untyped-def]
    view = view_graph(transformer_like(15))
    drawn = sum(1 for n in view.nodes if n.op not in ("Input", "Output"))
    context = browser.new_context(viewport={"width": 1300, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    received: list[int] = []
    page.on("websocket", lambda ws: ws.on("framereceived", lambda data: received.append(len(data))))
    page.goto(canvas_app)
    wait_idle(page)
    root = page.locator(ROOT_SELECTOR)
    root.wait_for(timeout=15_000)
    assert root.get_attribute("data-nodes") == "303"
    assert root.get_attribute("data-visible") == "5"  # collapsed: input, Gather, encoder, head, output
    first_load = sum(received)

    # the colouring is in the switch, after op type and dtype, with its title; its legend counts every node
    switch = page.get_by_label("Colour by")
    labels = switch.locator("option").all_inner_texts()
    assert labels == ["Colour: op type", "Colour: dtype", "Colour: execution provider"]
    switch.select_option("provider")
    legend = page.locator(".gv-legend")
    assert legend.locator(":scope > b").inner_text() == "execution provider"
    rows = legend.locator("div").all()
    counts = {r.locator("b").inner_text(): int(r.locator("span").inner_text().replace(",", "")) for r in rows}
    assert counts == {"CUDA": 90, "CPU": 16, "—": drawn - 106}, counts
    _shot(page, "provider")

    # a search jump and a click send the node's name to Python
    name = "/encoder/layer.3/attn/Softmax"
    page.get_by_placeholder("Find a node by name or op").fill("layer.3/attn/soft")
    page.locator(".gv-results button", has_text=name).click()
    _selected_text(page, name)
    wait_idle(page)
    neighbour = "/encoder/layer.3/attn/scale/Mul"
    box = page.evaluate("(n) => window.__graphView.screenBox(n)", neighbour)
    frame = root.bounding_box()
    assert box and frame, f"{neighbour} is not drawn"
    page.mouse.click(frame["x"] + box["x"] + box["w"] / 2, frame["y"] + box["y"] + box["h"] / 2)  # box: in the view
    _selected_text(page, neighbour)
    wait_idle(page)
    _shot(page, "clicked")

    # a rerun: no remount, the view as the person left it (colour, selection, open groups), the graph not resent
    visible = root.get_attribute("data-visible")
    received.clear()
    page.get_by_role("button", name="Rerun").click()
    wait_idle(page)
    timings = page.evaluate("window.__graphTimings")
    assert timings["mounts"] == 1, timings
    assert root.get_attribute("data-selected") == neighbour
    assert root.get_attribute("data-colour") == "provider"
    assert root.get_attribute("data-visible") == visible
    assert sum(received) < 8_000 < first_load, (sum(received), first_load)  # a reference to the cached graph

    # selected= from Python, later: the view jumps to it without a remount
    target = "/encoder/layer.11/mlp/act/Sigmoid"
    page.get_by_role("button", name="Show layer.11").click()
    page.locator(f".graph-canvas[data-selected='{target}']").wait_for(timeout=10_000)
    assert page.evaluate("window.__graphTimings.mounts") == 1
    assert not errors, errors
    context.close()


def test_graph_component_opens_on_the_selected_node(browser, canvas_app: str) -> None:  # type: ignore[no-untyped-def]
    context = browser.new_context(viewport={"width": 1300, "height": 900})
    page = context.new_page()
    target = "/encoder/layer.9/mlp/act/Sigmoid"
    page.goto(f"{canvas_app}/?open={target}&colour=provider")
    wait_idle(page)
    page.locator(f".graph-canvas[data-selected='{target}']").wait_for(timeout=15_000)
    root = page.locator(ROOT_SELECTOR)
    assert root.get_attribute("data-colour") == "provider"
    box = page.evaluate("(n) => window.__graphView.screenBox(n)", target)
    frame = root.bounding_box()
    assert frame and box
    # centred in the view (screenBox is relative to the canvas)
    assert abs(box["x"] + box["w"] / 2 - frame["width"] / 2) < 5
    assert abs(box["y"] + box["h"] / 2 - frame["height"] / 2) < 5
    assert "Sigmoid" in page.locator(".gv-details").inner_text()
    _shot(page, "opened")
    assert page.evaluate("window.__graphTimings.mounts") == 1
    context.close()


def test_graph_canvas_rejects_an_unknown_colour() -> None:
    from core.graph.colourings import Colouring
    from ui.graph_canvas import graph_canvas

    with pytest.raises(ValueError, match="colour by 'latency'"):
        colourings = {"p": Colouring(title="p", keys={})}
        graph_canvas(view_graph(transformer_like(1)), key="g", colour="latency", colourings=colourings)
