"""A test-only Streamlit script for tests/e2e/test_graph_component_e2e.py: ui.graph_canvas drawing a 303-node
scoped model with a provider-like colouring, the selection written back; ``?open=NAME`` (or the button "Show
layer.11") opens on a node, ``?colour=provider`` colours by the colouring."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import streamlit as st

from core.graph import GraphView, view_graph
from core.graph.colourings import Colouring
from tests.graph_models import transformer_like
from ui.graph_canvas import graph_canvas


@st.cache_resource
def _view() -> GraphView:
    return view_graph(transformer_like(15), name="scoped")


view = _view()
# "providers": the attention MatMuls on a GPU, Softmax on the CPU, the rest not named (the neutral "—")
keys = {n.name: "CUDA" for n in view.nodes if "/attn/" in n.name and n.op == "MatMul"}
keys |= {n.name: "CPU" for n in view.nodes if n.op == "Softmax"}
providers = Colouring(title="execution provider", keys=keys, order=["CUDA", "CPU"], colours={"CPU": "#ffc078"})
colour = st.query_params.get("colour", "op")
st.button("Rerun")
opening = st.query_params.get("open", "")
if st.button("Show layer.11"):
    opening = "/encoder/layer.11/mlp/act/Sigmoid"
picked = graph_canvas(
    view,
    key="graph",
    colourings={"provider": providers},
    colour=colour,
    selected=opening,
    height=560,
)
st.write(f"selected: {picked}")
