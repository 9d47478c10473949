"""A model's graph without its weights: an ONNX file that holds its weights inside is streamed, field by field, into a
graph file and a data file beside it, each large tensor moved to the data file by offset (ONNX's external data).

Why: onnx reads a file whole and then parses it (the bytes and the message: twice the file), and ONNX Runtime builds
its session alike; from the weightless graph onnx reads the structure alone and ONNX Runtime maps the weights from
the data file (issue #51). Neither the file's bytes nor a parsed message are ever held here: the fields are read
from the file as they come, a large tensor's bytes copied a chunk at a time, and only the new graph (the structure,
small) is built in memory.

Tensors move wherever they are: a graph's initializers, a Constant node's value or any tensor attribute, and the
same in every subgraph (If, Loop, Scan). A tensor moves when its bytes are ``raw_data`` (or a float tensor's packed
``float_data``, the same bytes) of at least ``min_bytes``; a smaller one stays inline, as does anything else
(sparse tensors, functions, training info). A model that already keeps weights in data files is left as it is
(their locations are relative to its own folder, and ONNX Runtime maps them already).
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

__all__ = ["split_weights"]

# field number -> the message it holds, for every field on the way to a tensor (onnx.proto)
_FIELDS: dict[str, dict[int, str]] = {
    "model": {7: "graph"},
    "graph": {1: "node", 5: "tensor"},
    "node": {5: "attribute"},
    "attribute": {5: "tensor", 6: "graph", 10: "tensor", 11: "graph"},
}
_RAW_DATA, _FLOAT_DATA, _DATA_TYPE, _SEGMENT, _EXTERNAL_DATA, _DATA_LOCATION = 9, 4, 2, 3, 13, 14
_FLOAT = 1
_LOCATION = b"\x0a\x08location"  # the key of an external-data entry, as it is written (field 1, 8 bytes)
_ALIGN = 4096  # each tensor starts on a page of the data file: ONNX Runtime maps it as it lies
_CHUNK = 1 << 20  # a tensor's bytes copied this much at a time
_BUFFER = 1 << 16
_DEPTH = 48  # subgraphs within subgraphs deeper than this are copied as they are


class _Unsplittable(Exception):
    """The file cannot be split (not wire format, a field past its message's end, weights already external)."""


def split_weights(path: str | Path, folder: str | Path, min_bytes: int = 1024) -> Path | None:
    """Write ``path``'s graph without its weights to ``folder`` (``model.onnx``, the weights in ``model.data``
    beside it) and return the new graph's path; None, with nothing left in ``folder``, when no tensor of
    ``min_bytes`` or more lies inside the file, when the model keeps weights in data files already, or when the file
    does not read as protobuf (the caller then reads it as it is, and says what is wrong with it)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    graph, data_path = folder / "model.onnx", folder / "model.data"
    try:
        with open(path, "rb", buffering=_BUFFER) as source, open(data_path, "wb", buffering=_BUFFER) as data:
            size = source.seek(0, io.SEEK_END)
            source.seek(0)
            splitter = _Splitter(source, data, min_bytes)
            body = splitter.message(size, "model", 0)
            moved = splitter.moved
        if moved:
            graph.write_bytes(body)
            return graph
    except (_Unsplittable, OSError):  # a disk full included: the file is read as it is
        pass
    for written in (graph, data_path):
        written.unlink(missing_ok=True)
    return None


def _varint_bytes(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited field."""
    return _varint_bytes(number << 3 | 2) + _varint_bytes(len(payload)) + payload


class _Splitter:
    def __init__(self, source: BinaryIO, data: BinaryIO, min_bytes: int) -> None:
        self.source, self.data, self.min_bytes = source, data, max(min_bytes, 1)
        self.location = _field(1, b"location") + _field(2, b"model.data")
        self.moved = 0  # tensors moved to the data file

    def _varint(self) -> int:
        result = shift = 0
        while True:
            byte = self.source.read(1)
            if not byte:
                raise _Unsplittable("truncated varint")
            result |= (byte[0] & 0x7F) << shift
            if not byte[0] & 0x80:
                return result
            shift += 7
            if shift > 63:
                raise _Unsplittable("varint longer than 10 bytes")

    def _read(self, length: int) -> bytes:
        found = self.source.read(length)
        if len(found) != length:
            raise _Unsplittable("truncated field")
        return found

    def _fields(self, end: int) -> Iterator[tuple[int, int, int, int | None]]:
        """(start, number, wire type, payload length or None) of each field up to ``end``, the file left at its
        payload (a varint's or fixed number's included)."""
        while (start := self.source.tell()) < end:
            key = self._varint()
            number, wire = key >> 3, key & 7
            if number == 0 or wire not in (0, 1, 2, 5):
                raise _Unsplittable(f"field {number} of wire type {wire}")
            length = self._varint() if wire == 2 else None
            if length is not None and self.source.tell() + length > end:
                raise _Unsplittable(f"field {number} runs past its message")
            yield start, number, wire, length

    def _rest(self, start: int, wire: int, length: int | None) -> bytes:
        """The field that starts at ``start`` as it is, tag included (the file is at its payload)."""
        if wire == 0:
            self._varint()
        else:
            self.source.seek({1: 8, 5: 4}.get(wire, length or 0), io.SEEK_CUR)
        return self._since(start)

    def _ended(self, end: int) -> None:
        """A message's last field (a varint or a fixed number) must end where the message does, not past it."""
        if self.source.tell() != end:
            raise _Unsplittable("a field runs past its message")

    def _since(self, start: int) -> bytes:
        """The bytes from ``start`` to where the file is (read again)."""
        end = self.source.tell()
        self.source.seek(start)
        return self._read(end - start)

    def message(self, end: int, kind: str, depth: int) -> bytes:
        """The message up to ``end`` of type ``kind``, its tensors of ``min_bytes`` or more moved to the data file."""
        out = bytearray()
        holds = _FIELDS[kind]
        for start, number, wire, length in self._fields(end):
            inner = holds.get(number) if wire == 2 else None
            if inner is None or length is None or length < self.min_bytes or depth >= _DEPTH:
                kept = self._rest(start, wire, length)  # nothing inside it can move: copied as it is
                if _LOCATION in kept:  # a small tensor whose data is already in a file (or a name that says so)
                    raise _Unsplittable("weights already external")
                out += kept
                continue
            until = self.source.tell() + length
            body = self.tensor(until) if inner == "tensor" else self.message(until, inner, depth + 1)
            out += _field(number, body)
        self._ended(end)
        return bytes(out)

    def tensor(self, end: int) -> bytes:
        """A TensorProto up to ``end``, its data moved to the data file when it is large enough."""
        out = bytearray()
        data_type, moved, given = 0, False, False
        for start, number, wire, length in self._fields(end):
            if number in (_EXTERNAL_DATA, _SEGMENT) or (number == _DATA_LOCATION and wire == 0 and self._varint()):
                raise _Unsplittable("weights already external, or a segment")
            if number == _DATA_LOCATION:
                if wire != 0:  # not the enum onnx reads: its payload would be read as fields
                    raise _Unsplittable(f"data_location of wire type {wire}")
                continue  # DEFAULT, already read; set below
            if number == _DATA_TYPE and wire == 0:
                data_type = self._varint()
                out += self._since(start)
                continue
            movable = wire == 2 and (number == _RAW_DATA or (number == _FLOAT_DATA and data_type == _FLOAT))
            if movable and given:
                raise _Unsplittable("a tensor's data given twice")
            given = given or movable
            if movable and length is not None and length >= self.min_bytes:
                offset = self._copy(length)
                entries = (("offset", offset), ("length", length))
                out += _field(_EXTERNAL_DATA, self.location)
                for key, value in entries:
                    out += _field(_EXTERNAL_DATA, _field(1, key.encode()) + _field(2, str(value).encode()))
                moved = True
                continue
            out += self._rest(start, wire, length)
        self._ended(end)
        if moved:
            out += _varint_bytes(_DATA_LOCATION << 3) + _varint_bytes(1)  # EXTERNAL
            self.moved += 1
        return bytes(out)

    def _copy(self, length: int) -> int:
        """Copy the next ``length`` bytes of the file to the data file, at a page's start; returns where."""
        position = self.data.tell()
        if position % _ALIGN:
            self.data.write(b"\0" * (_ALIGN - position % _ALIGN))
            position = self.data.tell()
        left = length
        while left:
            chunk = self._read(min(left, _CHUNK))
            self.data.write(chunk)
            left -= len(chunk)
        return position
