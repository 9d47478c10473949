"""Showing text taken from a model: escaped, so names and doc strings cannot become markup or links."""

from __future__ import annotations

import re

import pandas as pd

__all__ = ["md_escape", "human_bytes", "escaped_frame"]

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
    value = float(size)
    for unit in ("bytes", "kB", "MB", "GB"):  # powers of 1000, as the browser's upload box counts
        if value < 1000 or unit == "GB":
            return f"{value:,.0f} {unit}" if unit == "bytes" else f"{value:,.1f} {unit}"
        value /= 1000
    return f"{value:,.1f} TB"


def escaped_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy for st.table, which renders Markdown in cells: every text cell escaped."""
    return frame.map(lambda v: md_escape(v, 500) if isinstance(v, str) else v)
