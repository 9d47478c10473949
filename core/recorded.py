"""Sentences kept in English in a record that others read (a saved run's notes, what the machine did meanwhile)
and translated where they are shown: the record keeps the English a template wrote, the page finds the template
again and shows its translation with the same values (docs/i18n.md: never translate what is kept and shared).
Also the figures such sentences carry, to a few significant digits in the reader's way of writing numbers."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from functools import cache

from core.i18n import _, number

__all__ = ["shown", "significant"]

_FIELD = re.compile(r"\{(\w+)\}")


@cache
def _pattern(template: str) -> re.Pattern[str]:
    """The template as a regular expression, each placeholder a group (the same name twice: the same text)."""
    parts: list[str] = []
    seen: set[str] = set()
    at = 0
    for field in _FIELD.finditer(template):
        name = field.group(1)
        parts += [re.escape(template[at : field.start()]), f"(?P={name})" if name in seen else f"(?P<{name}>.+?)"]
        seen.add(name)
        at = field.end()
    parts.append(re.escape(template[at:]))
    return re.compile("".join(parts), re.DOTALL)


def shown(text: str, templates: Iterable[str]) -> str:
    """``text`` in the reader's language when one of ``templates`` (messages marked with ``N_()``; where a count
    decides the English form, one template per form) wrote it; else ``text`` as it is (a record written by another
    version of the app)."""
    for template in templates:
        match = _pattern(template).fullmatch(text)
        if match is not None:
            return _(template).format(**match.groupdict())
    return text


def significant(value: float, digits: int = 3) -> str:
    """``value`` to ``digits`` significant figures (146.6302 as "147", 0.012345 as "0.0123"), written the reader's
    way (``core.i18n.number``)."""
    if not math.isfinite(value) or value == 0:
        return number(value) if math.isfinite(value) else str(value)
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    return number(round(value, decimals), decimals)
