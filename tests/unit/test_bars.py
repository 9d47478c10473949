"""Bars drawn as text (ui.bars): a provider keeps its hue beside the graph, and model names stay text."""

from __future__ import annotations

from core.graph.palette import PROVIDER_TEXT, PROVIDERS
from ui.bars import COLOURS, bar, stacked_bar_table


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
    assert second.endswith(f":gray[{bar(30, 52)}]:gray[{'░' * len(bar(22, 52))}] |")  # nowhere: light blocks


def test_a_part_named_by_the_model_is_escaped() -> None:
    table = stacked_bar_table([("<b>x</b>", {"**CPU**": 1})], ["a", "b"])
    assert "<b>" not in table and "\\*\\*CPU\\*\\*" in table
