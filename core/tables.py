"""Long tables kept in a job's folder a page at a time, so that whoever shows them loads only the page in view.

A worker job that makes a table of tens of thousands of rows (the nodes of a large model, where each one
runs) writes it with :func:`write_rows` into the folder it was given, and its result carries the small
:class:`RowFile` that says where the pages lie. The reader decodes one page with the same typed MessagePack
as every job result (core.jobs.wire), so a page is checked against its row type like the result itself.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import msgspec

from core.errors import ResultFileError
from core.workspace import open_within

__all__ = ["PAGE_ROWS", "RowFile", "iter_rows", "read_page", "read_rows", "write_rows"]

T = TypeVar("T")
PAGE_ROWS = 1_000
MAX_PAGE_BYTES = 256 * 2**20  # a page of 1,000 rows whose texts are already shortened is a few MB at most


@dataclass(kw_only=True)
class RowFile:
    """Where a table's pages lie: page ``i`` holds rows ``i * page_rows`` up to the next page, at bytes
    ``offsets[i]:offsets[i + 1]`` of the file."""

    path: str
    rows: int
    page_rows: int
    offsets: list[int]

    @property
    def pages(self) -> int:
        return len(self.offsets) - 1


def write_rows(path: str | Path, rows: Sequence[object], page_rows: int = PAGE_ROWS) -> RowFile:
    """Write ``rows`` (dataclasses of one type) to ``path`` in pages of ``page_rows``."""
    encoder = msgspec.msgpack.Encoder()
    offsets = [0]
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        for start in range(0, len(rows), page_rows):
            offsets.append(offsets[-1] + fh.write(encoder.encode(list(rows[start : start + page_rows]))))
    return RowFile(path=str(path), rows=len(rows), page_rows=page_rows, offsets=offsets)


def _checked(file: RowFile) -> None:
    if file.page_rows < 1 or any(b < a for a, b in zip(file.offsets, file.offsets[1:], strict=False)):
        raise ResultFileError("A table of this result has a broken index; run the step again.")


def read_page(file: RowFile, page: int, kind: type[T], within: str | Path) -> list[T]:
    """Page ``page`` (from 0) of ``file``, decoded as rows of ``kind``. The file must lie in ``within``, the
    folder its job was given: a result comes from a worker that read an untrusted model."""
    _checked(file)
    if not 0 <= page < file.pages:
        return []
    start, end = file.offsets[page], file.offsets[page + 1]
    if end - start > MAX_PAGE_BYTES:
        raise ResultFileError(
            f"A page of this table is {end - start:,} bytes, more than a page may be; it is not read."
        )
    with open_within(file.path, within) as fh:
        fh.seek(start)
        data = fh.read(end - start)
    try:
        return msgspec.msgpack.decode(data, type=list[kind])  # type: ignore[valid-type]
    except msgspec.MsgspecError as exc:
        raise ResultFileError(f"A page of this result's table could not be read ({exc}); run the step again.") from exc


def iter_rows(file: RowFile, kind: type[T], within: str | Path) -> Iterator[T]:
    """Every row, one page in memory at a time."""
    for page in range(file.pages):
        yield from read_page(file, page, kind, within)


def read_rows(file: RowFile, numbers: Sequence[int], kind: type[T], within: str | Path) -> list[T]:
    """The rows at ``numbers`` (ascending), reading each page they fall in once."""
    found: list[T] = []
    loaded: tuple[int, list[T]] = (-1, [])
    for number in numbers:
        page = number // file.page_rows
        if page != loaded[0]:
            loaded = (page, read_page(file, page, kind, within))
        offset = number - page * file.page_rows
        if 0 <= offset < len(loaded[1]):
            found.append(loaded[1][offset])
    return found
