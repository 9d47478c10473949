"""Sections of the Benchmark and History pages: frames from a report, the charts, the table, the environment."""

from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from core.bench import BenchReport
from core.jobs.wire import to_data
from core.runtime.activity import Activity
from core.runtime.harness import PER_CALL
from core.store.history import inputs_text
from ui.charts import LATENCY_MARKERS, batch_figure, distribution_figure, latency_figure, speedup_figure
from ui.text import escaped_frame, md_escape

__all__ = [
    "busy_notice",
    "latency_legend",
    "environment_section",
    "report_json",
    "results_frame",
    "results_section",
    "samples_frame",
]

_COLUMNS = [
    "label", "engine", "level", "provider", "threads", "batch", "n", "median_ms", "p90_ms", "p99_ms", "mean_ms",
    "std_ms", "min_ms", "max_ms", "median_low_ms", "median_high_ms", "throughput", "speedup", "speedup_low",
    "speedup_high", "max_abs_diff", "first_run_ms", "load_ms", "noisy", "cpu_median_ms",
]  # fmt: skip


def results_frame(report: BenchReport) -> pd.DataFrame:
    rows = [{k: v for k, v in to_data(r).items() if k not in PER_CALL} for r in report.results]
    frame = pd.DataFrame(rows, columns=_COLUMNS)
    numeric = [c for c in _COLUMNS if c.endswith(("_ms", "throughput", "speedup", "_low", "_high", "_diff"))]
    frame[numeric] = frame[numeric].apply(pd.to_numeric, errors="coerce")
    return frame


def samples_frame(report: BenchReport) -> pd.DataFrame:
    rows = [(r.label, r.engine, ms) for r in report.results for ms in r.samples_ms]
    return pd.DataFrame(rows, columns=["label", "engine", "ms"])


def report_json(report: BenchReport) -> bytes:
    return json.dumps(to_data(report), indent=2).encode()


def _interval(values: pd.Series, low: pd.Series, high: pd.Series, unit: str = "") -> list[str]:
    return [
        f"{v:.3g}{unit} ({lo:.3g}–{hi:.3g})" if pd.notna(v) else "" for v, lo, hi in zip(values, low, high, strict=True)
    ]


def _table(frame: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "configuration": frame["label"],
            "median ms (95 % CI)": _interval(frame["median_ms"], frame["median_low_ms"], frame["median_high_ms"]),
            "p90 ms": frame["p90_ms"].round(4),
            "p99 ms": frame["p99_ms"].round(4),
            "mean ms": frame["mean_ms"].round(4),
            "std ms": frame["std_ms"].round(4),
            "min ms": frame["min_ms"].round(4),
            "CPU ms (median)": frame["cpu_median_ms"].round(4),
            "items/s": frame["throughput"].round(1),
            "speedup (95 % CI)": _interval(frame["speedup"], frame["speedup_low"], frame["speedup_high"], "×"),
            "max abs diff": [f"{d:.1e}" if pd.notna(d) else "" for d in frame["max_abs_diff"]],
            "first run ms": frame["first_run_ms"].round(2),
            "load ms": frame["load_ms"].round(1),
            "calls": frame["n"],
        }
    )


def busy_notice(activity: Activity | None, key: str, flag: str, label: str, advice: str) -> None:
    """When the machine was busy during a measurement: what else ran, ``advice``, and a button that sets
    ``flag`` in the session for the page to measure again with the same settings."""
    if activity is not None and activity.busy:
        st.warning(md_escape(activity.note, 600) + " " + advice)
        st.button(label, key=key, on_click=lambda: st.session_state.update({flag: True}))


def latency_legend() -> str:
    """The caption over the latency chart, in the glyphs the chart draws."""
    marks = ", ".join(f"{glyph} {name}" for name, (_, glyph) in LATENCY_MARKERS.items() if name != "beyond")
    return (
        f"**Latency per configuration**: the bar is the median with its 95 % interval; {marks}; "
        f"{LATENCY_MARKERS['beyond'][1]} at the right edge: beyond the axis, its value written beside it."
    )


def results_section(report: BenchReport, key: str) -> None:
    frame = results_frame(report)
    st.subheader(md_escape(report.headline, 400))
    advice = "A quieter moment gives numbers that hold: run it again when the other work is done."
    busy_notice(report.activity, f"{key}_again", "bench_again", "Run it again", advice)
    for note in report.notes:
        if report.activity is not None and note == report.activity.note:
            continue
        if note.startswith(("Noisy", "The time budget")):
            st.warning(md_escape(note, 800))
        else:
            st.caption(md_escape(note, 800))
    worst = frame["max_abs_diff"].max()
    if pd.notna(worst):
        verdict = "agree" if worst <= 1e-3 else "differ"
        st.caption(
            f"Outputs {verdict} with {report.baseline or 'the reference'}: the largest absolute difference over all "
            f"configurations is {worst:.1e}."
        )
    st.markdown(latency_legend())
    st.plotly_chart(latency_figure(frame), key=f"{key}_latency", config={"displaylogo": False})
    if report.baseline and frame["speedup"].notna().any():
        sub = frame[frame["speedup"].notna()]
        st.markdown(f"**Speedup against {report.baseline}**, with its 95 % bootstrap interval.")
        bars = sub[["label", "speedup"]].assign(low=sub["speedup_low"], high=sub["speedup_high"])
        st.plotly_chart(speedup_figure(bars, report.baseline), key=f"{key}_speedup", config={"displaylogo": False})
    samples = samples_frame(report)
    if not samples.empty:
        st.markdown("**Distribution of every measured call**: the long tail is where p99 comes from.")
        st.plotly_chart(distribution_figure(samples), key=f"{key}_distribution", config={"displaylogo": False})
    if frame["batch"].nunique() > 1:
        series = frame["label"].str.replace(r" · batch \d+", "", regex=True)
        st.markdown("**Batch size**: a larger batch costs more per call but usually more items per second.")
        st.plotly_chart(
            batch_figure(frame.assign(series=series)[["series", "engine", "batch", "median_ms", "throughput"]]),
            key=f"{key}_batch",
            config={"displaylogo": False},
        )
    st.markdown("**Results**")
    st.dataframe(_table(frame), hide_index=True, width="stretch")
    left, right = st.columns(2)
    left.download_button(
        "Download the results (CSV)", lambda: frame.to_csv(index=False).encode(),
        f"{report.model}-bench-{report.id}.csv", "text/csv", key=f"{key}_csv",
    )  # fmt: skip
    right.download_button(
        "Download the whole run (JSON, with every call's time)", lambda: report_json(report),
        f"{report.model}-bench-{report.id}.json", "application/json", key=f"{key}_json",
    )  # fmt: skip


def environment_section(report: BenchReport) -> None:
    env = report.environment
    settings = report.settings
    rows = [
        ("target", env.target or "this server"),
        ("machine", env.machine),
        ("CPU", f"{env.cpu}: {env.physical_cores} cores, {env.logical_cores} logical"),
        ("CPU features", ", ".join(env.cpu_flags) or "unknown"),
        ("OS", env.os),
        *[(name, version) for name, version in env.versions.items()],
        ("threads", env.threads_note),
        (
            "method",
            f"{settings.get('warmup')} warm-up calls, then up to {settings.get('iterations')} calls per configuration "
            f"in {settings.get('rounds')} interleaved rounds (time budget {settings.get('time_budget_s')} s)",
        ),
        (
            "inputs",
            (inputs_text(settings) or "not recorded") + f", seed {settings.get('seed')}",
        ),
        ("other work", report.activity.note if report.activity is not None else "not recorded"),
        ("run", f"{report.id}, {report.created_at}, {report.seconds:.1f} s in all"),
    ]
    st.table(escaped_frame(pd.DataFrame(rows, columns=["", "value"])), hide_index=True)
