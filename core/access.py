"""What a job may touch on disk, declared on its parameters, so its sandbox can be built from its arguments.

A job's function marks each path it takes: ``ReadPath`` (a model file or data file: the job may read it and
the files beside it, such as external data) or ``WritePath`` (a folder the job writes its results into). The
worker's sandbox shows the job those paths and nothing else of the machine's data (core.jobs.sandbox).
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Annotated, Any

__all__ = ["READ", "WRITE", "Access", "ReadPath", "WritePath", "map_paths", "paths_in"]


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


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    """A dataclass's field hints with their marks: read once per class (``typing.get_type_hints`` evaluates every
    annotation each call: 0.2 s for a request of 500 inputs, on every page run that asks what a job was asked)."""
    return typing.get_type_hints(cls, include_extras=True)


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
        hints = _hints(type(value))
        for field in dataclasses.fields(value):
            yield from paths_in(getattr(value, field.name), hints.get(field.name, Any))


def map_paths(value: Any, hint: Any, change: Callable[[Access, str], str]) -> Any:
    """``value`` with every marked path replaced by ``change(access, path)``, found as ``paths_in`` finds them
    (a job sent to another machine runs on that machine's copies of its files)."""
    mark, base = _marks(hint)
    if mark is not None and isinstance(value, str):
        return change(mark, value) if value else value
    if value is None:
        return None
    origin = typing.get_origin(base)
    if origin in (list, tuple) and isinstance(value, (list, tuple)):
        (item,) = typing.get_args(base)[:1] or (Any,)
        return type(value)(map_paths(element, item, change) for element in value)
    if origin in (typing.Union, types.UnionType):
        for option in typing.get_args(base):
            if option is not type(None):
                return map_paths(value, option, change)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        hints = _hints(type(value))
        changed = {
            f.name: map_paths(getattr(value, f.name), hints.get(f.name, Any), change) for f in dataclasses.fields(value)
        }
        return dataclasses.replace(value, **{k: v for k, v in changed.items() if v is not getattr(value, k)})
    return value
