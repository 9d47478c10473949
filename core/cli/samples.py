"""samples: the built-in sample zoo."""

from __future__ import annotations

import argparse
import json
from typing import Any

from core.i18n import _
from core.model import zoo
from core.model.records import format_shape

__all__ = ["register", "run"]


def register(parser: Any) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
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
            print(f"{row['name']:<12} {shapes:<24} {_(row['description'])}")
    return 0
