"""Each kind of run as the history keeps it, and the one place that reads a run's kind back from data.

A row of the ``runs`` table has the run's kind in its ``kind`` column, and beside how the run measured, in its
``settings`` column, the fields of its kind's own (a tuning's chosen configuration, a load test's concurrencies):
where every earlier version kept them, so that a run saved before kinds had a column reads as it always did. A
spooled run is the record as ``to_data`` gives it. Earlier versions named a tuning and a load test inside the
settings (``"kind": "tune"``) and told a browser's result by its ``"browser"`` entry: ``_earlier`` reads that, here
only (the migration to revision 5 moved it into the column)."""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from typing import Any

from core.jobs.wire import WireError, from_data, to_data
from core.notes import Note, read_notes
from core.runtime.runs import KINDS, AnyRun, LatencyRun

__all__ = ["read_run", "settings_column"]

_SHARED = {f.name for f in dataclasses.fields(LatencyRun)}
_EARLIER = {"tune": "tune", "loadtest": "loadtest"}  # what an earlier version wrote in the settings -> the kind


# each kind's own fields (those not every timed run has), and those of them that hold notes (sentences, in a run an
# earlier version kept)
_OWN = {kind: [f.name for f in dataclasses.fields(record) if f.name not in _SHARED] for kind, record in KINDS.items()}
_NOTES = {
    kind: [name for name in _OWN[kind] if typing.get_type_hints(record)[name] == list[Note]]
    for kind, record in KINDS.items()
}


def settings_column(run: AnyRun) -> dict[str, Any]:
    """What the ``settings`` column keeps of ``run``: how it measured, and the fields of its kind's own."""
    return {**to_data(run.settings), **{name: to_data(getattr(run, name)) for name in _OWN[run.kind]}}


def _earlier(kind: str, settings: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The kind of a run an earlier version wrote, and its settings without the entry that named it."""
    named = settings.get("kind")
    if named is None and not (kind == "benchmark" and isinstance(settings.get("browser"), dict)):
        return kind, settings
    rest = {k: v for k, v in settings.items() if k != "kind"}
    if isinstance(named, str) and named in _EARLIER:
        return _EARLIER[named], rest
    return ("browser" if isinstance(settings.get("browser"), dict) else kind), rest


def read_run(fields: Mapping[str, Any]) -> AnyRun:
    """The run ``fields`` hold as data: a row of the history (its kind's own fields in its settings) or a spooled
    run, kept by this version or an earlier one. WireError when they are not a run of a kind this version knows."""
    settings = fields.get("settings")
    settings = dict(settings) if isinstance(settings, Mapping) else {}
    kind, settings = _earlier(str(fields.get("kind") or "benchmark"), settings)
    record = KINDS.get(kind)
    if record is None:
        raise WireError(
            f"a run of kind {kind!r}, which a newer version of the app made (this one knows {', '.join(KINDS)})"
        )
    own = {name: settings.pop(name) for name in _OWN[kind] if name in settings}
    own |= {name: read_notes(own[name]) for name in _NOTES[kind] if isinstance(own.get(name), list)}
    return from_data({**fields, **own, "kind": kind, "settings": settings}, record)
