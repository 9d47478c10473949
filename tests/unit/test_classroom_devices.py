"""Browser runs on the room board (core.classroom.devices): a participant's "In this browser" run pools with its
kind of device, the board groups the browsers by device beside the server's speedups, and the CSV carries them
with every cell that a spreadsheet would run as a formula kept as text."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from core.browser import browser_report
from core.classroom import BROWSER, bench_entry, browser_entry, device_groups, machines, spread, to_csv
from core.classroom.rooms import Entry
from tests.reports import made_report


def browser_run(calls: list[float], **env: Any) -> Any:
    """A browser's result as the Benchmark page saves it, from call times and what the browser says of itself."""
    environment = {"browser": "Chrome", "browser_version": "156.0.1", "os": "Linux", "cores": 8, "threads": 1,
                   "cross_origin_isolated": False, "gpu_adapter": "", "fallback": "none", "ort_web": "1.30.0",
                   "clock_step_ms": 0.1, **env}  # fmt: skip
    return browser_report(
        {
            "format": "onnx-workbench-browser-result",
            "model": "tinycnn",
            "backend": "wasm",
            "calls_ms": calls,
            "warmup": 2,
            "created_at": "2026-12-02T05:54:09Z",
            "environment": environment,
        }
    )


def _room() -> list[Entry]:
    """Two laptops of one kind, one of another, and a server benchmark, as a room holds them (oldest first)."""
    chrome_a = browser_entry(browser_run([4.0, 4.2, 3.9, 4.1]), "Ada", "p1")
    chrome_b = browser_entry(browser_run([6.0, 6.1, 5.9, 6.2]), "Bob", "p2")
    firefox = browser_entry(
        browser_run([9.0, 9.5, 8.8, 9.1], browser="Firefox", browser_version="140", cores=4), "Cy", "p3"
    )
    server = bench_entry(made_report(machine="lab-07"), "Dee", "p4")
    assert chrome_a and chrome_b and firefox and server
    return [chrome_a, chrome_b, firefox, server]


def test_browser_runs_pool_by_device_with_the_count_and_spread_beside_the_servers_speedup() -> None:
    entries = _room()
    assert entries[0].kind == BROWSER and entries[0].machine == "Chrome 156 · Linux · 8 cores · WASM"
    assert (
        entries[0].low is not None
        and entries[0].high is not None
        and entries[0].low <= entries[0].value <= entries[0].high
    )  # type: ignore[operator]
    groups = device_groups(entries)
    assert [(g.device, g.count) for g in groups] == [
        ("Chrome 156 · Linux · 8 cores · WASM", 2),  # the fastest device first
        ("Firefox 140 · Linux · 4 cores · WASM", 1),
    ]
    assert groups[0].names == ("Ada", "Bob") and sorted(groups[0].medians) == [4.05, 6.05]
    assert [(r.name, r.median) for r in spread(entries)] == [("Dee", 4.0)]  # the speedups stay the server's only
    assert machines(entries) == {"Chrome 156 · Linux · 8 cores · WASM": 2, "Firefox 140 · Linux · 4 cores · WASM": 1,
                                 "lab-07": 1}  # fmt: skip


def test_a_participants_latest_browser_run_counts_once() -> None:
    first, again = browser_run([9.0, 9.1, 9.2]), browser_run([3.0, 3.1, 3.2])
    entries = [browser_entry(first, "Ada", "p1"), browser_entry(again, "Ada", "p1")]
    assert [(g.count, g.medians) for g in device_groups([e for e in entries if e])] == [(1, (3.1,))]


def test_the_csv_carries_the_browsers_and_keeps_a_hostile_device_as_text() -> None:
    hostile = browser_run([5.0, 5.0, 5.1], browser='=HYPERLINK("http://evil.test","x")', os="<b>@SUM(A1)</b>")
    entries = [*_room(), browser_entry(hostile, "-Eve", "p5")]
    rows = list(csv.DictReader(io.StringIO(to_csv("ABC234", [e for e in entries if e]))))
    browsers = [r for r in rows if r["kind"] == BROWSER]
    assert len(browsers) == 4 and [r["kind"] for r in rows].count("benchmark") == 1
    assert browsers[0]["machine"] == "Chrome 156 · Linux · 8 cores · WASM" and float(browsers[0]["value"]) == 4.05
    assert json.loads(browsers[0]["detail"])["unit"] == "ms" and json.loads(browsers[0]["detail"])["cores"] == 8
    assert browsers[3]["name"] == "'-Eve" and browsers[3]["machine"].startswith("'=HYPERLINK")
    assert not any(cell.startswith(("=", "+", "-", "@")) for row in rows for cell in row.values())
