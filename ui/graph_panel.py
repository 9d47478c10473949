"""The current model's graph on a page: the graph view (core.graph, drawn by ui.graph_canvas), the selected
node's details below it, and the selection in the page's address (``?node=NAME``), so a link opens on it."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.graph import GraphView, ViewNode
from core.graph.colourings import Colouring, by_index
from core.graph.records import GraphRequest
from core.i18n import _, ngettext, number, pgettext
from core.jobs import GRAPH
from core.model import ModelRecord
from core.notes import say_all
from ui import session
from ui.graph_canvas import graph_canvas
from ui.jobs import AHEAD_KEPT_S, run, start
from ui.text import escaped_frame, md_escape

__all__ = ["MAX_VIEW_NODES", "by_index", "draw_graph", "graph_of", "node_card", "start_graph"]

MAX_VIEW_NODES = 100_000  # larger graphs are listed in the node tables, not drawn
# beyond this, two workers reading the model side by side would hold it twice: the layout waits its turn
START_AHEAD_MAX_BYTES = 256 * 2**20


def start_graph(record: ModelRecord, ahead: bool = False) -> None:
    """Start laying out ``record``'s graph in a worker of its own while the page waits on its first job, which
    does not need it (``graph_of`` later waits on it): on two cores the 30,003-node model's Decode takes the
    longer of the two jobs (1.5 and 1.8 s) rather than both. Not for a model so large that two workers reading
    it at once would hold its weights twice. ``ahead``: for the next step, while this page is read (once, its
    result kept as long as a job started ahead)."""
    if (record.node_count or 0) <= MAX_VIEW_NODES and record.size_bytes <= START_AHEAD_MAX_BYTES:
        kept = AHEAD_KEPT_S if ahead else None
        start(GRAPH, GraphRequest(path=record.path), model=record.id, once=ahead, keep_s=kept)


def graph_of(record: ModelRecord) -> GraphView | None:
    """The graph view of ``record`` (made in the worker, kept in the session); None when the graph is too large
    to draw (the page says so)."""
    if (record.node_count or 0) > MAX_VIEW_NODES:
        st.warning(
            _("The graph has {count} nodes, too many to draw ({limit} at most); the node table lists them all.").format(
                count=number(record.node_count or 0), limit=number(MAX_VIEW_NODES)
            )
        )
        return None
    label = _("Laying out the graph of '{name}'").format(name=record.name)
    return run(GRAPH, GraphRequest(path=record.path), label, model=record.id, reuse=True)


def draw_graph(
    view: GraphView, key: str, colourings: dict[str, Colouring] | None = None, colour: str = "op"
) -> ViewNode | None:
    """Draw ``view``; the node the person selected, or the one the address names."""
    by_name = {n.name: n for n in view.nodes}
    wanted = session.page_param("node")
    wanted = wanted if wanted in by_name else ""
    clicked = graph_canvas(view, key=key, colourings=colourings, colour=colour, selected=wanted)
    name = clicked or wanted
    session.set_page_param("node", name)  # a reload or a link opens on the same node
    said = [
        ngettext("{count} node", "{count} nodes", view.node_count).format(count=number(view.node_count))
        + (
            _(" in {count} groups (they open with a click)").format(count=number(len(view.groups)))
            if view.groups
            else ""
        )
    ]
    if view.folded_constants:
        said.append(
            _("{count} Constant values folded into their consumers").format(count=number(view.folded_constants))
        )
    if view.folded_identities:
        said.append(
            _("{count} Identity nodes that pass on a weight folded into their consumers (listed below)").format(
                count=number(len(view.folded_identities))
            )
        )
    lesson = _(
        "{counts}. Scroll to zoom, drag to pan, click a node for its details, or find one by name or op type; "
        "weights and constants are listed inside the node that uses them."
    )
    notes = " ".join(md_escape(n, 300) for n in say_all(view.notes))
    st.caption(lesson.format(counts=pgettext("list", ", ").join(said)) + (" " + notes if notes else ""))
    if view.folded_identities:
        count = number(len(view.folded_identities))
        with st.expander(_("{count} Identity nodes of weights, folded").format(count=count)):
            st.caption(
                _(
                    "Each passes a weight on unchanged under a new name (exporters leave them for weights that "
                    "share values), so the graph shows it inside the nodes that read it, as a weight; ONNX "
                    "Runtime removes them too."
                )
            )
            st.table(
                escaped_frame(pd.DataFrame({_("Identity node: input → output"): view.folded_identities})),
                hide_index=True,
            )
    return by_name.get(name)


def _place(view: GraphView, node: ViewNode) -> str:
    chain = []
    group = node.group
    while group >= 0:
        chain.append(view.groups[group].name)
        group = view.groups[group].parent
    return " › ".join(reversed(chain))


def node_card(view: GraphView, node: ViewNode) -> None:
    """What the selected node is: its op, where it sits in the hierarchy, its settings, what flows in and out."""
    types = {e.tensor: e.label for e in view.edges if e.label}
    where = _place(view, node)
    st.markdown(
        f"**{md_escape(node.name, 200)}**: {md_escape(node.op, 80)}"
        + (_(" from {domain}").format(domain=md_escape(node.domain, 80)) if node.domain else "")
        + (_(", in {place}").format(place=md_escape(where, 300)) if where else "")
    )
    if node.attrs:
        st.caption(_("Settings: {attributes}").format(attributes=md_escape(node.attrs, 400)))
    folded = {f.name: f for f in node.folded}
    rows = [
        {
            _("role"): role,
            _("tensor"): tensor,
            _("type"): (f"{folded[tensor].dtype} {folded[tensor].shape}".strip() if tensor in folded else "")
            or types.get(tensor, ""),
            _("values"): (folded[tensor].stats or _("a weight or constant, drawn inside the node"))
            if tensor in folded
            else "",
        }
        for role, names in ((_("input"), node.inputs), (_("output"), node.outputs))
        for tensor in names
        if tensor
    ]
    if rows:
        st.table(escaped_frame(pd.DataFrame(rows)), hide_index=True)
