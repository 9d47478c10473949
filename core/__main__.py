"""The headless command line: ``python -m core samples|info`` over the same functions as the pages."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from core import zoo
from core.errors import WorkbenchError
from core.jobs import run_job
from core.model import ModelRecord, format_shape
from core.records import from_jsonable, to_jsonable
from core.settings import load_settings

__all__ = ["main"]


def describe(model: str) -> ModelRecord:
    """The record of ``model``: a file path, several paths joined by ',' (model + data files) or sample:NAME."""
    settings = load_settings()
    if model.startswith("sample:"):
        name = model.removeprefix("sample:")
        zoo.get_sample(name)  # a clear error for an unknown name before a worker starts
        data = run_job("intake.describe_sample", {"name": name})
    else:
        paths = model.split(",")
        data = run_job(
            "intake.describe_files",
            {
                "paths": paths,
                "max_nodes": settings.max_nodes,
                "max_initializer_bytes": settings.max_initializer_bytes,
                "allow_code_archives": settings.allow_code_archives,
            },
        )
    return from_jsonable(ModelRecord, data)


def _print_record(record: ModelRecord) -> None:
    print(f"{record.name}  ({record.format_label})")
    print(f"  id         {record.id}")
    print(f"  size       {record.size_bytes:,} bytes")
    if record.parameter_count is not None:
        print(f"  parameters {record.parameter_count:,}")
    if record.opset is not None:
        print(f"  opset      {record.opset}   ir_version {record.ir_version}   producer {record.producer or '-'}")
    if record.node_count is not None:
        print(f"  nodes      {record.node_count:,}")
    for label, specs in (("input ", record.inputs), ("output", record.outputs)):
        for spec in specs:
            dynamic = ", ".join(f"{v} on axis {k}" for k, v in spec.dynamic_axes.items())
            extra = f"   dynamic: {dynamic}" if dynamic else ""
            print(f"  {label}     {spec.name}: {spec.dtype} {format_shape(spec.shape)}{extra}")
    for note in record.notes:
        print(f"  note       {note}")


def _cmd_samples(args: argparse.Namespace) -> int:
    rows: list[dict[str, Any]] = [
        {
            "name": s.name,
            "title": s.title,
            "description": s.description,
            "inputs": {k: list(v) for k, v in s.inputs.items()},
            "dynamic_axes": {k: {str(a): n for a, n in v.items()} for k, v in s.dynamic_axes.items()},
        }
        for s in zoo.SAMPLES.values()
    ]
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        for row in rows:
            shapes = ", ".join(f"{k} {format_shape(v)}" for k, v in row["inputs"].items())
            print(f"{row['name']:<12} {shapes:<24} {row['description']}")
    return 0


def _cmd_info(args: argparse.Namespace) -> int:
    record = describe(args.model)
    if args.json:
        data = to_jsonable(record)
        data["format_label"] = record.format_label
        print(json.dumps(data, indent=2))
    else:
        _print_record(record)
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m core", description="ONNX Workbench without a browser.")
    sub = parser.add_subparsers(dest="command", required=True)
    samples = sub.add_parser("samples", help="list the built-in sample models")
    samples.add_argument("--json", action="store_true", help="print JSON")
    samples.set_defaults(func=_cmd_samples)
    info = sub.add_parser("info", help="recognise a model file and print its record")
    info.add_argument("model", help="a path, 'model.onnx,model.onnx.data', or sample:NAME")
    info.add_argument("--json", action="store_true", help="print JSON")
    info.set_defaults(func=_cmd_info)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        return func(args)
    except WorkbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
