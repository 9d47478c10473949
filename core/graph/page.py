"""One self-contained HTML page of a graph view: the renderer's bundle and the data inlined, nothing fetched."""

from __future__ import annotations

import html

import msgspec

from core.graph.colourings import Colouring, colouring_json
from core.graph.records import GraphView
from core.i18n import N_, _, language_of, using
from core.notes import say_all

__all__ = ["COLOURS", "PANEL_WORDS", "browser_data", "graph_page", "panel_words", "script_json"]

COLOURS = ("op", "dtype")  # always there; a page can add colourings of its own

# Every word the graph view's own panels show (ui/graph_component/src: say(words, "…")), by its English; the
# component gets them in the reader's language (panel_words), so the one catalog translates the view too.
PANEL_WORDS = (
    N_("{name} · {count} nodes"),
    N_("Find a node by name or op"),
    N_("Colour by"),
    N_("Colour: op type"),
    N_("Colour: dtype"),
    N_("Colour: {title}"),
    N_("Fit"),
    N_("Collapse all"),
    N_("no node matches"),
    N_("op type"),
    N_("dtype"),
    N_("other"),
    N_("nodes"),
    N_("kind"),
    N_("repeated"),
    N_("click the box to open it; click an open group's title to close it"),
    N_("in"),
    N_("attributes"),
    N_("input"),
    N_("weight"),
    N_("output"),
    N_("holds"),
    N_("click ▸ at the node's right, or double-click it, to close them"),
    N_("click ▸ at the node's right, or double-click it, to open them inside the node"),
    N_("{count} nodes · {more}"),
    N_("group"),
    N_("scope"),
    N_("function"),
    N_("subgraph"),
    N_("node"),
)


def panel_words() -> dict[str, str]:
    """The graph view's words in the current language, keyed by their English (none in English: the view's own)."""
    return {word: _(word) for word in PANEL_WORDS if _(word) != word}


_PAGE = """<!doctype html>
<html lang="{lang}"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; \
style-src 'unsafe-inline'; img-src data:">
<title>{title}</title>
<style>html,body{{margin:0;height:100%;}}#graph{{position:fixed;inset:0;}}</style>
</head><body>
<div id="graph"></div>
<script id="graph-data" type="application/json">{data}</script>
<script id="graph-colourings" type="application/json">{colourings}</script>
<script id="graph-words" type="application/json">{words}</script>
<script>{bundle}</script>
<script>
window.__graphTimings = window.__graphTimings || {{}};
window.__graphTimings.dataReceived = performance.now();
window.__graphView = GraphView.mount(document.getElementById("graph"),
  JSON.parse(document.getElementById("graph-data").textContent),
  {{color: {color}, colourings: JSON.parse(document.getElementById("graph-colourings").textContent),
    words: JSON.parse(document.getElementById("graph-words").textContent)}});
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
    dtypes, edge labels) as indices into a table, its notes said in the current language. A 30,000-node view is a
    quarter of its record form."""
    nodes, edges, groups = view.nodes, view.edges, view.groups
    ops, op_index = _interned([n.op for n in nodes])
    dtypes, dtype_index = _interned([n.dtype for n in nodes])
    labels, label_index = _interned([e.label for e in edges])
    return {
        "name": view.name,
        "nodeCount": view.node_count,
        "notes": say_all(view.notes),
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


def graph_page(
    view: GraphView,
    bundle: str,
    color: str = "op",
    colourings: dict[str, Colouring] | None = None,
    language: str = "en",
) -> str:
    """The page: ``bundle`` is the renderer (ui/graph_component/dist/graph.js), ``color`` the colour shown
    first: op, dtype, or a name in ``colourings`` (core.graph.colourings: provider, level, latency); its words
    (panels, legends, title) in ``language`` (core.i18n.LANGUAGES)."""
    colourings = colourings or {}
    if color not in COLOURS and color not in colourings:
        raise ValueError(f"colour by {color!r}? choose one of {', '.join([*COLOURS, *colourings])}")
    with using(language):
        words = panel_words()
        shown = {name: colouring_json(c) for name, c in colourings.items()}
        title = _("{name} · graph").format(name=view.name)
        data = script_json(browser_data(view))
    return _PAGE.format(
        lang=language_of(language).html,
        colourings=script_json(shown),
        words=script_json(words),
        title=html.escape(title),
        data=data,
        bundle=bundle.replace("</script", "<\\/script"),
        color=script_json(color),
    )
