"""Sentences core writes in English, shown in the reader's language.

Core keeps what it writes in English (a report kept across a change of language, a record shared with other
readers, the command line): its sentences are catalog entries marked with ``N_()`` and filled with
``str.format``. A page shows one with ``shown(text, KNOWN)``: the text is matched against the known English
sentences (placeholders become captures), and the matching one is translated and filled again with the same
values, each value itself shown the same way (a clause inside a sentence); clauses joined by "; " are shown each.
Text no sentence matches (what a library said) is shown as it is."""

from __future__ import annotations

import re
import string
from collections.abc import Iterable
from functools import cache

from core.i18n import _, language, pgettext

__all__ = ["shown", "shown_all"]

_FORMATTER = string.Formatter()


@cache
def _pattern(sentence: str) -> re.Pattern[str] | None:
    """The English sentence as a regular expression whose groups are its placeholders (None without any)."""
    parts: list[str] = []
    seen: set[str] = set()
    for literal, name, _spec, _conv in _FORMATTER.parse(sentence):
        parts.append(re.escape(literal))
        if name is None:
            continue
        parts.append(f"(?P={name})" if name in seen else f"(?P<{name}>.+?)")
        seen.add(name)
    return re.compile("".join(parts), re.DOTALL) if seen else None


def shown(text: str, known: Iterable[str], depth: int = 0) -> str:
    """``text`` in the current language when it is one of the ``known`` sentences (filled in any way), else
    itself."""
    if not text or language() == "en":
        return text
    sentences = tuple(known)
    for sentence in sentences:
        if text == sentence:
            return _(sentence)
        pattern = _pattern(sentence)
        match = pattern.fullmatch(text) if pattern is not None else None
        if match is None:
            continue
        values = match.groupdict()
        if depth < 3:
            values = {k: shown(v, sentences, depth + 1) for k, v in values.items()}
        return _(sentence).format(**values)
    if depth < 3 and "; " in text:  # clauses core joined (what changed in a node): each shown
        parts = [shown(part, sentences, depth + 1) for part in text.split("; ")]
        return pgettext("clauses", "; ").join(parts)
    return text


def shown_all(texts: Iterable[str], known: Iterable[str]) -> list[str]:
    """Each of ``texts`` shown, as ``shown`` does."""
    sentences = tuple(known)
    return [shown(t, sentences) for t in texts]
