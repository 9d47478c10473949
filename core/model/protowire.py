"""Read protobuf wire format field by field, without a schema: the first bytes of an ONNX file explained."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MODEL_PROTO_FIELDS", "WireField", "looks_like_onnx", "read_fields"]

WIRE_TYPES = {0: "varint", 1: "64-bit", 2: "length-delimited", 5: "32-bit"}

# ModelProto field number -> (name, wire type), from onnx.proto
MODEL_PROTO_FIELDS: dict[int, tuple[str, int]] = {
    1: ("ir_version", 0),
    2: ("producer_name", 2),
    3: ("producer_version", 2),
    4: ("domain", 2),
    5: ("model_version", 0),
    6: ("doc_string", 2),
    7: ("graph", 2),
    8: ("opset_import", 2),
    14: ("metadata_props", 2),
    20: ("training_info", 2),
    25: ("functions", 2),
    26: ("configuration", 2),
}


@dataclass(kw_only=True)
class WireField:
    """One field as it sits in the bytes: where it starts, its tag, and its value or payload span."""

    offset: int  # where the tag starts
    tag_length: int
    number: int
    wire_type: int
    value: int | None  # varints and fixed-width numbers
    payload_offset: int  # for length-delimited fields: where the payload starts
    payload_length: int  # for length-delimited fields: how many bytes it has

    @property
    def end(self) -> int:
        return self.payload_offset + self.payload_length


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise ValueError("truncated varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint longer than 10 bytes")


def read_fields(buf: bytes, max_fields: int = 64, total_length: int | None = None) -> list[WireField]:
    """Top-level fields of a protobuf message in ``buf`` (which may be only the file's first bytes).

    Stops at the end of ``buf``, after ``max_fields``, or at the first field that cannot be read. A
    length-delimited field may run past the end of ``buf``; it is still reported, with its declared length,
    and must fit in ``total_length`` (the whole file's size) when that is given.
    """
    fields: list[WireField] = []
    pos = 0
    limit = len(buf) if total_length is None else total_length
    while pos < len(buf) and len(fields) < max_fields:
        start = pos
        try:
            key, pos = _varint(buf, pos)
            number, wire_type = key >> 3, key & 7
            if number == 0 or wire_type not in WIRE_TYPES:
                break
            tag_length = pos - start
            value: int | None = None
            payload_offset, payload_length = pos, 0
            if wire_type == 0:
                value, end = _varint(buf, pos)
                payload_length = end - pos
            elif wire_type == 1:
                payload_length = 8
                if pos + 8 <= len(buf):
                    value = int.from_bytes(buf[pos : pos + 8], "little")
            elif wire_type == 5:
                payload_length = 4
                if pos + 4 <= len(buf):
                    value = int.from_bytes(buf[pos : pos + 4], "little")
            else:
                payload_length, payload_offset = _varint(buf, pos)
            if payload_offset + payload_length > limit:
                break
        except ValueError:
            break
        fields.append(
            WireField(
                offset=start,
                tag_length=tag_length,
                number=number,
                wire_type=wire_type,
                value=value,
                payload_offset=payload_offset,
                payload_length=payload_length,
            )
        )
        pos = payload_offset + payload_length
    return fields


def looks_like_onnx(head: bytes, total_length: int) -> str | None:
    """ "onnx" when the first bytes read as a ModelProto, "damaged" when they start like one but break off
    (a truncated or corrupted file), else None."""
    fields = read_fields(head, max_fields=16, total_length=total_length)
    if not fields:
        return None
    for f in fields:
        known = MODEL_PROTO_FIELDS.get(f.number)
        if known is None or known[1] != f.wire_type:
            return None
    numbers = {f.number for f in fields}
    consumed = fields[-1].end
    whole = consumed >= total_length or consumed >= len(head) or len(fields) >= 16
    if whole and numbers & {1, 7} and (1 in numbers or len(fields) >= 2):
        return "onnx"
    return "damaged" if 1 in numbers else None
