"""What a profile says in words. A profile is kept with the model's link and may be read in either language, so it
keeps its sentences in English; these templates find each again, with its values, and translate it where it is
shown (core.recorded). The headline is written anew in the reader's language (core.profile.profiler.headline)."""

from __future__ import annotations

from core.i18n import N_, pgettext
from core.recorded import shown
from core.runtime.activity import NOTES as ACTIVITY_NOTES

__all__ = [
    "FEWER_CALLS",
    "FUSED_WITH",
    "INSERTED",
    "IN_SCOPE",
    "NOTES",
    "NO_MODULE",
    "NO_MODULES",
    "NO_NODE",
    "OWN_TIME",
    "UNMATCHED",
    "note_text",
]

NO_MODULES = N_(
    "This PyTorch model has no Python modules to time one by one (a TorchScript archive or a torch.export program "
    "keeps none), so eager time is given per aten op only."
)
FEWER_CALLS = N_("The graph has {count} nodes, so {limit} calls were profiled instead of {asked}.")
UNMATCHED = N_(
    "{count} eager layer(s) have no ONNX Runtime node: {layers}. The exporter fused them away or did not say where "
    "its nodes came from."
)
NOTES = (NO_MODULES, FEWER_CALLS, UNMATCHED, *ACTIVITY_NOTES)
# a node's or a layer row's note (several are joined with "; ")
INSERTED = N_("inserted by ONNX Runtime (layout or copy)")
FUSED_WITH = N_("fused with its {ops}")
OWN_TIME = N_("its own time: the nodes of its branches or body are listed on their own")
IN_SCOPE = N_("in '{scope}' itself")
NO_MODULE = N_("from no module the exporter named")
NO_NODE = N_("no ONNX Runtime node came from it")
_ROW_NOTES = (INSERTED, FUSED_WITH, OWN_TIME, IN_SCOPE, NO_MODULE, NO_NODE)


def note_text(note: str) -> str:
    """A node's or a row's note in the reader's language (each of a "; "-joined list on its own)."""
    if not note:
        return ""
    return pgettext("clauses", "; ").join(shown(part, _ROW_NOTES) for part in note.split("; "))
