"""What the room board shows and exports: each participant's latest speedup with its interval, the room's range
beside the tutorial's figure, the quantization choices, the machines; the CSV of every result; and the entries a
benchmark or a quantization pools into a room."""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from core.classroom.rooms import Entry
from core.i18n import _, number
from core.tutorial import SPEEDUP

if TYPE_CHECKING:
    from core.bench import BenchReport
    from core.quantize.records import QuantizeReport

__all__ = [
    "Spread",
    "bench_entry",
    "choices",
    "machines",
    "quantize_entry",
    "range_sentence",
    "spread",
    "to_csv",
]

_FORMULA = ("=", "+", "-", "@", "\t", "\r")  # what a spreadsheet reads as the start of a formula


@dataclass(frozen=True, kw_only=True)
class Spread:
    """One participant's latest speedup, with its confidence interval."""

    name: str
    participant: str
    median: float
    low: float | None
    high: float | None
    machine: str


def spread(entries: list[Entry]) -> list[Spread]:
    """Each participant's latest benchmark speedup, slowest first (the board's chart)."""
    latest: dict[str, Entry] = {}
    for entry in entries:
        if entry.kind == "benchmark" and entry.value is not None:
            latest[entry.participant] = entry  # entries come oldest first
    rows = [
        Spread(name=e.name, participant=e.participant, median=e.value, low=e.low, high=e.high, machine=e.machine)
        for e in latest.values()
        if e.value is not None
    ]
    return sorted(rows, key=lambda s: s.median)


def range_sentence(rows: list[Spread]) -> str:
    """The tutorial's speedup beside the room's range of medians, in a sentence."""
    theirs = number(SPEEDUP.value, 2)
    if not rows:
        return _("The tutorial measured {theirs}× on its machine; no one in this room has measured yet.").format(
            theirs=theirs
        )
    low, high = min(r.median for r in rows), max(r.median for r in rows)
    return _("The tutorial measured {theirs}× on its machine; this room measured {low}–{high}×.").format(
        theirs=theirs, low=number(low, 1), high=number(high, 1)
    )


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
    """A benchmark's eager→ORT speedup (the best ORT level at the first threads and batch) as a room entry; None
    for a run without eager (no speedup to pool)."""
    pooled = [r for r in report.results if r.engine == "ort" and r.speedup is not None]
    if not pooled or not report.baseline.lower().startswith("pytorch"):
        return None
    first = report.results[0]
    same = [r for r in pooled if r.threads == first.threads and r.batch == first.batch] or pooled
    best = max(same, key=lambda r: r.speedup or 0.0)
    return Entry(
        name=name,
        participant=participant,
        kind="benchmark",
        created_at=_now(),
        machine=report.environment.place,
        value=best.speedup,
        low=best.speedup_low,
        high=best.speedup_high,
        detail={"level": best.level, "threads": best.threads, "batch": best.batch, "provider": best.provider},
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
