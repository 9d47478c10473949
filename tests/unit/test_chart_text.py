"""Names from a model or the history reach plotly, which renders a subset of HTML: every figure shows them as
text, never as links, styles or images."""

from __future__ import annotations

import pandas as pd

from ui.charts import compare_figure, graph_figure, histogram_figure

HOSTILE = '<a href="javascript:alert(1)">x</a><span style="color:red">y</span><img src=x>'


def _markup_left(fig) -> list[str]:  # type: ignore[no-untyped-def]
    shown = fig.to_json()
    return [tag for tag in ("<a ", "<span", "<img") if tag in shown]


def test_history_legends_and_categories_are_text() -> None:
    frame = pd.DataFrame(
        {"run": [HOSTILE, "run 2"], "configuration": [HOSTILE, "ORT ALL"], "median_ms": [1.0, 2.0], "p90_ms": [1, 2]}
    )
    fig = compare_figure(frame)
    assert not _markup_left(fig)
    assert any("&lt;a href" in str(trace.name) for trace in fig.data)


def test_graph_hover_and_labels_are_text_and_line_breaks_stay() -> None:
    nodes = pd.DataFrame(
        {"id": ["n0", "in:x"], "label": [HOSTILE, HOSTILE], "op_type": ["Relu", "input"], "x": [0.0, 0.0],
         "y": [0.0, 1.0], "weights": [0, 0]}
    )  # fmt: skip
    fig = graph_figure(nodes, pd.DataFrame({"source": ["in:x"], "target": ["n0"]}), colour_by="op_type")
    assert not _markup_left(fig)
    assert any("<br>" in "".join(trace.hovertext or []) for trace in fig.data)


def test_histogram_categories_are_text() -> None:
    assert not _markup_left(histogram_figure({HOSTILE: 3}, "ops"))


def test_log_axes_write_out_every_tick_and_no_bar_label_is_cut() -> None:
    import pandas as pd

    from ui.charts import distribution_figure, log_ticks

    assert log_ticks(2.8, 90.7) == [2.0, 5.0, 10.0, 20.0, 50.0, 100.0]  # not "5 1 2 5 10 2 5"
    assert log_ticks(60, 150) == []  # within a decade the axis's own ticks read well
    frame = pd.DataFrame({"label": ["a"] * 3, "engine": ["ort"] * 3, "ms": [2.8, 7.2, 90.7]})
    axis = distribution_figure(frame).layout.xaxis
    assert list(axis.tickvals) == [2.0, 5.0, 10.0, 20.0, 50.0, 100.0] and list(axis.ticktext)[:3] == ["2", "5", "10"]
    figure = histogram_figure({"Conv": 1_171_841, "Relu": 10}, "ops")
    assert figure.layout.xaxis.range[1] > 1_171_841 * 1.1  # room for "1,171,841" beside its bar
    assert figure.layout.modebar.orientation == "v"  # the toolbar runs down the side, not over the title
