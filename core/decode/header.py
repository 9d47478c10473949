"""The first bytes of an ONNX file, field by field, the way protoc --decode_raw reads them, explained."""

from __future__ import annotations

from pathlib import Path

from core.decode import sentences as say
from core.decode.records import HeaderField
from core.model.protowire import MODEL_PROTO_FIELDS, WIRE_TYPES, WireField, read_fields
from core.notes import Note, note

__all__ = ["HEADER_BYTES", "annotate_header", "top_level_fields"]

HEADER_BYTES = 64


# ----------------------------------------------------------------------------------------------- header
def _field_value(buf: bytes, f: WireField, name: str) -> tuple[str | Note, Note]:
    """The decoded value (as it is read, or described), and a sentence a learner can follow."""
    tag = note(say.TAG, bytes=buf[f.offset : f.offset + f.tag_length].hex(" "), number=f.number, wire=f.wire_type)
    if f.wire_type == 0:
        return str(f.value), note(say.VARINT, tag=tag, value=str(f.value))  # a varint's digits as the file holds it
    if f.wire_type != 2:
        return str(f.value), note(say.OTHER_WIRE, tag=tag, wire=WIRE_TYPES[f.wire_type])
    prefix = note(say.BYTES_FOLLOW, tag=tag, count=f.payload_length)
    payload = buf[f.payload_offset : f.payload_offset + min(f.payload_length, 256)]
    if name in ("producer_name", "producer_version", "domain", "doc_string"):
        text = payload.decode("utf-8", errors="replace")
        more = "…" if f.payload_length > len(payload) else ""
        return repr(text[:80] + more), note(say.UTF8, prefix=prefix)
    if name == "opset_import":
        inner = {g.number: g for g in read_fields(payload, 4)}
        domain = payload[inner[1].payload_offset : inner[1].end].decode(errors="replace") if 1 in inner else ""
        version = inner[2].value if 2 in inner else None
        shown: str | Note = repr(domain) if domain else note(say.DEFAULT_DOMAIN)
        value = note(say.OPSET_VALUE, domain=shown, version=str(version) if version is not None else "?")
        return value, note(say.OPSET_MESSAGE, prefix=prefix)
    kinds = {
        "graph": "GraphProto",
        "metadata_props": "StringStringEntryProto",
        "functions": "FunctionProto",
        "training_info": "TrainingInfoProto",
        "configuration": "DeviceConfigurationProto",
    }
    value = note(say.MESSAGE_OF, kind=kinds.get(name, "message"), count=f.payload_length)
    return value, note(say.NESTED, prefix=prefix)


def annotate_header(buf: bytes, total_length: int, max_fields: int = 12) -> list[HeaderField]:
    """The top-level fields that start in ``buf`` (the file's first bytes), explained."""
    return [_annotate(buf, f, 0) for f in read_fields(buf, max_fields=max_fields, total_length=total_length)]


def _annotate(buf: bytes, f: WireField, base: int) -> HeaderField:
    """``buf`` holds the file from offset ``base``; ``f``'s offsets are relative to ``buf``."""
    name = MODEL_PROTO_FIELDS.get(f.number, ("unknown", -1))[0]
    value, explanation = _field_value(buf, f, name)
    shown = buf[f.offset : min(f.offset + 12, f.end, len(buf))]
    return HeaderField(
        offset=base + f.offset,
        length=f.end - f.offset,
        hex=shown.hex(" "),
        number=f.number,
        wire_type=WIRE_TYPES[f.wire_type],
        field=name,
        value=value,
        explanation=explanation,
    )


def top_level_fields(path: Path, max_fields: int = 64) -> list[HeaderField]:
    """Every top-level field of the file, found by reading each tag and jumping over its payload, so the
    fields after a large graph (opset_import, metadata) are listed too without reading the graph."""
    size = path.stat().st_size
    fields: list[HeaderField] = []
    with path.open("rb") as fh:
        position = 0
        while position < size and len(fields) < max_fields:
            fh.seek(position)
            window = fh.read(4096)
            found = read_fields(window, max_fields=1, total_length=size - position)
            if not found:
                break
            f = found[0]
            if f.end > len(window) and f.payload_length <= 1 << 16:  # a small field cut by the window: read it all
                window = window + fh.read(f.end - len(window))
            fields.append(_annotate(window, f, position))
            position += f.end
    return fields
