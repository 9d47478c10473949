"""What a job may touch on disk, declared on its parameters, so its sandbox can be built from its arguments.

A job's function marks each path it takes: ``ReadPath`` (a model file or data file: the job may read it and
the files beside it, such as external data) or ``WritePath`` (a folder the job writes its results into). The
worker's sandbox shows the job those paths and nothing else of the machine's data (core.jobs.sandbox).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated, Any

__all__ = ["READ", "WRITE", "Access", "ReadPath", "WritePath", "paths_in"]


@dataclass(frozen=True)
class Access:
    mode: str  # "read" or "write"


READ = Access("read")
WRITE = Access("write")
ReadPath = Annotated[str, READ]
WritePath = Annotated[str, WRITE]


def _marks(hint: Any) -> tuple[Access | None, Any]:
    """The access mark of an Annotated hint, and the type under it."""
    if typing.get_origin(hint) is Annotated:
        base, *extras = typing.get_args(hint)
        return next((e for e in extras if isinstance(e, Access)), None), base
    return None, hint


def paths_in(value: Any, hint: Any) -> Iterator[tuple[Access, str]]:
    """Every marked path in ``value`` of type ``hint``: in lists, optionals and dataclass fields at any depth."""
    mark, base = _marks(hint)
    if mark is not None and isinstance(value, str):
        if value:
            yield mark, value
        return
    if value is None:
        return
    origin = typing.get_origin(base)
    if origin in (list, tuple) and isinstance(value, (list, tuple)):
        (item,) = typing.get_args(base)[:1] or (Any,)
        for element in value:
            yield from paths_in(element, item)
    elif origin in (typing.Union, types.UnionType):
        for option in typing.get_args(base):
            if option is not type(None):
                yield from paths_in(value, option)
                return
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        hints = typing.get_type_hints(type(value), include_extras=True)
        for field in dataclasses.fields(value):
            yield from paths_in(getattr(value, field.name), hints.get(field.name, Any))
