"""Names from a model or the history reach plotly, which renders a subset of HTML: every figure shows them as
text, never as links, styles or images."""

from __future__ import annotations

import pandas as pd

from ui.charts import compare_figure

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


def test_the_dashboards_trend_is_text_in_names_and_hovers() -> None:
    from ui.dashboard_view import trend_figure

    frame = pd.DataFrame(
        {"when": pd.to_datetime(["2026-11-01", "2026-11-08"], utc=True), "series": [HOSTILE, HOSTILE],
         "median_ms": [1.0, 1.5], "low_ms": [0.9, 1.4], "high_ms": [1.1, 1.6], "speedup": [2.0, 1.5],
         "version": [HOSTILE, "v2"], "owner": [HOSTILE, "bob"], "run": ["r1", "r2"]}
    )  # fmt: skip
    fig = trend_figure(frame)
    assert not _markup_left(fig)
    assert all("<a" not in str(cell) for trace in fig.data for row in trace.customdata for cell in row)


def test_log_axes_write_out_every_tick_and_no_bar_label_is_cut() -> None:
    import pandas as pd

    from ui.charts import distribution_figure, log_ticks

    assert log_ticks(2.8, 90.7) == [2.0, 5.0, 10.0, 20.0, 50.0, 100.0]  # not "5 1 2 5 10 2 5"
    assert log_ticks(60, 150) == []  # within a decade the axis's own ticks read well
    frame = pd.DataFrame({"label": ["a"] * 3, "engine": ["ort"] * 3, "ms": [2.8, 7.2, 90.7]})
    axis = distribution_figure(frame).layout.xaxis
    assert list(axis.tickvals) == [2.0, 5.0, 10.0, 20.0, 50.0, 100.0] and list(axis.ticktext)[:3] == ["2", "5", "10"]
    assert distribution_figure(frame).layout.modebar.orientation == "v"  # the toolbar down the side, not over the title


def test_the_latency_charts_markers_are_the_glyphs_its_caption_names() -> None:
    from ui.bench_view import latency_legend
    from ui.charts import LATENCY_MARKERS, latency_figure

    frame = pd.DataFrame(
        {"label": ["ORT ALL", "ORT DISABLE_ALL"], "engine": ["ort", "ort"], "median_ms": [1.0, 1.2],
         "median_low_ms": [0.9, 1.1], "median_high_ms": [1.1, 1.3], "p90_ms": [1.2, 1.4], "p99_ms": [1.3, 40.0]}
    )  # fmt: skip
    fig = latency_figure(frame)
    legend = latency_legend()
    drawn = {trace.name: list(trace.marker.symbol) for trace in fig.data if trace.name in LATENCY_MARKERS}
    assert set(drawn) == {"p90", "p99"}
    assert drawn["p90"] == ["diamond", "diamond"]
    assert drawn["p99"] == ["x-thin", "triangle-right"]  # the 40 ms p99 is past the axis: at the edge
    assert "◆ p90" in legend and "✕ p99" in legend and "▶ at the right edge" in legend
    assert next(t for t in fig.data if t.name == "p99").marker.line.width  # an x-thin without a line is invisible


def test_a_latency_bar_too_thin_for_its_value_writes_none_and_none_is_turned_on_its_side() -> None:
    from ui.charts import latency_figure

    frame = pd.DataFrame(
        {"label": ["ORT defaults", "tuned"], "engine": ["ort", "ort"], "median_ms": [1.0, 0.0378],
         "median_low_ms": [0.9, 0.0377], "median_high_ms": [1.1, 0.0379], "p90_ms": [1.2, 2.0], "p99_ms": [1.3, 2.2]}
    )  # fmt: skip
    bars = latency_figure(frame).data[0]
    assert bars.textangle == 0 and list(bars.text) == ["1 ms", ""]  # 0.0378 ms: a sliver of an axis to 2.3 ms


def test_the_dashboards_time_axis_for_one_run_spans_a_day_not_microseconds() -> None:
    from ui.dashboard_view import trend_figure

    frame = pd.DataFrame(
        {"when": pd.to_datetime(["2026-11-01 10:00"], utc=True), "series": ["ORT ALL"], "median_ms": [1.0],
         "low_ms": [0.9], "high_ms": [1.1], "speedup": [2.0], "version": ["v1"], "owner": ["ann"], "run": ["r1"]}
    )  # fmt: skip
    low, high = (pd.Timestamp(t) for t in trend_figure(frame).layout.xaxis.range)
    assert high - low == pd.Timedelta(days=1) and low < frame["when"][0] < high
