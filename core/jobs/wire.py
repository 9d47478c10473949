"""What crosses the worker boundary, and how: typed values as MessagePack (msgspec), in length-prefixed frames.

A job's arguments and result are the dataclasses the core functions take and return; msgspec encodes them
and decodes them straight back into those types, checking every field on the way (results of a 30,000-node
decode cross in about a third of a second, where the hand-written JSON mapping it replaced took 6.6 s).
NaN and infinities travel as floats. ``to_data`` gives the same values as plain JSON-able data, for the
command line's ``--json`` and the history's JSON columns.
"""

from __future__ import annotations

import enum
import math
import struct
from pathlib import PurePath
from typing import IO, Any, TypeVar

import msgspec

__all__ = [
    "Failed",
    "Finished",
    "Message",
    "ProgressReport",
    "Ready",
    "Request",
    "Started",
    "WireError",
    "decode",
    "decode_message",
    "encode",
    "from_data",
    "read_frame",
    "to_data",
    "write_frame",
]

T = TypeVar("T")
_HEADER = struct.Struct(">I")  # a frame: its length as 4 bytes, big-endian, then the MessagePack bytes
MAX_FRAME = 1 << 31


class WireError(ValueError):
    """Bytes that do not decode into the type asked for."""


def _encode_hook(obj: Any) -> Any:
    if isinstance(obj, str):  # a subclass of str, such as torch's version string
        return str(obj)
    if isinstance(obj, PurePath):
        return str(obj)
    if isinstance(obj, enum.Enum):
        return obj.value
    if hasattr(obj, "item") and hasattr(obj, "dtype"):  # numpy scalars
        return obj.item()
    if isinstance(obj, (set, frozenset)):
        return sorted(obj, key=str)
    raise NotImplementedError(f"cannot send a {type(obj).__name__} across the worker boundary")


_ENCODER = msgspec.msgpack.Encoder(enc_hook=_encode_hook)


def encode(value: Any) -> bytes:
    """MessagePack bytes of any value made of dataclasses, lists, dicts, strings and numbers."""
    return _ENCODER.encode(value)


def decode(data: bytes | memoryview, type_: type[T] | Any = Any) -> T:
    """``data`` decoded as ``type_`` (a dataclass, a list of them, ``int``…), every field checked."""
    try:
        return msgspec.msgpack.decode(data, type=type_)  # type: ignore[no-any-return]
    except msgspec.ValidationError as exc:
        raise WireError(f"does not fit {getattr(type_, '__name__', type_)}: {exc}") from None
    except msgspec.DecodeError as exc:
        raise WireError(f"not MessagePack: {exc}") from None


def to_data(value: Any) -> Any:
    """Plain JSON-able data (dicts, lists, str, int, float, bool, None); non-finite floats become strings."""
    return _finite(msgspec.to_builtins(value, enc_hook=_encode_hook))


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def from_data(data: Any, type_: type[T]) -> T:
    """JSON-able data (as ``to_data`` gives it, or as an earlier version stored it) back into ``type_``."""
    try:
        return msgspec.convert(data, type=type_, strict=False)
    except msgspec.ValidationError as exc:
        raise WireError(f"does not fit {getattr(type_, '__name__', type_)}: {exc}") from None


# ----------------------------------------------------------------------------------------------- messages
class Request(msgspec.Struct, frozen=True):
    """What the server asks of a worker: the function, its encoded arguments, and how to run it."""

    target: str  # "package.module:function", from the job table
    args: msgspec.Raw
    limits: msgspec.Raw  # the server's IntakeLimits, for jobs that take ``limits``
    # (path the job uses, where it lies in the sandbox): links a pre-started worker makes in its own private
    # view of the data folder before it runs the job (core.jobs.warm), so the job sees the paths it was given
    links: list[tuple[str, str]] = []
    language: str = "en"  # the reader's language, for the messages the job writes (core.i18n)


class Message(msgspec.Struct, tag_field="type", frozen=True):
    """One message from the worker to the server."""


class Started(Message, tag="started", frozen=True):
    pid: int


class Ready(Message, tag="ready", frozen=True):
    """A pre-started worker has imported its libraries and waits for its one job."""

    pid: int


class ProgressReport(Message, tag="progress", frozen=True):
    fraction: float
    message: str


class Finished(Message, tag="result", frozen=True):
    value: msgspec.Raw


class Failed(Message, tag="error", frozen=True):
    error: str  # a WorkbenchError class name, "MemoryError", or "JobFailed"
    message: str
    exc_type: str = ""
    traceback: str = ""


_MESSAGES = msgspec.msgpack.Decoder(Started | Ready | ProgressReport | Finished | Failed)


def write_frame(stream: IO[bytes], payload: bytes) -> None:
    stream.write(_HEADER.pack(len(payload)) + payload)
    stream.flush()


def read_frame(stream: IO[bytes]) -> bytes | None:
    """The next frame's bytes, or None at the end of the stream (or a frame cut short by a dying worker)."""
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return None
    (length,) = _HEADER.unpack(header)
    if length > MAX_FRAME:
        return None
    payload = stream.read(length)
    return payload if len(payload) == length else None


def decode_message(payload: bytes) -> Message | None:
    """A worker's message, or None for bytes that are not one (never trusted to be well formed)."""
    try:
        return _MESSAGES.decode(payload)  # type: ignore[no-any-return]
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
