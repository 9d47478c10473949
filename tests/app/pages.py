"""Setting up a page for an AppTest: a fresh session, an upload, a switch to the page, and what the page says."""

from __future__ import annotations

import re
from collections.abc import Iterable

import pandas as pd
from streamlit.testing.v1 import AppTest

from tests.app.conftest import APP

__all__ = ["card_figures", "md_tables", "open_page", "run_benchmark", "shown", "texts", "upload"]


def upload(at: AppTest, name: str, data: bytes) -> AppTest:
    """Upload one file on the Model page, as a person would."""
    at.file_uploader(key="uploads").set_value((name, data, "application/octet-stream")).run()
    return at


def open_page(
    page: str | None = None, model: tuple[str, bytes] | None = None, timeout: float = 180, lang: str = ""
) -> AppTest:
    """A fresh session of the app (opened at ``?lang=`` when given), with ``model`` (name, bytes) uploaded when
    given, then on ``page`` (e.g. "decode"); the page must have run without an exception."""
    at = AppTest.from_file(APP, default_timeout=timeout)
    if lang:
        at.query_params["lang"] = lang
    at.run()
    if model is not None:
        upload(at, *model)
    if page is not None:
        at.switch_page(f"app_pages/{page}.py").run()
    assert not at.exception, at.exception
    return at


def shown(at: AppTest, values: Iterable[str], labels: Iterable[str] = ()) -> list[str]:
    """The words of the page's elements: the value of each of the kinds ``values`` ("markdown", "caption", …), in
    that order, then the label of each of the kinds ``labels`` ("button", "tabs", …)."""
    return [e.value for kind in values for e in getattr(at, kind)] + [
        e.label for kind in labels for e in getattr(at, kind)
    ]


def texts(at: AppTest) -> str:
    """What the reader sees in headings, text, captions and warnings, with markdown escapes taken out."""
    return "\n".join(shown(at, ("subheader", "markdown", "caption", "warning"))).replace("\\", "")


_CELL_BORDER = re.compile(r"(?<!\\)\|")  # a | not escaped
_RULE = re.compile(r"^\|(\s*:?-+:?\s*\|)+$")


def _cells(line: str) -> list[str]:
    return [c.strip() for c in _CELL_BORDER.split(line.strip())[1:-1]]


def md_tables(at: AppTest) -> list[pd.DataFrame]:
    """The Markdown tables the page wrote (the model card draws its tables so), in order, each as a frame of its
    cells as written (escaped, as st.table's were)."""
    found = []
    for element in at.markdown:
        lines = element.value.splitlines()
        for i in range(len(lines) - 1):
            if lines[i].startswith("|") and _RULE.match(lines[i + 1].strip()):
                rows = []
                for line in lines[i + 2 :]:
                    if not line.startswith("|"):
                        break
                    rows.append(_cells(line))
                found.append(pd.DataFrame(rows, columns=_cells(lines[i])))
    return found


def card_figures(at: AppTest) -> dict[str, str]:
    """The model card's figures (size, parameters, opset, nodes): label → value, escapes taken out."""
    figures = md_tables(at)[0]
    return {str(k).replace("\\", ""): str(v).replace("\\", "") for k, v in figures.iloc[0].items()}


def run_benchmark(at: AppTest, iterations: int = 30, warmup: int = 2, batches: list[int] | None = None) -> None:
    """On the Benchmark page: export a PyTorch model first (one click), then a short run at one thread (at
    ``batches`` when given)."""
    at.switch_page("app_pages/benchmark.py").run()
    if any(b.key == "export_defaults" for b in at.button):
        at.button(key="export_defaults").click().run()
    at.number_input(key="bench_iters").set_value(iterations)
    at.number_input(key="bench_warmup").set_value(warmup)
    at.multiselect(key="bench_threads").set_value([1])
    if batches is not None:
        at.multiselect(key="bench_batches").set_value(batches)
    next(b for b in at.button if b.label == "Run the benchmark").click()
    at.run()
    assert not at.exception
