"""One colour per engine, provider and level on every chart of a page and in its graph (core.graph.palette)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from core.graph import view_graph
from core.graph.colourings import provider_colouring
from tests import builders
from ui.charts import batch_figure, latency_figure


@dataclass
class _Placed:
    main_providers: list[str]


def test_a_provider_has_the_same_hue_in_the_text_bars_and_in_the_graph_below_them() -> None:
    from core.graph.palette import PROVIDER_TEXT

    view = view_graph(builders.chain_model(4))
    placed = _Placed(["CUDAExecutionProvider", "CPUExecutionProvider", "CUDAExecutionProvider", ""])
    graph = provider_colouring(view, placed).colours
    assert graph["CPU"] != graph["CUDA"]
    assert (PROVIDER_TEXT["CPU"], PROVIDER_TEXT["CUDA"]) == ("gray", "green")  # #9C968A and #76B900 in the graph
    assert (graph["CPU"], graph["CUDA"]) == ("#9C968A", "#76B900")


def test_benchmark_colours_an_engine_alike_on_the_latency_and_the_batch_charts() -> None:
    frame = pd.DataFrame(
        {"series": ["eager", "eager", "ORT basic", "ORT basic", "ORT all", "ORT all"],
         "engine": ["eager", "eager", "ort", "ort", "ort", "ort"], "batch": [1, 4] * 3,
         "median_ms": [1.0, 3.0, 0.5, 1.5, 0.4, 1.2], "throughput": [1000, 1333, 2000, 2666, 2500, 3333]}
    )  # fmt: skip
    bars = latency_figure(
        frame.assign(label=frame["series"], median_low_ms=0.3, median_high_ms=3.1, p90_ms=3.2, p99_ms=3.3)
    )
    engine_of_bar = dict(zip(frame["engine"], bars.data[0].marker.color, strict=True))
    lines = {t.name: t.line for t in batch_figure(frame).data if t.showlegend}
    assert lines["eager"].color == engine_of_bar["eager"]
    assert lines["ORT basic"].color == lines["ORT all"].color == engine_of_bar["ort"]
    assert lines["ORT basic"].dash != lines["ORT all"].dash  # the series of one engine told apart by dash


def _luminance(colour: str) -> float:
    channels = [int(colour.lstrip("#")[i : i + 2], 16) / 255 for i in (0, 2, 4)]
    r, g, b = (c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def test_a_nodes_dark_name_reads_on_every_colour_the_graph_fills_it_with() -> None:
    """WCAG's 4.5:1 for the name the graph writes on a node, in the graph component's own ink: OpenVINO's graph
    was dark text on #0071C5 (3.1:1), a profile's hottest node on #B2182B (2.3:1)."""
    import re
    from pathlib import Path

    from core.graph.palette import DONE, ERRORS, LATENCY, PROVIDERS

    draw = (Path(__file__).parents[2] / "ui" / "graph_component" / "src" / "draw.js").read_text()
    ink = re.search(r'function boxText\([^)]*\) \{[^}]*?fillStyle = "(#[0-9a-fA-F]{6})"', draw)
    assert ink is not None
    dark = _luminance(ink.group(1))
    fills = {**PROVIDERS, **DONE, **ERRORS, **LATENCY}
    low = {name: round((_luminance(c) + 0.05) / (dark + 0.05), 2) for name, c in fills.items()}
    assert {name: ratio for name, ratio in low.items() if ratio < 4.5} == {}
