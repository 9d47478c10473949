"""inspect's job and text: a model's files recognised and, when ONNX, decoded in one worker (core.decode.inspected),
then printed: its header bytes, opsets, nodes and weights, as the Decode page shows them, or a folder's files
(core.cli.inspect reads the arguments and starts the worker before it imports this)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from core import jobs
from core.cli.common import describe, english_data, intake_request, padded, print_record
from core.decode.records import DecodedModel, DecodeRequest
from core.errors import IntakeError, WorkbenchError
from core.i18n import _, number
from core.jobs import DECODE, INSPECT
from core.jobs.wire import to_data
from core.model.records import ModelRecord, format_shape
from core.notes import Note, say

__all__ = ["inspect_model"]


def _value(value: str | Note) -> str:
    """A field's value: as read (a number, a quoted string), or in words."""
    return value if isinstance(value, str) else say(value)


def _header_lines(decoded: DecodedModel) -> list[str]:
    return [
        "  "
        + _("byte {offset} {hex} field {number} {field} = {value}").format(
            offset=f"{f.offset:<5}", hex=f"{f.hex:<38}", number=f.number, field=f.field, value=_value(f.value)
        )
        for f in decoded.header
    ]


def _print_decoded(name: str, decoded: DecodedModel) -> None:
    producer = f"{decoded.producer_name or '-'} {decoded.producer_version}".rstrip()
    print(_("{name}  ir_version {ir}, producer {producer}").format(name=name, ir=decoded.ir_version, producer=producer))
    print("  " + _("opsets     {opsets}").format(opsets=", ".join(f"{d} {v}" for d, v in decoded.opsets.items())))
    for label, specs in ((_("input "), decoded.inputs), (_("output"), decoded.outputs)):
        for spec in specs:
            print(f"  {label}     {spec.name}: {spec.dtype} {format_shape(spec.shape)}")
    print("  " + _(
        "nodes      {nodes} in the main graph, {total} in all; {subgraphs} subgraph(s), {functions} function(s)"
    ).format(
        nodes=number(decoded.node_count), total=number(decoded.total_node_count), subgraphs=decoded.subgraph_count,
        functions=len(decoded.functions),
    ))  # fmt: skip
    print("  " + _("ops        {ops}").format(ops=", ".join(f"{op} {n}" for op, n in decoded.op_counts.items())))
    weights = _("weights    {initializers} initializers, {parameters} parameters, {bytes} bytes").format(
        initializers=number(decoded.initializer_count),
        parameters=number(decoded.parameter_count),
        bytes=number(decoded.initializer_bytes),
    )
    if decoded.external_files:
        weights = _("{weights}, external: {files}").format(weights=weights, files=", ".join(decoded.external_files))
    print("  " + weights)
    said = say(decoded.checker_message) if decoded.checker_message is not None else ""
    checker = _("passes") if decoded.checker_ok else said
    print("  " + _("checker    {result}").format(result=checker))
    print("  " + _("shapes     {known} of {total} intermediate tensors known").format(
        known=number(decoded.shapes_known), total=number(decoded.shapes_total)
    ))  # fmt: skip
    print("\n".join(_header_lines(decoded) + [_problem(p) for p in decoded.problems]))


def _problem(problem: Note) -> str:
    return "  " + _("problem    {problem}").format(problem=say(problem))


def _refused(args: argparse.Namespace, exc: IntakeError) -> int:
    """A file intake refused, which exits 2 as every refusal does. A damaged one (a plain IntakeError: truncated,
    unparsable) also gets its top-level fields, read without parsing the model (at most 64 of them); one refused
    for what it is (too large, a bomb, unsafe, not a model) gets nothing more: nothing else of it is read."""
    path = Path(args.model.split(",")[0]).expanduser().resolve()
    if type(exc) is not IntakeError or not path.is_file():
        raise exc
    print(_("error: {message}").format(message=exc), file=sys.stderr)
    header = jobs.run(DECODE, DecodeRequest(path=str(path), header_only=True))
    header.problems.append(Note.kept(str(exc), "warning"))  # said already, in the reader's language
    lines = _header_lines(header) + [_problem(p) for p in header.problems]
    if args.json:
        from core.decode.decoder import summary

        print(json.dumps(summary(header), indent=2))
    else:
        print("\n".join(lines))
    return 2


def _inspected(model: str, unpack_dir: str) -> tuple[ModelRecord, DecodedModel | None]:
    """The model's record and, for an ONNX file, its decoding: a file's both in one worker (core.decode.inspected),
    a sample's record without one."""
    if model.startswith("sample:"):
        return describe(model), None
    inspected = jobs.run(INSPECT, intake_request(model, unpack_dir=unpack_dir))
    return inspected.record, inspected.decoded


def inspect_model(args: argparse.Namespace, unpack_dir: str = "") -> int:
    """The inspect command once its arguments are read: the model ``args`` names, inspected and printed (a .zip of
    a model folder unpacked into ``unpack_dir``, a fresh folder when none is given); the exit code."""
    try:
        record, decoded = _inspected(args.model, unpack_dir)
    except IntakeError as exc:
        return _refused(args, exc)
    if record.format == "hf":  # a Hugging Face folder of PyTorch weights: its card and its ONNX files
        return _print_folder(args, record)
    if record.format != "onnx" or decoded is None:
        raise WorkbenchError(
            _("inspect reads ONNX; “{model}” is a {format}. Export it first.").format(
                model=args.model, format=_(record.format_label)
            )
        )
    if args.json:
        from core.decode.decoder import summary

        print(json.dumps({**summary(decoded), **_family_data(record)}, indent=2))
    else:
        _print_decoded(record.name, decoded)
        _print_family(record)
    return 0


def _family_data(record: ModelRecord) -> dict[str, Any]:
    """The folder and its ONNX files, for --json (nothing for a model that is no folder's)."""
    if not record.folder:
        return {}
    return {"folder": record.folder, "family": [to_data(m) for m in record.family]}


def _print_family(record: ModelRecord) -> None:
    """The folder's ONNX files, one a line (the one described marked *), and how to name one to a command."""
    if not record.family:
        return
    from core.model.inputs import readable_bytes

    print(_("{folder}: {count} ONNX file(s), one model in several precisions").format(
        folder=record.folder, count=number(len(record.family))
    ))  # fmt: skip
    for member in record.family:
        mark = "*" if member.path == record.path else " "
        size = padded(readable_bytes(member.size_bytes), 10, right=True)
        print(f"  {mark} {padded(member.variant, 9)} {size}  {member.file}")
    example = Path(record.folder) / record.family[-1].file
    print("  " + _("any command takes one by its path, e.g. {path}").format(path=example))


def _print_folder(args: argparse.Namespace, record: ModelRecord) -> int:
    if args.json:
        print(json.dumps({"model": english_data(to_data(record)), **_family_data(record)}, indent=2))
        return 0
    print_record(record)
    _print_family(record)
    return 0
