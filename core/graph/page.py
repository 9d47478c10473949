"""One self-contained HTML page of a graph view: the renderer's bundle and the data inlined, nothing fetched."""

from __future__ import annotations

import html

import msgspec

from core.graph.colourings import Colouring, colouring_json
from core.graph.records import GraphView

__all__ = ["COLOURS", "browser_data", "graph_page", "script_json"]

COLOURS = ("op", "dtype")  # always there; a page can add colourings of its own

_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; \
style-src 'unsafe-inline'; img-src data:">
<title>{title}</title>
<style>html,body{{margin:0;height:100%;}}#graph{{position:fixed;inset:0;}}</style>
</head><body>
<div id="graph"></div>
<script id="graph-data" type="application/json">{data}</script>
<script id="graph-colourings" type="application/json">{colourings}</script>
<script>{bundle}</script>
<script>
window.__graphTimings = window.__graphTimings || {{}};
window.__graphTimings.dataReceived = performance.now();
window.__graphView = GraphView.mount(document.getElementById("graph"),
  JSON.parse(document.getElementById("graph-data").textContent),
  {{color: {color}, colourings: JSON.parse(document.getElementById("graph-colourings").textContent)}});
</script>
</body></html>
"""


_SCRIPT_SAFE = (("&", "\\u0026"), ("<", "\\u003c"), (">", "\\u003e"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029"))


def script_json(value: object) -> str:
    """JSON safe inside a <script> element, whatever its strings hold: '<', '>' and '&' written as \\u003c,
    \\u003e and \\u0026 (so no '</script', '<!--' or '<script' can reach the HTML tokenizer, which would
    close the element or enter its escaped states and swallow the next script), and the line separators
    U+2028/2029 escaped. These characters occur only inside JSON strings, where the escapes mean the same."""
    text = msgspec.json.encode(value).decode()
    for character, escape in _SCRIPT_SAFE:  # str.replace, one pass each: four times faster than str.translate
        text = text.replace(character, escape)
    return text


def _interned(values: list[str]) -> tuple[list[str], list[int]]:
    table: dict[str, int] = {}
    indices = [table.setdefault(v, len(table)) for v in values]
    return list(table), indices


def browser_data(view: GraphView) -> dict[str, object]:
    """The view in the renderer's compact form: columns instead of records, repeated strings (op types,
    dtypes, edge labels) as indices into a table. A 30,000-node view is a quarter of its record form."""
    nodes, edges, groups = view.nodes, view.edges, view.groups
    ops, op_index = _interned([n.op for n in nodes])
    dtypes, dtype_index = _interned([n.dtype for n in nodes])
    labels, label_index = _interned([e.label for e in edges])
    return {
        "name": view.name,
        "nodeCount": view.node_count,
        "notes": view.notes,
        "ops": ops,
        "dtypes": dtypes,
        "labels": labels,
        "n": {
            "op": op_index,
            "name": [n.name for n in nodes],
            "attrs": [n.attrs for n in nodes],
            "group": [n.group for n in nodes],
            "dtype": dtype_index,
            "folded": [[n.id, f.name, f.shape, f.dtype, f.stats] for n in nodes for f in n.folded],
        },
        "e": {
            "s": [e.source for e in edges],
            "t": [e.target for e in edges],
            "tensor": [e.tensor for e in edges],
            "label": label_index,
        },
        "g": {
            "name": [g.name for g in groups],
            "parent": [g.parent for g in groups],
            "kind": [g.kind for g in groups],
            "count": [g.count for g in groups],
            "repeat": [g.repeat for g in groups],
            "owner": [g.owner for g in groups],
        },
    }


def graph_page(view: GraphView, bundle: str, color: str = "op", colourings: dict[str, Colouring] | None = None) -> str:
    """The page: ``bundle`` is the renderer (ui/graph_component/dist/graph.js), ``color`` the colour shown
    first: op, dtype, or a name in ``colourings`` (core.graph.colourings: provider, level, latency)."""
    colourings = colourings or {}
    if color not in COLOURS and color not in colourings:
        raise ValueError(f"colour by {color!r}? choose one of {', '.join([*COLOURS, *colourings])}")
    return _PAGE.format(
        colourings=script_json({name: colouring_json(c) for name, c in colourings.items()}),
        title=html.escape(f"{view.name} · graph"),
        data=script_json(browser_data(view)),
        bundle=bundle.replace("</script", "<\\/script"),
        color=script_json(color),
    )
