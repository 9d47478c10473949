"""Charts and kept notes in the reader's language: a figure's words are translated as it is drawn, and a note a
record keeps (its template and values) is said in Chinese with its values."""

from __future__ import annotations

import pandas as pd

from core.i18n import using
from core.notes import Note, note, say, significant, warning
from core.runtime.activity import QUIET, Activity
from core.runtime.harness import CUT_SHORT
from ui.charts import latency_figure, speedup_figure


def _latency() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "label": ["PyTorch eager", "ORT ALL"],
            "engine": ["eager", "ort"],
            "median_ms": [2.0, 1.0],
            "median_low_ms": [1.9, 0.95],
            "median_high_ms": [2.1, 1.05],
            "p90_ms": [2.2, 1.1],
            "p99_ms": [2.5, 40.0],
        }
    )


def test_a_latency_chart_in_chinese_has_chinese_axes_legend_and_units_and_english_in_english() -> None:
    with using("zh"):
        fig = latency_figure(_latency())
    assert fig.layout.xaxis.title.text == "每次调用的毫秒数"
    assert [t.name for t in fig.data] == ["中位数", "p90", "p99"]
    assert fig.data[0].text == ("2 毫秒", "1 毫秒")
    assert fig.data[2].text[1] == "p99 40 毫秒"  # beyond the axis: its value written beside it, in Chinese
    assert "中位数" in fig.data[0].hovertemplate
    with using("en"):
        english = latency_figure(_latency())
    assert english.layout.xaxis.title.text == "milliseconds per call"
    assert [t.name for t in english.data] == ["median", "p90", "p99"]


def test_the_speedup_chart_in_chinese() -> None:
    with using("zh"):
        speed = speedup_figure(
            pd.DataFrame({"label": ["ORT ALL"], "speedup": [2.5], "low": [2.0], "high": [3.0]}), "PyTorch eager"
        )
    assert speed.layout.xaxis.title.text == "相对 PyTorch eager 的加速比（越高越快）"


def test_a_kept_note_is_said_in_the_readers_language_with_its_values() -> None:
    quiet = Activity(seconds=2.0, cores=4, others_cores=0.1, own_cores=1.0, load_before=0.2, load_after=0.3)
    quiet.note = note(QUIET, others="0.10", cores=4)  # as the meter keeps it: its template and values
    assert quiet.note is not None
    with using("zh"):
        assert say(quiet.note) == "机器当时很空闲：其他进程只用了 4 个核心中的 0.10 个。"
        one, many = (say(warning(t, budget="5", rounds=n, measured=30, asked=200)) for t, n in
                     zip(CUT_SHORT, (1, 3), strict=True))  # fmt: skip
        assert one.startswith("5 秒的时间预算在 1 轮后用完") and many.startswith("5 秒的时间预算在 3 轮后用完")
        assert say(Note.kept("Something an older version wrote.")) == "Something an older version wrote."
    with using("en"):
        assert say(quiet.note) == "The machine was quiet: other processes used 0.10 of 4 cores."


def test_figures_are_written_to_a_few_significant_digits_the_readers_way() -> None:
    with using("en"):
        assert [significant(v) for v in (146.6302, 0.012345, 1234.5, 0.0)] == ["147", "0.0123", "1,234", "0"]
        assert significant(146.6302, 4) == "146.6"
