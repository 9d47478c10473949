"""In Chromium, the graph HTML of models with If/Loop bodies and nested groups: a node's bodies open inside it
(at any depth), each open group is laid out on its own so that frames never overlap, and a search for a node
deep inside the bodies opens its way there."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest

from core.graph import view_graph
from tests.cli import cli
from tests.e2e.conftest import ARTIFACTS, offline_page
from tests.graph_models import transformer_like
from tests.real_models import real_model

pytestmark = [pytest.mark.e2e]


def _open(browser, html: Path):  # type: ignore[no-untyped-def]
    context, page, errors = offline_page(browser)
    page.goto(html.as_uri())
    page.locator("#graph[data-ready='true']").wait_for(timeout=30_000)
    return context, page, errors


def _inside(inner: dict, outer: dict) -> bool:
    return (
        inner["x"] >= outer["x"] - 0.5
        and inner["y"] >= outer["y"] - 0.5
        and inner["x"] + inner["w"] <= outer["x"] + outer["w"] + 0.5
        and inner["y"] + inner["h"] <= outer["y"] + outer["h"] + 0.5
    )


def _apart(a: dict, b: dict) -> bool:
    return (
        a["x"] + a["w"] <= b["x"] + 0.5
        or b["x"] + b["w"] <= a["x"] + 0.5
        or a["y"] + a["h"] <= b["y"] + 0.5
        or b["y"] + b["h"] <= a["y"] + 0.5
    )


def _check_nesting(frames: list[dict]) -> None:
    """Every frame lies inside its parent's frame, and frames with the same parent never overlap."""
    by_path = {f["path"]: f for f in frames}
    for frame in frames:
        if frame["parent"] in by_path:
            assert _inside(frame, by_path[frame["parent"]]), (frame["path"], frame["parent"])
    for i, a in enumerate(frames):
        for b in frames[i + 1 :]:
            if a["parent"] == b["parent"]:
                assert _apart(a, b), (a["path"], b["path"])


def test_an_if_opens_its_branches_inside_itself_at_any_depth(browser, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    model = real_model("silero_vad")  # an If whose branches hold the 16 kHz and 8 kHz networks, with Ifs inside
    view = view_graph(onnx.load(model, load_external_data=False))
    holders = {g.id: g for g in view.groups if g.kind == "node"}

    def depth(node_group: int) -> int:
        found, group = 0, node_group
        while group >= 0:
            found += view.groups[group].kind == "node"
            group = view.groups[group].parent
        return found

    deep = next(n for n in view.nodes if n.group >= 0 and depth(n.group) >= 2 and n.op not in ("Input", "Output"))
    outer = next(g for g in holders.values() if g.parent == -1)
    html = tmp_path / "vad.html"
    assert cli("graph", str(model), "-o", str(html)).returncode == 0
    context, page, errors = _open(browser, html)
    try:
        root = page.locator("#graph")
        owner = view.nodes[outer.owner].name
        assert page.evaluate("() => window.__graphView.frames()") == []  # 348 nodes: it opens closed
        box = page.evaluate("(n) => window.__graphView.screenBox(n)", owner)
        page.mouse.click(box["x"] + box["w"] - 8, box["y"] + box["h"] / 2)  # the ▸ badge at its right
        page.locator("#graph[data-expanded='1']").wait_for()
        frames = page.evaluate("() => window.__graphView.frames()")
        own = next(f for f in frames if f["owner"] == owner)
        branches = [f for f in frames if f["parent"] == own["path"]]
        assert sorted(f["path"].rsplit("/", 1)[1] for f in branches) == ["else_branch", "then_branch"]
        assert all(_inside(f, own) for f in branches) and _apart(*branches)
        header = page.evaluate("(n) => window.__graphView.screenBox(n)", owner)
        assert header["y"] == pytest.approx(own["y"]) and all(f["y"] > header["y"] + header["h"] for f in branches)
        assert "holds else_branch (172), then_branch (172)" in page.locator(".gv-details").inner_text()
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "73-graph-if-open.png"))

        # a node two Ifs deep: the search opens every group and node on its way
        page.get_by_placeholder("Find a node by name or op").fill(deep.name)
        page.locator(".gv-results button", has_text=deep.name).first.click()
        page.locator("#graph[data-selected]").wait_for()
        assert root.get_attribute("data-selected") == deep.name
        frames = page.evaluate("() => window.__graphView.frames()")
        assert sum(1 for f in frames if f["owner"]) >= 2
        _check_nesting(frames)
        found = page.evaluate("(n) => window.__graphView.screenBox(n)", deep.name)
        chain, group = [], deep.group
        while group >= 0:
            chain.append(view.groups[group])
            group = view.groups[group].parent
        paths = {f["path"]: f for f in frames}
        for group in chain:  # the node lies inside every frame around it
            path = "/".join(g.name for g in reversed(chain[chain.index(group) :]))
            assert _inside(found, paths[path]), path
        page.screenshot(path=str(ARTIFACTS / "73-graph-if-nested-found.png"))

        # closing the outer If by its badge hides all of it again
        page.get_by_role("button", name="Fit").click()
        header = page.evaluate("(n) => window.__graphView.screenBox(n)", owner)
        page.mouse.click(header["x"] + header["w"] - 8, header["y"] + header["h"] / 2)
        page.wait_for_function("() => window.__graphView.frames().every((f) => !f.path.startsWith('If_0'))")
        assert not errors
    finally:
        context.close()


def test_open_groups_are_laid_out_each_on_its_own_and_never_overlap(browser, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "scoped.onnx"
    onnx.save(transformer_like(15), path)  # 303 nodes in encoder/layer.N/attn scopes
    html = tmp_path / "graph.html"
    assert cli("graph", str(path), "-o", str(html)).returncode == 0
    context, page, errors = _open(browser, html)
    try:
        for group in ("encoder", "encoder/layer.3", "encoder/layer.4", "encoder/layer.3/attn"):
            page.evaluate("(p) => window.__graphView.expandGroup(p)", group)
        frames = page.evaluate("() => window.__graphView.frames()")
        assert {f["path"] for f in frames} >= {"encoder", "encoder/layer.3", "encoder/layer.4"}
        _check_nesting(frames)
        page.evaluate("() => window.__graphView.expandAll()")
        frames = page.evaluate("() => window.__graphView.frames()")
        assert len(frames) > 30
        _check_nesting(frames)
        # every node of a layer lies inside its layer's frame
        by_path = {f["path"]: f for f in frames}
        node = page.evaluate("(n) => window.__graphView.screenBox(n)", "/encoder/layer.9/attn/Softmax")
        assert _inside(node, by_path["encoder/layer.9/attn"]) and _inside(node, by_path["encoder/layer.9"])
        assert not errors
    finally:
        context.close()
