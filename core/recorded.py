"""Sentences kept in English in a record that others read (a saved run's notes, what the machine did meanwhile)
and translated where they are shown: the record keeps the English a template wrote, the page finds the template
again and shows its translation with the same values (docs/i18n.md: never translate what is kept and shared).
Also the figures such sentences carry, to a few significant digits in the reader's way of writing numbers."""

from __future__ import annotations

import math
import re
import string
from collections.abc import Iterable
from functools import cache

from core.i18n import DEFAULT, _, language, number, pgettext

__all__ = ["shown", "shown_all", "significant"]

_FORMATTER = string.Formatter()


@cache
def _pattern(template: str) -> re.Pattern[str] | None:
    """The template as a regular expression, each placeholder a group (the same name twice: the same text); None
    for a template without placeholders (it is compared whole)."""
    parts: list[str] = []
    seen: set[str] = set()
    for literal, name, _spec, _conv in _FORMATTER.parse(template):
        parts.append(re.escape(literal))
        if name is None:
            continue
        parts.append(f"(?P={name})" if name in seen else f"(?P<{name}>.+?)")
        seen.add(name)
    return re.compile("".join(parts), re.DOTALL) if seen else None


def shown(text: str, templates: Iterable[str], depth: int = 0) -> str:
    """``text`` in the reader's language when one of ``templates`` (messages marked with ``N_()``; where a count
    decides the English form, one template per form) wrote it, each value shown the same way (a clause inside a
    sentence), and clauses core joined with "; " each shown; else ``text`` as it is (what a library said, a record
    written by another version of the app)."""
    if not text or language() == DEFAULT:
        return text
    sentences = tuple(templates)
    for template in sentences:
        if text == template:
            return _(template)
        pattern = _pattern(template)
        match = pattern.fullmatch(text) if pattern is not None else None
        if match is None:
            continue
        values = match.groupdict()
        if depth < 3:
            values = {k: shown(v, sentences, depth + 1) for k, v in values.items()}
        return _(template).format(**values)
    if depth < 3 and "; " in text:  # clauses core joined (what changed in a node): each shown
        return pgettext("clauses", "; ").join(shown(part, sentences, depth + 1) for part in text.split("; "))
    return text


def shown_all(texts: Iterable[str], templates: Iterable[str]) -> list[str]:
    """Each of ``texts`` shown, as ``shown`` does."""
    sentences = tuple(templates)
    return [shown(t, sentences) for t in texts]


def significant(value: float, digits: int = 3) -> str:
    """``value`` to ``digits`` significant figures without trailing zeros (146.6302 as "147", 0.012345 as
    "0.0123", 2.0 as "2"), written the reader's way (``core.i18n.number``: both languages write "." for decimals)."""
    if not math.isfinite(value) or value == 0:
        return number(value) if math.isfinite(value) else str(value)
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    text = number(round(value, decimals), decimals)
    return text.rstrip("0").rstrip(".") if decimals else text  # as "%.3g" writes it: 2, not 2.00
