"""Translation: gettext catalogs under locale/ (Babel extracts and compiles them), the language of the current run
in a context variable, and numbers written the way that language writes them.

Mark a string with ``_("…")`` where it is shown, ``N_("…")`` where it is defined earlier (a table read at import
time) and translated with ``_()`` when shown, ``ngettext(singular, plural, n)`` where a count decides the form.
Placeholders are ``str.format`` names, filled after translation: ``_("{count} nodes").format(count=…)``. How to
extract, translate and compile: docs/i18n.md."""

from __future__ import annotations

import _thread
import contextlib
import gettext
import io
import os
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cache
from pathlib import Path

__all__ = [
    "DEFAULT",
    "LANGUAGES",
    "LOCALE_DIR",
    "Language",
    "N_",
    "_",
    "bounds",
    "from_locale",
    "language",
    "language_of",
    "ngettext",
    "number",
    "pgettext",
    "set_language",
    "translations",
    "using",
]

LOCALE_DIR = Path(__file__).resolve().parents[1] / "locale"


@dataclass(frozen=True, kw_only=True)
class Language:
    """A language the app speaks: one row holds everything that differs between languages (a new language is a
    row here and a catalog under locale/, docs/i18n.md)."""

    code: str  # the address's ?lang=, the --lang of the command line, the catalog's folder under locale/
    name: str  # its own name, as the language picker shows it
    babel: str  # how Babel's CLDR data names it, for numbers
    html: str  # the lang attribute of a page written in it (the script too: zh-Hans is simplified Chinese)
    chart_fonts: tuple[str, ...] = ()  # fonts with its glyphs, tried first by a notebook's charts (matplotlib)


LANGUAGES: dict[str, Language] = {
    row.code: row
    for row in (
        Language(code="en", name="English", babel="en", html="en"),
        Language(
            code="zh",
            name="中文",
            babel="zh_Hans_CN",
            html="zh-Hans",
            # each missing font is skipped: matplotlib falls back glyph by glyph
            chart_fonts=("Noto Sans CJK SC", "Microsoft YaHei", "PingFang SC", "SimHei", "DejaVu Sans"),
        ),
    )
}
DEFAULT = "en"  # the language the code is written in: it needs no catalog

_current: ContextVar[str] = ContextVar("workbench_language", default=DEFAULT)


def from_locale(tag: str | None) -> str:
    """The language for a browser's locale (``navigator.language``: "zh-CN", "zh-TW", "en-GB"), else English."""
    base = (tag or "").replace("_", "-").split("-")[0].lower()
    return base if base in LANGUAGES else DEFAULT


def set_language(code: str) -> None:
    """Speak ``code`` from here on in this thread or task (a Streamlit run sets it first thing)."""
    _current.set(code if code in LANGUAGES else DEFAULT)


def language() -> str:
    return _current.get()


def language_of(code: str | None = None) -> Language:
    """The row of language ``code`` (the current language's when None; the default's for a code it does not
    speak)."""
    return LANGUAGES.get(_current.get() if code is None else code) or LANGUAGES[DEFAULT]


@contextmanager
def using(code: str) -> Iterator[None]:
    """Speak ``code`` inside the block only."""
    token = _current.set(code if code in LANGUAGES else DEFAULT)
    try:
        yield
    finally:
        _current.reset(token)


@cache
def translations(code: str) -> gettext.NullTranslations:
    """The catalog of ``code``, compiled once per process from its committed .po; fuzzy entries are left out, as
    gettext's tools do."""
    po = LOCALE_DIR / code / "LC_MESSAGES" / "messages.po"
    if code == DEFAULT or not po.is_file():
        return gettext.NullTranslations()
    locale = LANGUAGES[code].babel if code in LANGUAGES else code
    try:
        return gettext.GNUTranslations(io.BytesIO(_compiled(po, locale)))
    except (OSError, ValueError, LookupError, struct.error):  # a kept .mo cut short or garbled: compiled again
        return gettext.GNUTranslations(io.BytesIO(_compiled(po, locale, kept_ok=False)))


def _compiled(po: Path, locale: str, kept_ok: bool = True) -> bytes:
    """The .po compiled (a .mo file's bytes): kept beside it under its content's hash, so that the next process
    (a command, a sandboxed worker of a job in that language) reads it in milliseconds where Babel's parse took
    0.1 s of every process; compiled in memory where the folder cannot be written (a worker's read-only view),
    and compiled anew whenever the .po changes (a kept one of other text is removed)."""
    import hashlib

    text = po.read_bytes()
    kept = po.with_name(f"{po.stem}.{hashlib.blake2b(text, digest_size=12).hexdigest()}.mo")
    if kept_ok:  # else the kept one would not parse: it is written again
        try:
            return kept.read_bytes()
        except OSError:
            pass  # not compiled yet for this text
    from babel.messages.mofile import write_mo
    from babel.messages.pofile import read_po

    compiled = io.BytesIO()
    write_mo(compiled, read_po(io.BytesIO(text), locale=locale), use_fuzzy=False)
    data = compiled.getvalue()
    partial = kept.with_name(f".{kept.name}.{os.getpid()}.{_thread.get_ident()}")  # two threads: two files
    try:
        partial.write_bytes(data)
        os.replace(partial, kept)  # whole or not at all, for a process reading it at the same time
        for old in po.parent.glob(f"{po.stem}.*.mo"):
            if old != kept:
                old.unlink(missing_ok=True)
    except OSError:
        with contextlib.suppress(OSError):
            partial.unlink()
    return data


def _(message: str) -> str:
    """``message`` in the current language (itself where the catalog has no translation)."""
    return translations(_current.get()).gettext(message)


def N_(message: str) -> str:
    """Marks ``message`` for the catalog without translating it yet: it is translated where it is shown."""
    return message


def ngettext(singular: str, plural: str, n: int) -> str:
    """The form of the message for count ``n`` in the current language (Chinese has one form, English two)."""
    return translations(_current.get()).ngettext(singular, plural, n)


def pgettext(context: str, message: str) -> str:
    """``message`` in the current language, told apart by ``context`` from the same words elsewhere (a list's
    separator ", " is "、" in Chinese, where a clause's comma is "，")."""
    return translations(_current.get()).pgettext(context, message)


def bounds(low: float, high: float, digits: int = 1) -> tuple[str, str]:
    """An interval's ends with ``digits`` decimals, or more (up to three) where fewer would print the same
    number twice ("between 5.4× and 5.4×" reads as a mistake; 5.38× and 5.44× does not)."""
    for shown in range(digits, max(digits, 3) + 1):
        ends = number(low, shown), number(high, shown)
        if ends[0] != ends[1]:
            return ends
    return number(low, digits), number(high, digits)  # the same number: more decimals would not tell them apart


def number(value: float, digits: int | None = None) -> str:
    """``value`` with the current language's grouping and decimal signs; ``digits`` fixes the decimals shown
    (else as many as it has, up to three)."""
    if type(value) is int and not digits and language_of().babel == "en":
        # an English whole number, as CLDR writes it, without loading Babel's locale data: a tenth of a second
        # of every command that prints a count (python -m core inspect: issue #51)
        return f"{value:,}"
    from babel.numbers import format_decimal

    pattern = None if digits is None else "#,##0" + ("." + "0" * digits if digits else "")
    return format_decimal(value, format=pattern, locale=language_of().babel)
