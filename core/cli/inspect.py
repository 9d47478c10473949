"""inspect: decode an ONNX model (header bytes, opsets, nodes, weights), as the Decode page does."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from core import jobs
from core.cli.common import describe
from core.decode import DecodedModel, DecodeRequest, summary
from core.errors import IntakeError, WorkbenchError
from core.jobs import DECODE
from core.model.records import format_shape

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    parser = sub.add_parser("inspect", help="decode an ONNX model: header bytes, opsets, nodes, weights")
    parser.add_argument("model", help="an .onnx path ('model.onnx,model.onnx.data' with external data)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(func=run)


def _header_lines(decoded: DecodedModel) -> list[str]:
    return [f"  byte {f.offset:<5} {f.hex:<38} field {f.number} {f.field} = {f.value}" for f in decoded.header]


def _print_decoded(name: str, decoded: DecodedModel) -> None:
    print(
        f"{name}  ir_version {decoded.ir_version}, producer {decoded.producer_name or '-'} "
        f"{decoded.producer_version}".rstrip()
    )
    print("  opsets     " + ", ".join(f"{d} {v}" for d, v in decoded.opsets.items()))
    for label, specs in (("input ", decoded.inputs), ("output", decoded.outputs)):
        for spec in specs:
            print(f"  {label}     {spec.name}: {spec.dtype} {format_shape(spec.shape)}")
    print(
        f"  nodes      {decoded.node_count:,} in the main graph, {decoded.total_node_count:,} in all; "
        f"{decoded.subgraph_count} subgraph(s), {len(decoded.functions)} function(s)"
    )
    print("  ops        " + ", ".join(f"{op} {n}" for op, n in decoded.op_counts.items()))
    external = f", external: {', '.join(decoded.external_files)}" if decoded.external_files else ""
    print(
        f"  weights    {decoded.initializer_count:,} initializers, {decoded.parameter_count:,} parameters, "
        f"{decoded.initializer_bytes:,} bytes{external}"
    )
    print(f"  checker    {'passes' if decoded.checker_ok else decoded.checker_message}")
    print(f"  shapes     {decoded.shapes_known} of {decoded.shapes_total} intermediate tensors known")
    print("\n".join(_header_lines(decoded) + [f"  problem    {p}" for p in decoded.problems]))


def _refused(args: argparse.Namespace, exc: IntakeError) -> int:
    """A file intake refused, which exits 2 as every refusal does. A damaged one (a plain IntakeError: truncated,
    unparsable) also gets its top-level fields, read without parsing the model (at most 64 of them); one refused
    for what it is (too large, a bomb, unsafe, not a model) gets nothing more: nothing else of it is read."""
    path = Path(args.model.split(",")[0]).expanduser().resolve()
    if type(exc) is not IntakeError or not path.is_file():
        raise exc
    print(f"error: {exc}", file=sys.stderr)
    header = jobs.run(DECODE, DecodeRequest(path=str(path), header_only=True))
    header.problems.append(str(exc))
    lines = _header_lines(header) + [f"  problem    {p}" for p in header.problems]
    print(json.dumps(summary(header), indent=2) if args.json else "\n".join(lines))
    return 2


def run(args: argparse.Namespace) -> int:
    try:
        record = describe(args.model)
    except IntakeError as exc:
        return _refused(args, exc)
    if record.format != "onnx":
        raise WorkbenchError(f"inspect reads ONNX; '{args.model}' is a {record.format_label}. Export it first.")
    decoded = jobs.run(DECODE, DecodeRequest(path=record.path, with_text=False))
    if args.json:
        print(json.dumps(summary(decoded), indent=2))
    else:
        _print_decoded(record.name, decoded)
    return 0
