"""Notes as data: what core tells a reader (a run's notes, a model's card, why a plan chose a shape) crosses as a
template key and its values, never as a finished sentence; the edge (a page, the CLI's human output, a notebook)
turns it into a sentence in its reader's language with ``say``, the one place that does (docs/i18n.md).

A record saved by a version of the app that kept English sentences reads as before: such a text becomes a note
that is its own key (``Note.kept``) and is shown as it was written, or whole from the catalog where it is a message
without values. Nothing here, or anywhere, matches a sentence against templates to find its values again.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Union

from core.i18n import _, number, pgettext

__all__ = [
    "Check",
    "Note",
    "NoteValue",
    "Severity",
    "clauses",
    "note",
    "read_note",
    "read_notes",
    "say",
    "say_all",
    "significant",
    "warning",
]

Severity = Literal["info", "warning"]
# a value: words or figures already written (kept as they are), a number (written the reader's way when shown), a
# note of its own (a clause inside the sentence) or notes joined as clauses ("; ", "；" in Chinese)
NoteValue = Union[str, int, float, "Note", list["Note"]]

MAX_VALUE_CHARS = 2_000  # a value is a name or a list of names: what a model chose is cut to this before it is kept


@dataclass(frozen=True)
class Note:
    """A sentence as data: ``key`` names its template (the English message, marked with ``N_()`` for the
    catalog), ``values`` fill its placeholders, and ``severity`` says whether a page shows it as a warning."""

    key: str
    values: dict[str, NoteValue] = field(default_factory=dict)
    severity: Severity = "info"

    @classmethod
    def kept(cls, text: str, severity: Severity = "info") -> Note:
        """A sentence as an earlier version kept it, or as a library wrote it: shown as it is (translated whole
        where it is a message of the catalog)."""
        return cls(key=text, values={}, severity=severity)

    def english(self) -> str:
        """The sentence in English, as a log or a plain-text export writes it."""
        from core.i18n import using

        with using("en"):
            return say(self)


def _capped(value: NoteValue) -> NoteValue:
    if isinstance(value, str) and len(value) > MAX_VALUE_CHARS:
        return value[: MAX_VALUE_CHARS - 1] + "…"
    return value


def _made(key: str, values: dict[str, NoteValue], severity: Severity) -> Note:
    return Note(key=key, values={k: _capped(v) for k, v in values.items()}, severity=severity)


@dataclass(frozen=True)
class Check:
    """A check a record reports (an export's, an upgrade's): what was checked, whether it passed, and what it found
    or what a library said."""

    name: Note
    ok: bool
    detail: Note | None = None


def note(key: str, /, **values: NoteValue) -> Note:
    """The note ``key`` says with ``values`` (each string value cut to ``MAX_VALUE_CHARS``)."""
    return _made(key, values, "info")


def warning(key: str, /, **values: NoteValue) -> Note:
    """As ``note``, shown as a warning."""
    return _made(key, values, "warning")


def clauses(parts: Iterable[Note]) -> list[Note]:
    """Notes to be shown as clauses of one sentence, joined the reader's way (a value of another note)."""
    return list(parts)


def _value(value: NoteValue) -> str:
    if isinstance(value, Note):
        return say(value)
    if isinstance(value, list):
        return pgettext("clauses", "; ").join(say(part) for part in value)
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return number(value)
    if isinstance(value, float):
        return significant(value)
    return value


def say(said: Note | str) -> str:
    """``said`` as a sentence in the current language: its template translated, its values filled in (notes among
    them said the same way). A plain string (text kept by an earlier version, or a library's own words) is looked
    up whole in the catalog and otherwise shown as it is."""
    if isinstance(said, str):
        return _(said) if said else said
    template = _(said.key) if said.key else ""  # gettext's "" is the catalog's header, never a sentence
    if not said.values:
        return template
    values = {k: _value(v) for k, v in said.values.items()}
    try:
        return template.format(**values)
    except (KeyError, IndexError, ValueError):  # a catalog entry that lost a placeholder: the English is right
        return said.key.format(**values)


def say_all(notes: Iterable[Note | str]) -> list[str]:
    """Each of ``notes`` said, as ``say`` does."""
    return [say(n) for n in notes]


def read_note(data: Any) -> Note:
    """A note as a record keeps it: a dict (this version) or a sentence (an earlier one, kept as it is)."""
    if isinstance(data, Note):
        return data
    if isinstance(data, str):
        return Note.kept(data)
    if isinstance(data, Mapping):
        import msgspec

        return msgspec.convert(dict(data), Note, strict=False)
    raise TypeError(f"not a note: {type(data).__name__}")


def read_notes(data: Iterable[Any] | None) -> list[Note]:
    """Each of a record's notes, as ``read_note`` reads it."""
    return [read_note(d) for d in data or ()]


def significant(value: float, digits: int = 3) -> str:
    """``value`` to ``digits`` significant figures without trailing zeros (146.6302 as "147", 0.012345 as
    "0.0123", 2.0 as "2"), written the reader's way (``core.i18n.number``: both languages write "." for decimals)."""
    if not math.isfinite(value) or value == 0:
        return number(value) if math.isfinite(value) else str(value)
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    text = number(round(value, decimals), decimals)
    return text.rstrip("0").rstrip(".") if decimals else text  # as "%.3g" writes it: 2, not 2.00
