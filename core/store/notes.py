"""A run's notes as the history keeps them: this version keeps each as data (a template key and its values,
core.notes), an earlier one kept English sentences (the headline, the notes, how the threads were set, what the
machine did meanwhile). Reading turns such a sentence into a note that is shown as it was written; nothing here
matches a sentence against templates. The headline's column is text: it keeps the note's data as JSON."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from core.jobs.wire import WireError, from_data, to_data
from core.notes import Note, read_note
from core.runtime.activity import Activity
from core.runtime.machine import Environment
from core.runtime.runs import AnyRun
from core.store.kinds import read_run

__all__ = [
    "headline_text",
    "notes_as_data",
    "read_activity",
    "read_environment",
    "read_headline",
    "read_report",
]


def _optional(value: Any) -> Any:
    """A note that may be absent, as data: a sentence an earlier version kept becomes a note (an empty one none)."""
    if isinstance(value, str):
        return to_data(read_note(value)) if value else None
    return value


def _environment(data: Mapping[str, Any]) -> dict[str, Any]:
    return {**data, "threads_note": _optional(data.get("threads_note"))}


def _activity(data: Mapping[str, Any]) -> dict[str, Any]:
    return {**data, "note": _optional(data.get("note"))}


def notes_as_data(fields: Mapping[str, Any]) -> dict[str, Any]:
    """A run's fields as data (a spooled run, a row read back) with every note as this version keeps it: the
    headline, the notes, the environment's threads note and the activity's note, each a sentence in a run an
    earlier version kept."""
    found = dict(fields)
    found["headline"] = to_data(read_note(found.get("headline") or ""))
    found["notes"] = [to_data(read_note(n)) for n in found.get("notes") or []]
    if isinstance(found.get("environment"), Mapping):
        found["environment"] = _environment(found["environment"])
    if isinstance(found.get("activity"), Mapping):
        found["activity"] = _activity(found["activity"])
    return found


def read_environment(data: Mapping[str, Any]) -> Environment:
    """A run's machine as kept (its threads note a sentence in runs saved before notes were data)."""
    return from_data(_environment(data), Environment)


def read_activity(data: Mapping[str, Any]) -> Activity:
    """What the machine did during a run, as kept (its note a sentence in runs saved before notes were data)."""
    return from_data(_activity(data), Activity)


def read_report(data: Any) -> AnyRun:
    """A whole run as ``to_data`` gave it (a spooled run), by this version or an earlier one; WireError when it is
    not one."""
    if not isinstance(data, Mapping):
        raise WireError(f"a run is its fields, not a {type(data).__name__}")
    return read_run(notes_as_data(data))  # of its kind (core.store.kinds)


def headline_text(headline: Note | str) -> str:
    """The headline as the history's text column keeps it: the note's data as JSON."""
    return json.dumps(to_data(read_note(headline)), ensure_ascii=False)


def read_headline(text: str | None) -> Note:
    """The headline the history's column keeps: a note's data (this version), else an earlier version's sentence,
    shown as it was written."""
    if text and text.startswith('{"key"'):
        try:
            return read_note(json.loads(text))
        except (ValueError, TypeError, WireError):
            pass  # a sentence that only looks like data
    return read_note(text or "")
