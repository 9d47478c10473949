"""The mission's chart for a language model (ui.token_chart.token_latency_figure): each generated token's latency
against its step, ONNX Runtime and PyTorch eager on one chart in their colours, the first token (the prefill's
time) apart, the step where the tokens part marked; its words in the reader's language, a label never markup."""

from __future__ import annotations

import pandas as pd

from core.graph.palette import ENGINES
from core.i18n import using
from ui.token_chart import token_latency_figure


def _steps(label: str, engine: str, first: float, later: list[float]) -> pd.DataFrame:
    ms = [first, *later]
    return pd.DataFrame({"engine": engine, "label": label, "step": range(len(ms)), "ms": ms})


def _frame(first_ms: float = 3.0) -> pd.DataFrame:
    return pd.concat(
        [
            _steps("ONNX Runtime (ALL)", "ort", first_ms, [1.0, 1.1, 1.2, 1.3]),
            _steps("PyTorch eager", "eager", first_ms * 2, [2.0, 2.1, 2.2, 2.4]),
        ],
        ignore_index=True,
    )


def test_both_engines_are_lines_of_their_colours_over_the_decode_steps_with_the_first_token_apart() -> None:
    fig = token_latency_figure(_frame(), divergent=None)
    lines = [t for t in fig.data if t.mode == "lines+markers"]
    assert [t.name for t in lines] == ["ONNX Runtime (ALL)", "PyTorch eager"]
    assert [t.line.color for t in lines] == [ENGINES["ort"], ENGINES["eager"]]
    assert list(lines[0].x) == [1, 2, 3, 4]  # the decode steps; step 0 is the prefill's, a marker of its own
    firsts = [t for t in fig.data if t.mode == "markers+text"]
    assert [list(t.x) for t in firsts] == [[0], [0]] and not any(t.showlegend for t in firsts)
    assert fig.layout.yaxis.range[1] >= 6.0  # a first token within reach is drawn where it is
    assert fig.layout.xaxis.range[0] < 0  # and whole, not cut in half by the axis
    assert [t.name for t in fig.data if t.mode == "markers"] == ["first token (prefill)"]  # the legend's key
    assert not fig.layout.shapes  # no divergence, no mark


def test_a_slow_first_token_is_drawn_at_the_edge_with_its_value_and_the_parting_step_is_marked() -> None:
    fig = token_latency_figure(_frame(first_ms=400.0), divergent=2)
    top = fig.layout.yaxis.range[1]
    assert top < 5  # the decode steps keep the height
    firsts = [t for t in fig.data if t.mode == "markers+text"]
    assert all(t.y[0] < top for t in firsts) and firsts[0].text[0] == "first token 400 ms"
    assert fig.layout.shapes[0].x0 == 2 and "part at step 2" in fig.layout.annotations[0].text


def test_the_chart_speaks_chinese_and_a_hostile_label_stays_text() -> None:
    with using("zh"):
        fig = token_latency_figure(_frame(first_ms=400.0), divergent=1)
    assert fig.layout.xaxis.title.text == "生成的词元（0：第一个，来自预填充）"
    assert "毫秒" in fig.layout.yaxis.title.text and "毫秒" in fig.data[1].text[0]
    assert "第 1 步" in fig.layout.annotations[0].text
    hostile = _steps('<a href="javascript:alert(1)">x</a>', "ort", 2.0, [1.0, 1.0])
    shown = token_latency_figure(hostile).to_json()
    assert "<a " not in shown and "&lt;a href" in shown


def test_engines_far_apart_share_a_log_axis_so_the_faster_is_no_line_on_the_floor() -> None:
    frame = pd.concat(
        [
            _steps("ONNX Runtime (ALL)", "ort", 0.2, [0.05, 0.06, 0.05]),
            _steps("PyTorch eager", "eager", 9.0, [2.0, 2.5, 3.0]),
        ],
        ignore_index=True,
    )
    axis = token_latency_figure(frame).layout.yaxis
    assert axis.type == "log" and "log scale" in axis.title.text
    assert 10 ** axis.range[0] < 0.05 and 10 ** axis.range[1] >= 9.0  # both engines, and the first tokens, in view
    assert list(axis.ticktext)[:3] == ["0.05", "0.1", "0.2"]  # each tick written out, as the Benchmark's charts
    assert token_latency_figure(_frame()).layout.yaxis.type != "log"  # 1 ms beside 2 ms: a plain axis from 0
