"""The cells a notebook is made of: Markdown from the catalog's own sentences, and code built from lines, where
anything taken from a model (a name, a file) is a Python literal written with ``repr`` and never Markdown."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Cell", "code", "literal", "markdown"]


@dataclass(frozen=True)
class Cell:
    """One cell: "markdown" or "code", its source, and the tags it carries (the parameter cell's)."""

    kind: str
    source: str
    tags: tuple[str, ...] = field(default=())


def markdown(*paragraphs: str) -> Cell:
    """A Markdown cell of the lesson's paragraphs. They come from the catalog (``_()``) and the numbers of the
    plan, never from the model: a model's names go in code cells, as literals."""
    return Cell("markdown", "\n\n".join(p for p in paragraphs if p))


def code(*lines: str, tags: tuple[str, ...] = ()) -> Cell:
    """A code cell of ``lines`` (each may hold several lines)."""
    return Cell("code", "\n".join(lines).strip("\n"), tags)


def literal(value: Any) -> str:
    """``value`` as Python source: a model's name, shapes and file names reach the code only this way, so no name
    can end a string or start a statement."""
    return repr(value)
