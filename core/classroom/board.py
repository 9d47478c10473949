"""What the room board shows and exports: each participant's latest speedup with its interval, by what it was measured
against (PyTorch eager, or ONNX Runtime without graph optimizations: an ONNX model's room has no eager), beside the
tutorial's figure in a room on the tutorial's model only; the runs that measured no speedup; the quantization
choices, the machines; the CSV of every result; and the entries a benchmark or a quantization pools into a room."""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from core.classroom.devices import BROWSER
from core.classroom.rooms import Entry
from core.i18n import N_, _, ngettext, number
from core.tutorial import GRAPH_OPTIMIZATIONS, SPEEDUP, TUTORIAL_MODEL, Figure, is_tutorials

if TYPE_CHECKING:
    from core.bench import BenchReport
    from core.quantize.records import QuantizeReport

__all__ = [
    "BASELINES",
    "EAGER",
    "LEVELS",
    "TITLES",
    "Latency",
    "Spread",
    "bench_entry",
    "choices",
    "empty_sentence",
    "latencies",
    "machines",
    "quantize_entry",
    "range_sentence",
    "spread",
    "to_csv",
    "tutorial_figure",
]

_FORMULA = ("=", "+", "-", "@", "\t", "\r")  # what a spreadsheet reads as the start of a formula
EAGER, LEVELS = "PyTorch eager", "ORT DISABLE_ALL"  # what a benchmark's speedups are against (BenchReport.baseline)
BASELINES = (EAGER, LEVELS)  # the board's charts, in this order
TITLES = {  # each chart's title (translated where shown)
    EAGER: N_("PyTorch eager → ONNX Runtime: each participant's median and its interval"),
    LEVELS: N_(
        "ONNX Runtime without graph optimizations (DISABLE_ALL) → its best level: each participant's median and its "
        "interval"
    ),
}
_FIGURES: dict[str, Figure] = {EAGER: SPEEDUP, LEVELS: GRAPH_OPTIMIZATIONS}  # the tutorial's figure for each


@dataclass(frozen=True, kw_only=True)
class Spread:
    """One participant's latest speedup, with its confidence interval."""

    name: str
    participant: str
    median: float
    low: float | None
    high: float | None
    machine: str


def _against(entry: Entry) -> str:
    """What a benchmark entry's speedup is against (entries pooled before this was kept are eager's)."""
    return str(entry.detail.get("baseline", EAGER))


def spread(entries: list[Entry], against: str = EAGER) -> list[Spread]:
    """Each participant's latest benchmark speedup against ``against``, slowest first (that chart of the board)."""
    latest: dict[str, Entry] = {}
    for entry in entries:
        if entry.kind == "benchmark" and entry.value is not None and _against(entry) == against:
            latest[entry.participant] = entry  # entries come oldest first
    rows = [
        Spread(name=e.name, participant=e.participant, median=e.value, low=e.low, high=e.high, machine=e.machine)
        for e in latest.values()
        if e.value is not None
    ]
    return sorted(rows, key=lambda s: s.median)


def tutorial_figure(against: str, model: str) -> Figure | None:
    """The tutorial's figure for speedups against ``against``, in a room on the tutorial's own model only: beside
    another model's figures it says nothing of them."""
    return _FIGURES.get(against) if is_tutorials(model) else None


def range_sentence(rows: list[Spread], against: str = EAGER, model: str = TUTORIAL_MODEL) -> str:
    """The room's range of medians against ``against``, in a sentence; beside the tutorial's figure in a room on the
    tutorial's model."""
    figure = tutorial_figure(against, model)
    if not rows:
        return empty_sentence([], model)
    low, high = number(min(r.median for r in rows), 1), number(max(r.median for r in rows), 1)
    if figure is SPEEDUP:
        return _("The tutorial measured {theirs}× on its machine; this room measured {low}–{high}×.").format(
            theirs=number(SPEEDUP.value, 2), low=low, high=high
        )
    if figure is GRAPH_OPTIMIZATIONS:
        return _(
            "With graph optimizations the tutorial measured {theirs}× on its machine; this room measured {low}–{high}×."
        ).format(theirs=number(GRAPH_OPTIMIZATIONS.value, 1), low=low, high=high)
    if against == LEVELS:
        return _("ONNX Runtime's best level against DISABLE_ALL: this room measured {low}–{high}×.").format(
            low=low, high=high
        )
    return _("PyTorch eager → ONNX Runtime: this room measured {low}–{high}×.").format(low=low, high=high)


def empty_sentence(entries: list[Entry], model: str) -> str:
    """The board's line when no speedup was pooled: no one measured yet (beside the tutorial's figure in a room on
    its model), or how many measured something else (a browser, a run with no baseline), shown below."""
    measured = {e.participant for e in entries if e.kind in ("benchmark", BROWSER)}
    if measured:
        return ngettext(
            "{count} participant measured; no speedup against a baseline yet: their runs are below.",
            "{count} participants measured; no speedup against a baseline yet: their runs are below.",
            len(measured),
        ).format(count=number(len(measured)))
    if is_tutorials(model):
        return _("The tutorial measured {theirs}× on its machine; no one in this room has measured yet.").format(
            theirs=number(SPEEDUP.value, 2)
        )
    return _("No one in this room has measured yet.")


@dataclass(frozen=True, kw_only=True)
class Latency:
    """One participant's latest benchmark that measured no speedup (no baseline): its fastest configuration."""

    name: str
    participant: str
    configuration: str
    median_ms: float
    machine: str


def latencies(entries: list[Entry]) -> list[Latency]:
    """Each participant's latest benchmark without a speedup (one level, or providers only), fastest first."""
    latest: dict[str, Entry] = {}
    for entry in entries:
        if entry.kind == "benchmark" and entry.value is None and entry.detail.get("median_ms") is not None:
            latest[entry.participant] = entry
    rows = [
        Latency(
            name=e.name,
            participant=e.participant,
            configuration=str(e.detail.get("label", "")),
            median_ms=float(e.detail["median_ms"]),
            machine=e.machine,
        )
        for e in latest.values()
    ]
    return sorted(rows, key=lambda r: r.median_ms)


def choices(entries: list[Entry]) -> Counter[str]:
    """How many participants' latest quantization recommended each variant."""
    latest: dict[str, str] = {}
    for entry in entries:
        if entry.kind == "quantize":
            latest[entry.participant] = str(entry.detail.get("recommended") or _("none within the tolerance"))
    return Counter(latest.values())


def machines(entries: list[Entry]) -> Counter[str]:
    """How many participants measured on each machine or target."""
    latest = {e.participant: e.machine for e in entries if e.machine}
    return Counter(latest.values())


def _cell(value: object) -> str:
    """A cell a spreadsheet shows as text: one that starts like a formula gets a leading apostrophe."""
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(_FORMULA) else text


def to_csv(code: str, entries: list[Entry]) -> str:
    """Every result of the room, one row each, safe to open in a spreadsheet (no cell is run as a formula)."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["room", "name", "kind", "created_at", "machine", "value", "low", "high", "detail"])
    for e in entries:
        row = [code, e.name, e.kind, e.created_at.isoformat(), e.machine, e.value, e.low, e.high]
        writer.writerow([_cell(v) for v in [*row, json.dumps(e.detail, sort_keys=True)]])
    return out.getvalue()


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def bench_entry(report: BenchReport, name: str, participant: str) -> Entry | None:
    """A benchmark as a room entry: its best speedup (at the first threads and batch) against what it measured it
    against, PyTorch eager or ONNX Runtime's DISABLE_ALL (an ONNX model's benchmark has no eager), with the level and
    provider; a run that measured no baseline pools its fastest configuration's median instead. None for a run with
    no result."""
    if not report.results:
        return None
    first = report.results[0]
    pooled = [r for r in report.results if r.engine == "ort" and r.speedup is not None]
    if report.baseline == LEVELS:
        pooled = [r for r in pooled if r.level != "DISABLE_ALL"]  # the baseline against itself is 1×
    if report.baseline not in BASELINES or not pooled:  # its fastest configuration's median, no speedup
        fastest = min(report.results, key=lambda r: r.median_ms)
        speedup: tuple[float | None, float | None, float | None] = (None, None, None)
        detail = {"baseline": "", "label": fastest.label, "median_ms": fastest.median_ms, "provider": fastest.provider}
    else:
        same = [r for r in pooled if r.threads == first.threads and r.batch == first.batch] or pooled
        best = max(same, key=lambda r: r.speedup or 0.0)
        speedup = (best.speedup, best.speedup_low, best.speedup_high)
        detail = {
            "baseline": report.baseline,
            "level": best.level,
            "threads": best.threads,
            "batch": best.batch,
            "provider": best.provider,
        }
    value, low, high = speedup
    return Entry(
        name=name,
        participant=participant,
        kind="benchmark",
        created_at=_now(),
        machine=report.environment.place,
        value=value,
        low=low,
        high=high,
        detail=detail,
    )


def quantize_entry(report: QuantizeReport, name: str, participant: str, machine: str) -> Entry:
    """A quantization's choice (the recommended variant, and what was tried) as a room entry."""
    chosen = next((v for v in report.variants if v.key == report.recommended), None)
    return Entry(
        name=name,
        participant=participant,
        kind="quantize",
        created_at=_now(),
        machine=machine,
        value=chosen.speedup if chosen else None,
        low=chosen.speedup_low if chosen else None,
        high=chosen.speedup_high if chosen else None,
        detail={"recommended": report.recommended or "", "variants": [v.key for v in report.variants]},
    )
