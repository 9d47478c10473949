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
    assert (PROVIDER_TEXT["CPU"], PROVIDER_TEXT["CUDA"]) == ("gray", "green")  # #8C96A8 and #76B900 in the graph
    assert (graph["CPU"], graph["CUDA"]) == ("#8C96A8", "#76B900")


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
