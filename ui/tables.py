"""Long tables shown a page at a time: the server reads, builds and sends only the rows in view.

A table is either a list the result holds, or a :class:`RowFile` the worker wrote into this session's folder
(a large model's nodes): then only the pages in view are read, and a filter keeps row numbers, not rows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

import streamlit as st

from core.i18n import _, number
from core.tables import PAGE_ROWS, RowFile, iter_rows, read_rows
from ui import session

__all__ = ["PAGE_ROWS", "Rows", "all_rows", "page_of", "page_of_rows", "row_count"]

T = TypeVar("T")
Rows = RowFile | Sequence[T]


def page_of(items: Sequence[T], key: str, total: int | None = None, what: str = "rows") -> list[T]:
    """The page of ``items`` the reader chose (a page picker appears past PAGE_ROWS), and a caption that says how
    many matched out of ``total`` (``what``: the rows' name, translated by the caller)."""
    pages = max(1, -(-len(items) // PAGE_ROWS))
    page = (
        int(st.number_input(_("Page (of {pages})").format(pages=number(pages)), 1, pages, 1, key=key))
        if pages > 1
        else 1
    )
    said = {"shown": number(len(items)), "total": number(total if total is not None else len(items)), "what": what}
    if pages > 1:
        st.caption(_("{shown} of {total} {what}; {rows} per page").format(**said, rows=number(PAGE_ROWS)))
    else:
        st.caption(_("{shown} of {total} {what}").format(**said))
    return list(items[(page - 1) * PAGE_ROWS : page * PAGE_ROWS])


def row_count(rows: Rows[T]) -> int:
    return rows.rows if isinstance(rows, RowFile) else len(rows)


def all_rows(rows: Rows[T], kind: type[T]) -> Iterator[T]:
    """Every row, a page at a time when they lie in a file."""
    if isinstance(rows, RowFile):
        yield from iter_rows(rows, kind, session.workspace().path)
    else:
        yield from rows


def page_of_rows(
    rows: Rows[T], kind: type[T], key: str, keep: Callable[[T], bool] | None = None, what: str = "rows"
) -> list[T]:
    """The page the reader chose of the rows that ``keep`` accepts (all of them without it)."""
    if not isinstance(rows, RowFile):
        return page_of([r for r in rows if keep is None or keep(r)], key, len(rows), what)
    numbers: Sequence[int] = (
        range(rows.rows) if keep is None else [n for n, row in enumerate(all_rows(rows, kind)) if keep(row)]
    )
    return read_rows(rows, page_of(numbers, key, rows.rows, what), kind, session.workspace().path)
