"""graph: draw an ONNX model's graph into one self-contained HTML file (the renderer and the data inlined)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from core.cli.common import describe
from core.errors import WorkbenchError
from core.graph.page import COLOURS, graph_page
from core.graph.records import GraphView
from core.jobs import run_job
from core.settings import PROJECT_ROOT

__all__ = ["BUNDLE", "register", "run"]

BUNDLE = PROJECT_ROOT / "ui" / "graph_component" / "dist" / "graph.js"  # built by `make graph-bundle`, committed


def register(sub: Any) -> None:
    parser = sub.add_parser("graph", help="draw a model's graph into one HTML file that works offline")
    parser.add_argument("model", help="an .onnx path ('model.onnx,model.onnx.data' with external data)")
    parser.add_argument("-o", "--output", default="graph.html", help="the HTML file to write (graph.html)")
    parser.add_argument("--color", choices=COLOURS, default="op", help="colour the nodes by op type or dtype")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    record = describe(args.model)
    if record.format != "onnx":
        raise WorkbenchError(f"graph draws ONNX; '{args.model}' is a {record.format_label}. Export it first.")
    if not BUNDLE.is_file():
        raise WorkbenchError(f"The graph renderer {BUNDLE} is missing; rebuild it with `make graph-bundle`.")
    view: GraphView = run_job("graph.view", {"path": record.path})
    out = Path(args.output).expanduser()
    out.write_text(graph_page(view, BUNDLE.read_text(), args.color), encoding="utf-8")
    for note in view.notes:
        print(f"note: {note}", file=sys.stderr)
    groups = f", {len(view.groups):,} groups" if view.groups else ""
    print(
        f"{out}: {view.node_count:,} nodes{groups}, {view.folded_constants:,} Constants folded, "
        f"{out.stat().st_size / 1e6:.2f} MB"
    )
    return 0
