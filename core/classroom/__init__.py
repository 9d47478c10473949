"""The classroom: rooms a teacher opens for a workshop, and the board of what participants' runs pooled."""

from __future__ import annotations

from core.classroom.board import (
    BASELINES,
    EAGER,
    LEVELS,
    TITLES,
    Latency,
    Spread,
    bench_entry,
    choices,
    empty_sentence,
    latencies,
    machines,
    quantize_entry,
    range_sentence,
    spread,
    to_csv,
    tutorial_figure,
)
from core.classroom.devices import BROWSER, DeviceGroup, browser_entry, device_groups, device_key
from core.classroom.rooms import Entry, Room, Rooms, RoomSetup, clean_code, clean_name, new_code, new_participant

__all__ = [
    "BASELINES",
    "BROWSER",
    "EAGER",
    "LEVELS",
    "TITLES",
    "Latency",
    "DeviceGroup",
    "Entry",
    "Room",
    "RoomSetup",
    "Rooms",
    "Spread",
    "bench_entry",
    "browser_entry",
    "choices",
    "clean_code",
    "clean_name",
    "device_groups",
    "device_key",
    "empty_sentence",
    "latencies",
    "machines",
    "new_code",
    "new_participant",
    "quantize_entry",
    "range_sentence",
    "spread",
    "to_csv",
    "tutorial_figure",
]
