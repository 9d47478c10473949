"""The worker job behind ``python -m core graph``: read a model file into a view (its external weights only
for their statistics, sampled, from files inside its folder); a file that is not ONNX by its bytes is refused."""

from __future__ import annotations

from pathlib import Path

from core.errors import UnsupportedFormatError
from core.graph.build import view_graph
from core.graph.records import GraphRequest, GraphView
from core.i18n import _
from core.model.formats import detect_format
from core.model.onnx_file import check_model_size
from core.model.records import FORMAT_LABELS
from core.settings import IntakeLimits

__all__ = ["graph_view_job"]


def graph_view_job(request: GraphRequest, limits: IntakeLimits | None = None) -> GraphView:
    """The graph view of the ONNX file the request names; a model past ``limits`` (the server's, as a job) in any
    count is refused before anything is done per node or tensor."""
    import onnx

    path = request.path
    found = detect_format(path)  # from the first bytes: the command draws a file given alone without an intake
    if found != "onnx":
        raise UnsupportedFormatError(
            _("graph draws ONNX; “{model}” is a {format}. Export it first.").format(
                model=Path(path).name, format=_(FORMAT_LABELS.get(found, found))
            )
        )
    model = onnx.load(path, load_external_data=False)
    check_model_size(Path(path).name, model, limits or IntakeLimits())  # as the intake checks it
    return view_graph(model, name=Path(path).stem, folder=Path(path).parent)
