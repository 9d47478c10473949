"""Long tables shown a page at a time: the server builds and sends only the rows in view."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import streamlit as st

__all__ = ["PAGE_ROWS", "page_of"]

T = TypeVar("T")
PAGE_ROWS = 1_000


def page_of(items: Sequence[T], key: str, total: int | None = None, what: str = "rows") -> list[T]:
    """The page of ``items`` the reader chose (a page picker appears past PAGE_ROWS), and a caption that says how
    many matched out of ``total``."""
    pages = max(1, -(-len(items) // PAGE_ROWS))
    page = int(st.number_input(f"Page (of {pages:,})", 1, pages, 1, key=key)) if pages > 1 else 1
    per_page = f"; {PAGE_ROWS:,} per page" if pages > 1 else ""
    st.caption(f"{len(items):,} of {total if total is not None else len(items):,} {what}{per_page}")
    return list(items[(page - 1) * PAGE_ROWS : page * PAGE_ROWS])
