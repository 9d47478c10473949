"""The graph view as a Streamlit component (``st.components.v2``): the canvas renderer of ui/graph_component
(its committed bundle, read at import, nothing fetched) drawing a core.graph GraphView, with more colour modes
from the pages (provider, what the optimizer did, latency) and the selected node sent back to Python.

Two elements make one graph, so that the graph is sent only when it changes:

- the view, whose data is bytes: a one-line JSON header (key, digest, height), then the graph and colourings as
  JSON. A rerun with the same bytes costs a reference to the browser's cached copy (Streamlit caches element
  messages of 10 kB and more), and the mounted view stays as it is: layout, zoom, open groups;
- the control, a few bytes of JSON (colour, selected), sent every rerun: a change there recolours the view or
  jumps to a node without resending or re-laying-out the graph.

Every string from the model reaches the page as canvas text or ``textContent``, never as HTML.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import msgspec
import streamlit as st

from core.graph import GraphView
from core.graph.colourings import Colouring, colouring_json
from core.graph.page import browser_data, panel_words
from core.i18n import language

__all__ = ["BUNDLE", "Colouring", "graph_canvas", "graph_payload"]

BUNDLE = Path(__file__).resolve().parent / "graph_component" / "dist" / "graph.js"  # `make graph-bundle`

_VIEW_JS = BUNDLE.read_text(encoding="utf-8") + "\nexport default (c) => GraphView.streamlitComponent(c);\n"

# What Python wants shown (colour, selected), recorded for the view with that key and applied to it when it is
# mounted (src/streamlit.js: want).
_CONTROL_JS = """
export default function (component) {
  const data = component.data || {};
  const reg = (window.__graphCanvas ||= { views: new Map(), wanted: new Map() });
  reg.wanted.set(data.key, data);
  const view = reg.views.get(data.key);
  if (view) view.want(data);
}
"""

_view = st.components.v2.component("onnx_workbench.graph_canvas", js=_VIEW_JS)
_control = st.components.v2.component("onnx_workbench.graph_canvas_control", js=_CONTROL_JS)

_CACHE = "_graph_canvas_payloads"  # session state: key -> (view, colourings, height, payload)


def graph_payload(view: GraphView, key: str, colourings: dict[str, Colouring], height: int) -> bytes:
    """The view element's data: a JSON header line {key, digest, height}, then {graph, colourings, words} as JSON
    (the colourings' and the view's words in the reader's language)."""
    body = msgspec.json.encode(
        {
            "graph": browser_data(view),
            "colourings": {n: colouring_json(c) for n, c in colourings.items()},
            "words": panel_words(),
        }
    )
    digest = hashlib.blake2b(body, digest_size=16).hexdigest()
    return msgspec.json.encode({"key": key, "digest": digest, "height": height}) + b"\n" + body


def _payload(view: GraphView, key: str, colourings: dict[str, Colouring], height: int) -> bytes:
    """graph_payload, kept in the session while the same view, colourings, height and language are drawn under
    ``key``: a rerun neither rebuilds nor re-encodes it."""
    cache: dict[str, tuple[GraphView, dict[str, Colouring], tuple[int, str], bytes]]
    cache = st.session_state.setdefault(_CACHE, {})
    kept = cache.get(key)
    if kept is not None and kept[0] is view and kept[2] == (height, language()) and kept[1] == colourings:
        return kept[3]
    payload = graph_payload(view, key, colourings, height)
    cache[key] = (view, dict(colourings), (height, language()), payload)
    return payload


def _ignore() -> None:
    """The selection is read from the component's result; nothing to do when it changes."""


def graph_canvas(
    view: GraphView,
    *,
    key: str,
    colourings: dict[str, Colouring] | None = None,
    colour: str = "op",
    selected: str = "",
    height: int = 640,
) -> str | None:
    """Draw ``view``; the name of the node the person selected (clicked or found by search), or None.

    ``colour`` is the colour mode shown (op, dtype or a name in ``colourings``), ``selected`` a node to select
    and centre on (its groups opened). Both are applied when they change from one run to the next, so the
    person's own clicks and colour switch are kept across reruns that do not change them."""
    colourings = colourings or {}
    if colour not in ("op", "dtype") and colour not in colourings:
        raise ValueError(f"colour by {colour!r}? choose op, dtype or one of {', '.join(colourings) or 'no colouring'}")
    with st.container(gap=None):
        result = _view(
            key=key,
            data=_payload(view, key, colourings, height),
            default={"selected": None},
            height="content",
            on_selected_change=_ignore,
        )
        _control(key=f"{key}-control", data={"key": key, "colour": colour, "selected": selected}, height="content")
    name = result.get("selected")
    return name if isinstance(name, str) and name else None
