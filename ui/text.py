"""Showing text taken from a model: escaped, so names and doc strings cannot become markup or links."""

from __future__ import annotations

import re

import pandas as pd

from core.i18n import ngettext, number

__all__ = ["md_escape", "human_bytes", "escaped_frame", "md_table"]

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()<>#+\-.!|~:$&])")
_AUTOLINK = re.compile(r"(?i)(https?|ftp|mailto|file)\\:|www\\\.")


def md_escape(text: str, limit: int = 300) -> str:
    """Plain text for st.markdown: every markdown and HTML character escaped, and long text cut short."""
    text = str(text)
    if len(text) > limit:
        text = text[:limit] + f"… ({len(text):,} characters)"
    text = text.replace("\n", " ").replace("\r", " ")
    text = _MARKDOWN_SPECIAL.sub(r"\\\1", text)
    # The renderer turns bare URLs into links even when every character is escaped; a zero-width space
    # after the scheme (or "www") keeps the text readable and the link dead; before an @, an email's
    text = _AUTOLINK.sub(lambda m: m.group(0)[:-2] + "\u200b" + m.group(0)[-2:], text)
    return text.replace("@", "\u200b@")


def human_bytes(size: int) -> str:
    """``size`` in bytes, kB, MB or GB (powers of 1000, as the browser's upload box counts), its number written
    the current language's way."""
    if size < 1000:
        return ngettext("{count} byte", "{count} bytes", size).format(count=number(size))
    value = size / 1000
    for unit in ("kB", "MB"):
        if value < 1000:
            return f"{number(value, 1)} {unit}"
        value /= 1000
    return f"{number(value, 1)} GB"


def escaped_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy for st.table, which renders Markdown in cells: every text cell escaped. Column by column, leaving
    numeric ones as they are (DataFrame.map, cell by cell, was a tenth of a page run's time on the Model page)."""
    out = frame.copy()
    for i in range(frame.shape[1]):
        column = frame.iloc[:, i]
        if not (pd.api.types.is_numeric_dtype(column) or pd.api.types.is_datetime64_any_dtype(column)):
            out.isetitem(i, [md_escape(v, 500) if isinstance(v, str) else v for v in column])
    return out


def md_table(frame: pd.DataFrame, limit: int = 500) -> str:
    """``frame`` as a Markdown table for st.markdown, every header and cell escaped (``|`` too, so a cell stays
    one cell). The Model page's card draws its small tables this way: st.table makes a new visitor's browser load
    Arrow's JavaScript (about 740 kB) before the card can show."""

    def row(cells: list[object]) -> str:
        return "| " + " | ".join(md_escape(str(c), limit) for c in cells) + " |"

    lines = [row(list(frame.columns)), "|" + "---|" * frame.shape[1]]
    lines += [row(list(values)) for values in frame.itertuples(index=False)]
    return "\n".join(lines)
