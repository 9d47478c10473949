"""Sections of the Benchmark and History pages: frames from a report, the charts, the table, the environment."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pandas as pd
import streamlit as st

from core.bench.benchmark import headline
from core.i18n import _, ngettext, number, pgettext
from core.jobs.wire import to_data
from core.notes import say, significant
from core.runtime.activity import Activity
from core.runtime.fallback import FALLBACKS
from core.runtime.harness import PER_CALL
from core.runtime.ort import short_name
from core.runtime.runs import LatencyRun, LoadtestRun, TuneRun
from core.store.history import inputs_text
from ui.charts import LATENCY_MARKERS, batch_figure, distribution_figure, latency_figure, speedup_figure
from ui.downloads import Download, csv_of, side_by_side
from ui.text import escaped_frame, md_escape

__all__ = [
    "busy_notice",
    "latency_legend",
    "environment_section",
    "provider_shares",
    "report_json",
    "results_frame",
    "results_section",
    "samples_frame",
]

_COLUMNS = [
    "label", "engine", "level", "provider", "threads", "batch", "n", "median_ms", "p90_ms", "p99_ms", "mean_ms",
    "std_ms", "min_ms", "max_ms", "median_low_ms", "median_high_ms", "throughput", "speedup", "speedup_low",
    "speedup_high", "max_abs_diff", "first_run_ms", "load_ms", "noisy", "cpu_median_ms", "provider_nodes",
    "gpu_peak_mb",
]  # fmt: skip


def results_frame(report: LatencyRun) -> pd.DataFrame:
    rows = [{k: v for k, v in to_data(r).items() if k not in PER_CALL} for r in report.results]
    frame = pd.DataFrame(rows, columns=_COLUMNS)
    numeric = [c for c in _COLUMNS if c.endswith(("_ms", "throughput", "speedup", "_low", "_high", "_diff", "_mb"))]
    frame[numeric] = frame[numeric].apply(pd.to_numeric, errors="coerce")
    return frame


def samples_frame(report: LatencyRun) -> pd.DataFrame:
    rows = [(r.label, r.engine, ms) for r in report.results for ms in r.samples_ms]
    return pd.DataFrame(rows, columns=["label", "engine", "ms"])


def report_json(report: LatencyRun) -> bytes:
    return json.dumps(to_data(report), indent=2).encode()


def _interval(values: pd.Series, low: pd.Series, high: pd.Series, unit: str = "") -> list[str]:
    return [
        f"{significant(v)}{unit} ({significant(lo)}–{significant(hi)})" if pd.notna(v) else ""
        for v, lo, hi in zip(values, low, high, strict=True)
    ]


def _figures(values: pd.Series, digits: int = 4) -> list[str]:
    """Numbers as a reader reads them: a few significant digits (146.6, never 146.6302), a dash where none."""
    return [significant(float(v), digits) if pd.notna(v) else "—" for v in values]


def _table(frame: pd.DataFrame) -> pd.DataFrame:
    """The results as the page shows them: headers in the reader's language, numbers as text to a few digits; the
    GPU memory at a call's peak where a result has it (PyTorch eager on CUDA: core.bench.eager)."""
    table = pd.DataFrame(
        {
            _("configuration"): frame["label"],
            _("nodes per provider"): [provider_shares(v) for v in frame["provider_nodes"]],
            _("median ms (95 % CI)"): _interval(frame["median_ms"], frame["median_low_ms"], frame["median_high_ms"]),
            _("p90 ms"): _figures(frame["p90_ms"]),
            _("p99 ms"): _figures(frame["p99_ms"]),
            _("mean ms"): _figures(frame["mean_ms"]),
            _("std ms"): _figures(frame["std_ms"], 3),
            _("min ms"): _figures(frame["min_ms"]),
            _("CPU ms (median)"): _figures(frame["cpu_median_ms"]),
            _("items/s"): _figures(frame["throughput"]),
            _("speedup (95 % CI)"): _interval(frame["speedup"], frame["speedup_low"], frame["speedup_high"], "×"),
            _("max abs diff"): [f"{d:.1e}" if pd.notna(d) else "" for d in frame["max_abs_diff"]],
            _("first run ms"): _figures(frame["first_run_ms"]),
            _("load ms"): _figures(frame["load_ms"]),
            _("calls"): [number(int(n)) for n in frame["n"]],
        }
    )
    if frame["gpu_peak_mb"].notna().any():
        table.insert(3, _("GPU peak MiB"), _figures(frame["gpu_peak_mb"]))
    return table


def provider_shares(counts: object) -> str:
    """A result's share of the nodes per provider (ORT's assignment in its session): "OpenVINO 8 · CPU 1"."""
    if not isinstance(counts, dict) or not counts:
        return ""
    return " · ".join(f"{short_name(provider)} {number(int(n))}" for provider, n in counts.items())


def busy_notice(activity: Activity | None, key: str, flag: str, label: str, advice: str) -> None:
    """When the machine was busy during a measurement: what else ran, ``advice``, and a button that sets
    ``flag`` in the session for the page to measure again with the same settings."""
    if activity is not None and activity.busy:
        said = say(activity.note) if activity.note is not None else ""
        st.warning(md_escape(said, 600) + " " + advice)
        st.button(label, key=key, on_click=lambda: st.session_state.update({flag: True}))


def latency_legend() -> str:
    """The caption over the latency chart, in the glyphs the chart draws."""
    marks = pgettext("list", ", ").join(
        f"{glyph} {name}" for name, (_symbol, glyph) in LATENCY_MARKERS.items() if name != "beyond"
    )
    return _(
        "**Latency per configuration**: the bar is the median with its 95 % CI; {marks}; {beyond} at the "
        "right edge: beyond the axis, its value written beside it."
    ).format(marks=marks, beyond=LATENCY_MARKERS["beyond"][1])


def _agreement(baseline: str, worst: float) -> str:
    """Whether the outputs agree with the reference's, in a sentence."""
    if worst <= 1e-3:
        text = (
            _("Outputs agree with {reference}: the largest absolute difference over all configurations is {worst}.")
            if baseline
            else _(
                "Outputs agree with the reference: the largest absolute difference over all configurations is {worst}."
            )
        )
    else:
        text = (
            _("Outputs differ from {reference}: the largest absolute difference over all configurations is {worst}.")
            if baseline
            else _(
                "Outputs differ from the reference: the largest absolute difference over all configurations is {worst}."
            )
        )
    return text.format(reference=baseline, worst=f"{worst:.1e}")


def results_section(report: LatencyRun, key: str) -> None:
    frame = results_frame(report)
    # a load test's or Tune's run: its verdict as saved; a benchmark's written anew from its numbers (so a run an
    # earlier version saved, its headline an English sentence, is said in the reader's language too)
    saved = isinstance(report, LoadtestRun | TuneRun) or not report.results
    fallbacks = [n for n in report.notes if n.key in FALLBACKS and n.severity == "warning"]
    for warned in fallbacks:  # a provider asked for that fell back to the CPU, said before any figure
        st.warning(say(warned))  # the app's own words: provider and runtime names
    st.subheader(md_escape(say(report.headline if saved else headline(report)), 400))
    advice = _("A quieter moment gives numbers that hold: run it again when the other work is done.")
    busy_notice(report.activity, f"{key}_again", "bench_again", _("Run it again"), advice)
    for note in report.notes:
        if (report.activity is not None and note == report.activity.note) or note in fallbacks:
            continue  # the machine's own note: in the busy notice above; a fallback: above the headline
        if note.severity == "warning":
            st.warning(md_escape(say(note), 800))
        else:
            st.caption(md_escape(say(note), 800))
    worst = frame["max_abs_diff"].max()
    if pd.notna(worst):
        st.caption(md_escape(_agreement(report.baseline, float(worst)), 400))
    st.markdown(latency_legend())
    st.plotly_chart(latency_figure(frame), key=f"{key}_latency", config={"displaylogo": False})
    if report.baseline and frame["speedup"].notna().any():
        sub = frame[frame["speedup"].notna()]
        st.markdown(
            _("**Speedup against {baseline}**, with its 95 % bootstrap interval.").format(
                baseline=md_escape(report.baseline, 80)
            )
        )
        bars = sub[["label", "speedup"]].assign(low=sub["speedup_low"], high=sub["speedup_high"])
        st.plotly_chart(speedup_figure(bars, report.baseline), key=f"{key}_speedup", config={"displaylogo": False})
    samples = samples_frame(report)
    if not samples.empty:
        st.markdown(_("**Distribution of every measured call**: the long tail is where p99 comes from."))
        st.plotly_chart(distribution_figure(samples), key=f"{key}_distribution", config={"displaylogo": False})
    if frame["batch"].nunique() > 1:
        series = frame["label"].str.replace(r" · batch \d+", "", regex=True)
        st.markdown(_("**Batch size**: a larger batch costs more per call but usually more items per second."))
        st.plotly_chart(
            batch_figure(frame.assign(series=series)[["series", "engine", "batch", "median_ms", "throughput"]]),
            key=f"{key}_batch",
            config={"displaylogo": False},
        )
    st.markdown(_("**Results**"))
    st.dataframe(_table(frame), hide_index=True, width="stretch")
    stem = f"{report.model}-bench-{report.id}"
    side_by_side(
        Download(label=_("Download the results (CSV)"), data=csv_of(frame), file_name=f"{stem}.csv", mime="text/csv",
                 key=f"{key}_csv"),
        Download(label=_("Download the whole run (JSON, with every call's time)"), data=lambda: report_json(report),
                 file_name=f"{stem}.json", key=f"{key}_json"),
    )  # fmt: skip


def _imported(iso: str) -> str:
    """When a run measured elsewhere came in, as the History table writes times."""
    return f"{datetime.fromisoformat(iso).astimezone(UTC):%Y-%m-%d %H:%M} UTC"


def environment_section(report: LatencyRun) -> None:
    """The machine and the method of a run, in the reader's language (its notes said here: core.notes)."""
    env, activity = report.environment, report.activity
    settings = report.settings
    rounds = settings.get("rounds")
    method = ngettext(
        "{warmup} warm-up calls, then up to {calls} calls per configuration in {rounds} interleaved round (time "
        "budget {budget} s)",
        "{warmup} warm-up calls, then up to {calls} calls per configuration in {rounds} interleaved rounds (time "
        "budget {budget} s)",
        rounds if isinstance(rounds, int) else 2,
    ).format(
        warmup=settings.get("warmup"),
        calls=settings.get("iterations"),
        rounds=rounds,
        budget=settings.get("time_budget_s"),
    )
    cores = ngettext("{count} core", "{count} cores", env.physical_cores).format(count=env.physical_cores)
    logical = _("{count} logical").format(count=env.logical_cores)
    seconds = _("{seconds} s in all").format(seconds=number(report.seconds, 1))
    rows = [
        (_("target"), env.target or _("this server")),
        (_("machine"), env.machine),
        ("CPU", _("{cpu}: {cores}, {logical}").format(cpu=env.cpu, cores=cores, logical=logical)),
        (_("CPU features"), ", ".join(env.cpu_flags) or _("unknown")),
        ("OS", env.os),
        *[(name, version) for name, version in env.versions.items()],
        (_("threads"), say(env.threads_note) if env.threads_note is not None else ""),
        (_("method"), method),
        (
            _("inputs"),
            _("{inputs}, seed {seed}").format(
                inputs=inputs_text(settings) or _("not recorded"), seed=settings.get("seed")
            ),
        ),
        (_("other work"), say(activity.note) if activity is not None and activity.note else _("not recorded")),
        (_("run"), f"{report.id}, {report.created_at}, {seconds}"),
        *([(_("imported"), _imported(report.imported_at))] if report.imported_at else []),  # measured elsewhere
    ]
    st.table(escaped_frame(pd.DataFrame(rows, columns=["", _("value")])), hide_index=True)
