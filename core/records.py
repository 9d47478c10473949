"""Turn result dataclasses into JSON-able data and back, so results cross process boundaries as JSON."""

from __future__ import annotations

import dataclasses
import enum
import math
import types
import typing
from pathlib import PurePath
from typing import Any, TypeVar

__all__ = ["from_jsonable", "to_jsonable"]

T = TypeVar("T")


def to_jsonable(obj: Any) -> Any:
    """A structure of dicts, lists, str, int, float, bool and None; NaN and infinities become strings."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, enum.Enum):
        return to_jsonable(obj.value)
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, PurePath):
        return str(obj)
    if isinstance(obj, bool) or obj is None or isinstance(obj, str):
        return obj
    if isinstance(obj, int):
        return int(obj)
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else str(obj)
    if hasattr(obj, "item"):  # numpy scalars
        return to_jsonable(obj.item())
    raise TypeError(f"cannot turn {type(obj).__name__} into JSON")


def from_jsonable(cls: type[T], data: Any) -> T:
    """Build ``cls`` (a dataclass, possibly nested, with list/dict/optional fields) from JSON-able data."""
    return typing.cast(T, _build(cls, data))


def _build(tp: Any, data: Any) -> Any:
    if data is None:
        return None
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(tp) if a is not type(None)]
        for option in options:
            try:
                return _build(option, data)
            except (TypeError, ValueError):
                continue
        return data
    if origin in (list, tuple):
        (item,) = typing.get_args(tp)[:1] or (Any,)
        return [_build(item, v) for v in data]
    if origin is dict:
        _, value_tp = typing.get_args(tp) or (Any, Any)
        return {k: _build(value_tp, v) for k, v in data.items()}
    if tp is Any:
        return data
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if not isinstance(data, dict):
            raise TypeError(f"expected an object for {tp.__name__}")
        hints = typing.get_type_hints(tp)
        kwargs = {f.name: _build(hints[f.name], data[f.name]) for f in dataclasses.fields(tp) if f.name in data}
        return tp(**kwargs)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return tp(data)
    if tp is float and isinstance(data, (int, float, str)):
        return float(data)
    if tp in (int, str, bool) and not isinstance(data, tp):
        raise TypeError(f"expected {tp.__name__}, got {type(data).__name__}")
    return data
