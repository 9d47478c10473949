"""Decode: the ONNX protobuf taken apart, from the first bytes to the whole graph."""

from __future__ import annotations

import streamlit as st

from core.graph.colourings import latency_colouring
from core.i18n import _
from core.jobs import PROFILE
from core.notes import say
from ui import jobs
from ui.decode_view import (
    decoded_json,
    decoded_with_graph,
    header_section,
    model_section,
    node_details,
    nodes_section,
    weights_section,
)
from ui.graph_panel import draw_graph, graph_of, node_card
from ui.needs import next_steps, require_onnx
from ui.text import md_escape

st.title(_("Decode"))
st.markdown(
    _(
        "An `.onnx` file is one protobuf message, a **ModelProto**: a few fields that describe the model, then a "
        "**GraphProto** holding the inputs, the nodes (one per operator call) and the weights. This page reads it "
        "the way a runtime does, from the first bytes to the last node, without loading external weights."
    )
)

record = require_onnx("decode")

label = _("Decoding '{name}'").format(name=record.name)
decoded = decoded_with_graph(record, label)  # and section 3's graph laid out beside it
for problem in decoded.problems:
    st.warning(md_escape(say(problem), 600))

st.header(_("1. The first bytes"), anchor="bytes")
st.markdown(
    _(
        "Protobuf writes each field as a **tag** (field number × 8 + wire type) and then its value: a varint for "
        "numbers, or a length and the bytes for strings and nested messages. So `08 0A` is field 1 (`ir_version`), "
        "wire type 0 (varint), value 10."
    )
)
header_section(decoded)

st.header(_("2. The model"), anchor="model")
st.markdown(
    _(
        "The ModelProto says which IR version and operator sets (opsets) the graph needs, who produced it, and "
        "what goes in and out. Symbolic dimensions (like `batch`) are sizes chosen at run time."
    )
)
model_section(decoded)

st.header(_("3. The graph"), anchor="graph")
st.markdown(
    _(
        "Each box is one operator call with its key settings (a Conv's kernel, strides and groups); an edge is a "
        "tensor, labelled with its type and shape where known, flowing from the node that makes it to the nodes "
        "that use it. Weights and constants are listed inside the node that uses them, not drawn as nodes. Nodes "
        "sit in the groups their names' scopes make (`/encoder/layer.0/attn/...`), which open with a click. An If, "
        "Loop or Scan holds its bodies, and a call of a local function its body: click ▸ on the node (or "
        "double-click it) and they open inside it. Colour by op type or dtype, or by the last profile's latency "
        "once there is one; a node's details list its weights with their statistics."
    )
)
view = graph_of(record)
if view is not None:
    profiled = jobs.kept(PROFILE, record.id)
    colourings = {"latency": latency_colouring(view, profiled)} if profiled is not None else {}
    if profiled is not None:
        st.caption(
            _("Latency from the profile at {level}: {headline}").format(
                level=profiled.level, headline=md_escape(say(profiled.headline), 300)
            )
        )
    selected = draw_graph(view, key=f"graph_{record.id[:12]}", colourings=colourings)
    if selected is not None:
        with st.container(border=True):
            node_card(view, selected)
            if selected.index >= 0:
                node_details(decoded, selected.index)

st.header(_("4. The nodes"), anchor="nodes")
st.markdown(
    _(
        "Every node with its inputs, outputs and attributes (the operator's settings, such as a Conv's kernel "
        "shape). Nodes of subgraphs and local functions are listed with the graph they belong to."
    )
)
nodes_section(decoded)

st.header(_("5. The weights"), anchor="weights")
st.markdown(
    _(
        "Weights are stored as initializers (or, in some exporters, as Constant nodes), inline in the file or in an "
        "external data file beside it. Their sizes show where a model's bytes go."
    )
)
weights_section(decoded)

with st.expander(_("The text form (onnx.printer; large weight values left out)")):
    cut = "\n… " + _("(cut here; download for the rest)")
    st.text(decoded.text[:200_000] + (cut if len(decoded.text) > 200_000 else ""))  # no highlighter to load
left, right = st.columns(2)
# downloads are made when clicked, not on every run: a large model's JSON is tens of megabytes
left.download_button(
    _("Download the text form"), decoded.text.encode, f"{record.name}.onnx.txt", "text/plain", on_click="ignore"
)
right.download_button(
    _("Download the decoded model (JSON)"),
    lambda: decoded_json(decoded),
    f"{record.name}.decoded.json",
    "application/json",
    on_click="ignore",
)

next_steps("partition", "benchmark", "quantize")
