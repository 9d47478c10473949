"""What a profile says in words: notes (a template and its values) that a page, the command line or a notebook says
in its reader's language (core.notes). The headline is written anew in the reader's language
(core.profile.profiler.headline)."""

from __future__ import annotations

from core.i18n import N_, pgettext
from core.notes import Note, say_all

__all__ = [
    "BUSY",
    "EAGER",
    "EAGER_TOP",
    "END",
    "KERNELS",
    "NO_KERNEL",
    "SENTENCES",
    "TOP_OP",
    "FEWER_CALLS",
    "FUSED_WITH",
    "INSERTED",
    "IN_SCOPE",
    "NO_MODULE",
    "NO_MODULES",
    "NO_DECODE",
    "NO_NODE",
    "NO_SPLIT",
    "OWN_TIME",
    "PHASES",
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
# the headline: one sentence per engine (where a count decides the English form, one template per form)
KERNELS = (
    N_("ONNX Runtime ({level}): {ms} ms per call, {share} of it in {count} kernel"),
    N_("ONNX Runtime ({level}): {ms} ms per call, {share} of it in {count} kernels"),
)
NO_KERNEL = N_("ONNX Runtime ran no kernel")
TOP_OP = N_("{said}; {op} takes the most ({share}).")
END = N_("{said}.")
EAGER_TOP = N_("PyTorch eager: {ms} ms per call, most in {op} ({share}).")
EAGER = N_("PyTorch eager: {ms} ms per call.")
BUSY = N_("The machine was busy: other processes kept {cores} cores busy.")
SENTENCES = N_("{said} {more}")  # a sentence and the one that follows it
# a language model: its prefill and one decode step, profiled apart (core.profile.phases)
PHASES = N_(
    "Prefill of {tokens} tokens: {prefill} ms, most in {prefill_op} ({prefill_share}); one decode step after it: "
    "{decode} ms, most in {decode_op} ({decode_share})."
)
NO_SPLIT = N_("{why} So Profile does not split a prefill from a decode step: it profiles one call, as for any model.")
NO_DECODE = N_(
    "The decode step after the prefill did not run ({error}), so only the prefill is profiled: check the cache's "
    "inputs in the input plan."
)
# a node's or a layer row's note (a row's are clauses of one sentence)
INSERTED = N_("inserted by ONNX Runtime (layout or copy)")
FUSED_WITH = N_("fused with its {ops}")
OWN_TIME = N_("its own time: the nodes of its branches or body are listed on their own")
IN_SCOPE = N_("in '{scope}' itself")
NO_MODULE = N_("from no module the exporter named")
NO_NODE = N_("no ONNX Runtime node came from it")


def note_text(said: Note | list[Note] | None) -> str:
    """A node's note or a row's clauses in the reader's language ("" for none)."""
    if said is None:
        return ""
    return pgettext("clauses", "; ").join(say_all(said if isinstance(said, list) else [said]))
