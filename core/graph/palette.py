"""The app's colours: one colour per engine, execution provider, optimization level and what the optimizer did,
read by the plotly charts (ui.charts) and by the graph view's colourings (core.graph.colourings, which pass them
to the graph component), so a thing keeps its colour on every chart and in the graph of the same page."""

from __future__ import annotations

from typing import NamedTuple

from core.i18n import N_

__all__ = [
    "DONE",
    "ENGINES",
    "ERRORS",
    "ERROR_BINS",
    "FIRST_DIVERGENCE",
    "FIXED",
    "LATENCY",
    "LATENCY_BINS",
    "LEVELS",
    "NOT_TIMED",
    "NOWHERE",
    "PROVIDERS",
    "PROVIDER_TEXT",
    "Bin",
    "engine_colour",
]


class Bin(NamedTuple):
    """A bin of a heat scale: the least value a node in it has (a share of the call, a relative error), its name in
    the legend and its colour."""

    low: float
    label: str
    colour: str


NOWHERE = N_("runs nowhere")  # a node no provider took

# the two engines Benchmark measures (core.bench's engine field), on every chart of the page
ENGINES = {"eager": "#EE4C2C", "ort": "#005CED"}
# execution providers, by the short names core.runtime.ort.short_name gives. Every colour the graph fills a node
# with is light enough for the node's dark name to read on it (4.5:1, WCAG AA): OpenVINO's #0071C5, XNNPACK's and
# WebGPU's dark shades left it at 2-3:1
PROVIDERS = {
    "CPU": "#9C968A",  # the warm grey of Streamlit's gray text, which draws its bars (PROVIDER_TEXT)
    "CUDA": "#76B900",
    "TensorRT": "#3A9F3F",
    "NNAPI": "#3DDC84",
    "CoreML": "#FF9500",
    "OpenVINO": "#2B95E8",
    "DirectML": "#7FBA00",
    "QNN": "#EF558D",
    "XNNPACK": "#BE68E2",
    "ROCm": "#F2595F",
    "MIGraphX": "#F08A5D",
    "WebGPU": "#3FB8C8",
    NOWHERE: "#E2E2E2",
}
# the same providers in bars drawn as text (ui.bars): the nearest of the few colours Streamlit's Markdown has, so a
# provider keeps its hue beside the graph; a provider with none, or whose colour another on the same bar has, takes
# the next free one there, and the nodes that run nowhere are drawn faint
PROVIDER_TEXT = {
    "CPU": "gray",
    "CUDA": "green",
    "TensorRT": "green",
    "NNAPI": "green",
    "CoreML": "orange",
    "OpenVINO": "blue",
    "DirectML": "green",
    "QNN": "red",
    "XNNPACK": "violet",
    "ROCm": "red",
    "MIGraphX": "red",
    "WebGPU": "blue",
}
# ONNX Runtime's graph optimization levels (core.partition's level keys and the names pages show)
LEVELS = {
    "disable": "#BDBDBD",
    "basic": "#9ECAE1",
    "extended": "#4292C6",
    "layout": "#08519C",
    "all": "#08306B",
}
# what the optimizer did to a node, in the legend's order
DONE = {N_("fused"): "#EE6C2A", N_("replaced"): "#F59F00", N_("layout"): "#C574DD", N_("removed"): "#ADB5BD"}
# a node's share of the call in a profile, hottest first and strongest (core.graph.colourings puts each node in its
# bin); the names are catalog entries, translated where a legend shows them
LATENCY_BINS = (
    Bin(0.20, "≥ 20 % of the call", "#EF5B5B"),
    Bin(0.05, "5–20 %", "#F4A261"),
    Bin(0.01, "1–5 %", "#FDDBC7"),
    Bin(0.0, "< 1 %", "#D1E5F0"),
)
NOT_TIMED = N_("not timed (folded or constant)")
LATENCY = {**{b.label: b.colour for b in LATENCY_BINS}, NOT_TIMED: "#BBBBBB"}
# a node's relative error against the reference in Compare, worst first and strongest; the node that brings the
# error in apart
ERROR_BINS = (
    Bin(0.1, N_("relative error ≥ 0.1"), "#EF5B5B"),
    Bin(0.01, N_("0.01–0.1"), "#F4A261"),
    Bin(0.001, N_("0.001–0.01"), "#FDDBC7"),
    Bin(0.0, N_("< 0.001"), "#D1E5F0"),
)
FIRST_DIVERGENCE = N_("the first divergence")
ERRORS = {FIRST_DIVERGENCE: "#B07CD8", **{b.label: b.colour for b in ERROR_BINS}}
# every name with a colour of its own, whatever the chart
FIXED = {"input": "#222222", "output": "#222222", **LATENCY, **PROVIDERS}


def engine_colour(engine: str) -> str:
    """The colour of a Benchmark engine ("eager", "ort"); grey for one this palette does not know."""
    return ENGINES.get(engine, "#777777")
