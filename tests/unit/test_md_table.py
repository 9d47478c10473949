"""The Markdown tables the model card draws (ui.text.md_table): every header and cell escaped, one cell each."""

from __future__ import annotations

import pandas as pd

from tests.app.pages import _cells
from ui.text import md_table


def test_a_cell_from_the_model_stays_one_cell_of_plain_text() -> None:
    frame = pd.DataFrame({"name": ["a|b", "[x](http://e.example)", ""], "shape": ["1×3", "<img src=x>", "*"]})
    lines = md_table(frame).splitlines()
    assert lines[0] == "| name | shape |" and lines[1] == "|---|---|" and len(lines) == 5
    assert _cells(lines[2]) == [r"a\|b", "1×3"]  # the | escaped: no third column
    assert "](http" not in lines[3] and r"\<img" in lines[3]  # no link, no HTML
    assert _cells(lines[4]) == ["", r"\*"]
