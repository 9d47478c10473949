"""graph: draw an ONNX model's graph into one self-contained HTML file (the renderer and the data inlined),
coloured by op type, dtype, the execution provider that runs each node, or what the optimizer did at a level."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

from core import jobs
from core.cli.common import describe, provider_names
from core.errors import WorkbenchError
from core.graph.colourings import Colouring, level_colouring, provider_colouring
from core.graph.page import COLOURS, graph_page
from core.graph.records import GraphRequest, GraphView
from core.i18n import _, language, number, pgettext
from core.jobs import GRAPH, OPTIMIZE, PARTITION
from core.notes import say
from core.partition import LevelsRequest, PartitionRequest
from core.settings import PROJECT_ROOT

__all__ = ["BUNDLE", "register", "run"]

BUNDLE = PROJECT_ROOT / "ui" / "graph_component" / "dist" / "graph.js"  # built by `make graph-bundle`, committed
LEVELS = ("basic", "extended", "layout", "all")


def register(parser: Any) -> None:
    parser.add_argument("model", help="an .onnx path ('model.onnx,model.onnx.data' with external data)")
    parser.add_argument("-o", "--output", default="graph.html", help="the HTML file to write (graph.html)")
    parser.add_argument(
        "--color",
        choices=(*COLOURS, "provider", "level"),
        default="op",
        help="colour the nodes by op type, dtype, the execution provider that runs them (partitions the model "
        "first), or what ONNX Runtime's optimizer did to them at --level (optimizes the model first)",
    )
    parser.add_argument("--providers", help="with --color provider: in order of preference, e.g. cuda,cpu (cpu)")
    parser.add_argument("--level", default="extended", choices=LEVELS, help="with --color level (extended)")
    parser.set_defaults(func=run)


def _colourings(args: argparse.Namespace, view: GraphView, path: str) -> dict[str, Colouring]:
    """The colourings --color asks for: the partition's providers, or what each optimization level did."""
    if args.color == "provider":
        result = jobs.run(PARTITION, PartitionRequest(path=path, providers=provider_names(args.providers)))
        for message in result.unavailable.values():
            print(_("note: {note}").format(note=message), file=sys.stderr)
        return {"provider": provider_colouring(view, result.reports[0])}
    if args.color == "level":
        with tempfile.TemporaryDirectory(prefix="workbench-") as tmp:
            levels = jobs.run(OPTIMIZE, LevelsRequest(path=path, out_dir=tmp))
        found = {key: level_colouring(levels, key) for key in LEVELS}
        colourings = {key: c for key, c in found.items() if c is not None}
        if args.level not in colourings:
            raise WorkbenchError(_("ONNX Runtime could not optimize the model at {level}.").format(level=args.level))
        return colourings
    return {}


def _model_path(model: str) -> str:
    """The ONNX file to draw: an .onnx file given alone goes straight to the graph job, which reads it once in the
    worker and refuses it by its bytes if it is not ONNX (an intake first read the whole model a second time:
    a second of the command's 5 s at 30,000 nodes); anything else (sample:NAME, a folder, a file list, a zip) is
    described first."""
    from core.model.hf_folder import relative_member

    path = Path(model).expanduser().resolve()
    if "," not in model and path.suffix.lower() == ".onnx" and path.is_file() and relative_member(path) is None:
        return str(path)
    record = describe(model)
    if record.format != "onnx":
        raise WorkbenchError(
            _("graph draws ONNX; “{model}” is a {format}. Export it first.").format(
                model=model, format=_(record.format_label)
            )
        )
    return record.path


def run(args: argparse.Namespace) -> int:
    if not BUNDLE.is_file():
        raise WorkbenchError(
            _("The graph renderer {path} is missing; rebuild it with `make graph-bundle`.").format(path=BUNDLE)
        )
    path = _model_path(args.model)
    view = jobs.run(GRAPH, GraphRequest(path=path))
    colourings = _colourings(args, view, path)
    shown = args.level if args.color == "level" else args.color
    out = Path(args.output).expanduser()
    out.write_text(graph_page(view, BUNDLE.read_text(), shown, colourings, language=language()), encoding="utf-8")
    for note in view.notes:
        print(_("note: {note}").format(note=say(note)), file=sys.stderr)
    said = (
        _("{path}: {nodes} nodes, {groups} groups, {folded} Constants folded, {mb} MB")
        if view.groups
        else _("{path}: {nodes} nodes, {folded} Constants folded, {mb} MB")
    )
    print(
        said.format(
            path=out,
            nodes=number(view.node_count),
            groups=number(len(view.groups)),
            folded=number(view.folded_constants),
            mb=number(out.stat().st_size / 1e6, 2),
        )
    )
    if colourings:
        legend = colourings[shown]
        drawn = [legend.keys[n.name] for n in view.nodes if n.name in legend.keys]
        counts = {category: drawn.count(category) for category in legend.order}
        listed = pgettext("list", ", ").join(f"{k} {number(n)}" for k, n in counts.items()) or _("nothing")
        print(_("coloured by {legend}: {counts}").format(legend=legend.title, counts=listed))
    return 0
