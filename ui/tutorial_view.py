"""The tutorial's figure beside the user's, and why they differ (core.tutorial): one call from the Benchmark page,
the Export page and the Model page's card, each shown only where it applies."""

from __future__ import annotations

import streamlit as st

from core.bench import BenchReport
from core.export import ExportReport
from core.i18n import _
from core.model import ModelRecord
from core.tutorial import SAMPLE, comparison, setup
from ui import session
from ui.text import md_escape

__all__ = ["beside", "benchmark_figures", "export_figure", "parameter_figure"]


def _is_sample() -> bool:
    """Whether the model measured is the tutorial's CNN: the sample itself, or an export of it."""
    record = session.torch_model() or session.current_model()
    return record is not None and record.format == "sample" and record.name == SAMPLE


def beside(key: str, yours: float) -> None:
    """The tutorial's figure ``key`` beside ``yours``, with the reasons they differ in an expander."""
    sentence, reasons = comparison(key, yours)
    with st.container(border=True):
        st.markdown(":material/menu_book: " + md_escape(sentence, 600))
        with st.expander(_("Why the two figures differ")):
            st.caption(_("The tutorial measured on {setup}.").format(setup=setup()))
            st.markdown("\n".join(f"- {md_escape(r, 600)}" for r in reasons))


def speedups(report: BenchReport) -> tuple[float | None, float | None]:
    """This run's eager→ORT (ALL) speedup and its ALL-against-DISABLE_ALL ratio, at its first threads and batch
    where both were measured; None where the run did not measure both sides."""
    first = report.results[0] if report.results else None
    if first is None:
        return None, None
    same = [r for r in report.results if r.threads == first.threads and r.batch == first.batch]
    eager = next((r for r in same if r.engine == "eager"), None)
    best = next((r for r in same if r.engine == "ort" and r.level == "ALL"), None)
    plain = next((r for r in same if r.engine == "ort" and r.level == "DISABLE_ALL"), None)
    speedup = eager.median_ms / best.median_ms if eager and best and best.median_ms > 0 else None
    graph = plain.median_ms / best.median_ms if plain and best and best.median_ms > 0 else None
    return speedup, graph


def benchmark_figures(report: BenchReport) -> None:
    """Benchmark of the tutorial's CNN: the eager→ORT speedup, and graph optimizations ALL against DISABLE_ALL
    when the run measured both levels. Beside another model's figures the tutorial's say nothing of it (an OCR
    detector's 1.3× against the small CNN's 17.9× read as a fault), so they are not shown there."""
    if not _is_sample():
        return
    speedup, graph = speedups(report)
    if speedup is not None:
        beside("speedup", speedup)
    if graph is not None:
        beside("graph_optimizations", graph)


def export_figure(report: ExportReport, source: ModelRecord) -> None:
    """Export: the largest difference after exporting the tutorial's sample."""
    worst = max((d.max_abs for t in report.trials for d in t.diffs), default=None)
    if worst is not None and source.format == "sample" and source.name == SAMPLE:
        beside("largest_difference", worst)


def parameter_figure(record: ModelRecord) -> None:
    """Model card: the tutorial's printed parameter count beside the sample's."""
    if record.format == "sample" and record.name == SAMPLE and record.parameter_count is not None:
        beside("parameters", record.parameter_count)
