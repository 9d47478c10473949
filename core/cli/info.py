"""info: recognise a model file from its bytes and print its record."""

from __future__ import annotations

import argparse
import json
from typing import Any

from core.cli.common import add_code_arguments, code_choice, describe, print_record

__all__ = ["register", "run"]


def register(parser: Any) -> None:
    parser.add_argument(
        "model", help="a path, 'model.onnx,model.onnx.data', 'model.py,weights.pt' (a model's code) or sample:NAME"
    )
    add_code_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    record = describe(args.model, code_choice(args))
    if args.json:
        from core.jobs.wire import to_data

        print(json.dumps({**to_data(record), "format_label": record.format_label}, indent=2))
    else:
        print_record(record)
    return 0
