"""Browser runs on the room board: a participant's "In this browser" result as a room entry, keyed by the kind of
device it ran on, and the room's browser results grouped by that device (the spread and the count of each).

The device key is coarse on purpose: browser and major version, OS, cores and backend ("Chrome 156 · Linux ·
8 cores · WASM"). Thirty laptops of one model then pool into one group; the GPU adapter (WebGPU) stays in the
entry's detail and the CSV, since a finer key would leave a group per participant."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from statistics import median
from typing import TYPE_CHECKING

from core.classroom.rooms import Entry

if TYPE_CHECKING:
    from core.runtime.runs import LatencyRun

__all__ = ["BROWSER", "DeviceGroup", "browser_entry", "device_groups", "device_key"]

BROWSER = "browser"  # the entry kind of a browser run; its value is the median in milliseconds, not a speedup
_LONGEST = 120  # a device key from a browser is cut to this many characters


@dataclass(frozen=True, kw_only=True)
class DeviceGroup:
    """One kind of device in the room: each participant's latest browser median (ms) on it."""

    device: str
    medians: tuple[float, ...]
    names: tuple[str, ...]

    @property
    def count(self) -> int:
        return len(self.medians)

    @property
    def middle(self) -> float:
        return median(self.medians)


def device_key(report: LatencyRun) -> str:
    """The kind of device a browser run ran on: browser and major version, OS, cores, backend."""
    env = report.environment
    browser = env.versions.get("browser", "").strip()
    name, _sep, version = browser.rpartition(" ")
    major = version.split(".")[0] if name else ""
    backend = "WebGPU" if env.versions.get("backend") == "webgpu" else "WASM"
    parts = [" ".join(filter(None, [name or browser, major])) or "browser", env.os or "?"]
    parts += [f"{env.logical_cores} cores", backend]
    return " · ".join(p.replace("\n", " ").replace("\r", " ") for p in parts)[:_LONGEST]


def browser_entry(report: LatencyRun, name: str, participant: str) -> Entry | None:
    """A browser run's median call time with its interval, keyed by its device, as a room entry; None without a
    result."""
    if not report.results:
        return None
    result = report.results[0]
    env = report.environment
    adapter = env.cpu.partition("; GPU ")[2]
    return Entry(
        name=name,
        participant=participant,
        kind=BROWSER,
        created_at=datetime.now(UTC).replace(tzinfo=None),
        machine=device_key(report),
        value=result.median_ms,
        low=result.median_low_ms,
        high=result.median_high_ms,
        detail={
            "unit": "ms",
            "browser": env.versions.get("browser", ""),
            "os": env.os,
            "cores": env.logical_cores,
            "backend": env.versions.get("backend", ""),
            "adapter": adapter,
        },
    )


def device_groups(entries: list[Entry]) -> list[DeviceGroup]:
    """Each participant's latest browser run, grouped by device, the fastest device first."""
    latest: dict[str, Entry] = {}
    for entry in entries:
        if entry.kind == BROWSER and entry.value is not None:
            latest[entry.participant] = entry  # entries come oldest first
    grouped: dict[str, list[Entry]] = {}
    for entry in latest.values():
        grouped.setdefault(entry.machine, []).append(entry)
    groups = [
        DeviceGroup(
            device=device,
            medians=tuple(float(e.value or 0.0) for e in rows),
            names=tuple(e.name for e in rows),
        )
        for device, rows in grouped.items()
    ]
    return sorted(groups, key=lambda g: g.middle)
