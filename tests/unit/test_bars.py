"""Bars drawn as text (ui.bars): a provider keeps its hue beside the graph, and model names stay text."""

from __future__ import annotations

import re

from core.graph.palette import PROVIDER_TEXT, PROVIDERS
from ui.bars import BAR_WIDTH, COLOURS, bar_table, stacked_bar_table


def test_every_provider_of_the_graphs_palette_has_a_text_colour_streamlit_draws() -> None:
    assert set(PROVIDER_TEXT) == set(PROVIDERS) - {"runs nowhere"}
    assert set(PROVIDER_TEXT.values()) <= set(COLOURS)


def test_providers_keep_their_colour_on_every_row_two_alike_are_told_apart_and_nowhere_is_faint() -> None:
    rows = [
        ("this machine", {"TensorRT": 40, "CUDA": 10, "CPU": 2}),
        ("NNAPI (simulated)", {"CPU": 30, "runs nowhere": 22}),
    ]
    table = stacked_bar_table(rows, ["Partition", "nodes per provider"], colours=PROVIDER_TEXT, faint="runs nowhere")
    first, second = table.splitlines()[2:]
    assert ":green[TensorRT] 40" in first and ":gray[CPU] 2" in first
    assert ":green[CUDA]" not in first and ":blue[CUDA] 10" in first  # green was TensorRT's: the next free colour
    assert ":gray[CPU] 30" in second  # the same colour on every row
    assert second.endswith(":gray[" + "█" * 14 + "]:gray[" + "░" * 10 + "] |")  # nowhere: light blocks


def _bar(line: str) -> str:
    """A row's bar as a person sees it: its blocks, colours taken out."""
    return re.sub(r":\w+\[([^\]]*)\]", r"\1", line.rsplit("|", 2)[1].strip())


def test_bars_of_one_total_end_together_with_no_gap_inside() -> None:
    """The sample transformer: 103 nodes on every row, split otherwise. An eighth of a block drawn between two
    parts left a gap inside the bar, and each part rounded on its own ended the rows at different lengths."""
    rows = [
        ("this machine", {"CPU": 103}),
        ("NNAPI (simulated)", {"NNAPI": 95, "CPU": 8}),
        ("CoreML (simulated)", {"CoreML": 97, "CPU": 6}),
        ("somewhere", {"CPU": 101, "NNAPI": 1, "runs nowhere": 1}),
    ]
    table = stacked_bar_table(rows, ["Partition", "nodes per provider"], colours=PROVIDER_TEXT, faint="runs nowhere")
    bars = [_bar(line) for line in table.splitlines()[2:]]
    assert [len(b) for b in bars] == [BAR_WIDTH] * 4
    assert all(set(b) <= {"█", "░"} for b in bars)  # no eighth of a block anywhere inside
    assert bars[3].endswith("█░") and bars[3].count("░") == 1  # a part of one node still shows
    half = _bar(stacked_bar_table([("a", {"CPU": 2}), ("b", {"CPU": 1, "CUDA": 1})], ["a", "b"]).splitlines()[3])
    assert len(half) == BAR_WIDTH


def test_a_bars_figures_are_right_aligned_and_its_names_left() -> None:
    table = bar_table([("Conv", [12, 3]), ("Relu", [2, 0])], ["op", "nodes", "rewrites"])
    assert table.splitlines()[1] == "|---|---:|---:|---|"


def test_a_part_named_by_the_model_is_escaped() -> None:
    table = stacked_bar_table([("<b>x</b>", {"**CPU**": 1})], ["a", "b"])
    assert "<b>" not in table and "\\*\\*CPU\\*\\*" in table
