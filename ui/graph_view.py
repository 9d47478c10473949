"""The interactive graph: pan, zoom, click a node. Large graphs are shown a window of layers at a time, or
as the neighbourhood of one node, and the page says so. Later pages pass a colour per node (a provider)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.runtime.graphview import GraphLayout, neighbourhood
from ui import session
from ui.charts import graph_figure

__all__ = ["show_graph", "FULL_GRAPH_LIMIT"]

FULL_GRAPH_LIMIT = 400  # nodes drawn at once before the view pages or focuses


def _frames(layout: GraphLayout, colours: dict[str, str] | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    nodes = pd.DataFrame(
        {
            "id": [n.id for n in layout.nodes],
            "label": [n.label for n in layout.nodes],
            "op_type": [n.op_type for n in layout.nodes],
            "x": [n.x for n in layout.nodes],
            "y": [n.y for n in layout.nodes],
            "layer": [n.layer for n in layout.nodes],
            "weights": [n.weights for n in layout.nodes],
        }
    )
    nodes["colour"] = nodes["id"].map(colours) if colours else nodes["op_type"]
    nodes["colour"] = nodes["colour"].fillna(nodes["op_type"])
    edges = pd.DataFrame(
        {
            "source": [e.source for e in layout.edges],
            "target": [e.target for e in layout.edges],
            "tensor": [e.tensor for e in layout.edges],
        }
    )
    return nodes, edges


def _clicked(state: object) -> str | None:
    """The node id in a plotly chart's selection state, if a node was clicked."""
    try:
        points = state["selection"]["points"]  # type: ignore[index]
    except (KeyError, TypeError):
        return None
    for point in points:
        node_id = point.get("customdata")
        if isinstance(node_id, list):
            node_id = node_id[0] if node_id else None
        if node_id:
            return str(node_id)
    return None


def show_graph(
    layout: GraphLayout, key: str, colours: dict[str, str] | None = None, colour_label: str = "op type"
) -> str | None:
    """Draw ``layout`` and return the id of the node the user clicked (kept across reruns), if any."""
    nodes, edges = _frames(layout, colours)
    selected_key, version_key = f"{key}_selected", f"{key}_version"
    # The click arrives in the chart's widget state before the chart is drawn again: read it first. Then the
    # chart gets a fresh key, so it starts with no selection: with a point selected, plotly takes the next
    # click on another point as "clear the selection", and the user would have to click twice.
    version = st.session_state.get(version_key, 0)
    clicked = _clicked(st.session_state.get(f"{key}_{version}"))
    if clicked and clicked in set(nodes["id"]):
        st.session_state[selected_key] = clicked
        version += 1
        st.session_state[version_key] = version
    if selected_key not in st.session_state and session.page_param("node") in set(nodes["id"]):
        st.session_state[selected_key] = session.page_param("node")  # a link to this node, or a reload
    selected = st.session_state.get(selected_key)
    session.set_page_param("node", selected or "")
    if st.checkbox("Hide Constant nodes (they only hold values)", value=True, key=f"{key}_hide_constants"):
        nodes = nodes[nodes["op_type"] != "Constant"]
    operators = int((~nodes["op_type"].isin(["input", "output"])).sum())
    shown = nodes
    if len(nodes) > FULL_GRAPH_LIMIT:
        mode = st.radio(
            f"The graph has {operators:,} nodes in {layout.layers:,} layers; drawing all of them at once would be "
            "unreadable. Show:",
            ["a window of layers", "the neighbourhood of one node"],
            horizontal=True,
            key=f"{key}_mode",
        )
        if mode == "a window of layers":
            span = max(1, int(layout.layers * FULL_GRAPH_LIMIT / len(nodes)))
            start = st.slider(
                "First layer",
                0,
                max(layout.layers - span, 0),
                0,
                key=f"{key}_start",
                help=f"{span} layers are drawn at a time",
            )
            shown = nodes[(nodes["layer"] >= start) & (nodes["layer"] < start + span)]
            st.caption(
                f"Showing layers {start}–{start + span - 1} of {layout.layers} ({len(shown):,} of "
                f"{len(nodes):,} drawn nodes, inputs and outputs included). Move the slider to walk down."
            )
        else:
            options = nodes[~nodes["op_type"].isin(["input", "output"])]
            labels = dict(zip(options["id"], options["label"] + "  (" + options["op_type"] + ")", strict=False))
            ids = list(labels)
            centre = st.selectbox(
                "Centre node",
                ids,
                index=ids.index(selected) if selected in ids else 0,
                format_func=lambda i: labels[i],
                key=f"{key}_centre",
            )
            radius = st.slider("Radius (edges)", 1, 8, 3, key=f"{key}_radius")
            keep = neighbourhood(layout, centre, radius)
            shown = nodes[nodes["id"].isin(keep)]
            st.caption(
                f"Showing the {len(shown):,} nodes within {radius} edges of the centre node, of {len(nodes):,} in all."
            )
    figure = graph_figure(
        shown.rename(columns={"colour": colour_label}), edges, colour_by=colour_label, selected=selected
    )
    st.plotly_chart(
        figure,
        key=f"{key}_{version}",
        on_select="rerun",
        selection_mode=("points",),
        config={"scrollZoom": True, "displaylogo": False},
    )
    st.caption("Drag to pan, scroll or use the toolbar to zoom, click a node to see its details.")
    return selected
