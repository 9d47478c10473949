"""The Export page for a language model (a Hugging Face folder): no shapes to give (the cache's axes are its own),
and a report whose proof is generation (ui/greedy_view.py: the greedy tokens of both engines side by side)."""

from __future__ import annotations

import streamlit as st

from core.export import ExportOptions
from core.export.causal_lm import NEW_TOKENS, PROMPTS
from core.i18n import _, number
from core.model import ModelRecord
from ui import session
from ui.export_view import kept_report, run_export, show_report
from ui.needs import next_steps
from ui.text import md_escape

__all__ = ["lm_export"]


def lm_export(source: ModelRecord, exporter: str, opset: int, optimize: bool, external: bool) -> None:
    """The Export page's form and report for a causal language model; the page stops after it."""
    st.markdown(
        _(
            "**A language model with a cache.** It is exported through a wrapper that takes each layer's past keys "
            "and values as inputs (past_key_values.N.key/value) and gives them back with the new tokens' "
            "(present.N.key/value), the names optimum writes; the batch, the new tokens, the past and the mask "
            "(past + new) are dynamic. Then it is verified by generating {new} tokens with PyTorch and with ONNX "
            "Runtime from {count} prompts."
        ).format(new=number(NEW_TOKENS), count=number(len(PROMPTS)))
    )
    if st.button(_("Export"), type="primary", key="export_lm_button"):
        options = ExportOptions(
            input_shapes={}, exporter=exporter, opset=int(opset), optimize=optimize, external_data=external
        )
        run_export(source, options, _("Exporting '{name}'").format(name=source.name))
    report = kept_report(source)
    if report is None:
        st.caption(_("Ready to export **{name}**. Choose the exporter and press Export.").format(
            name=md_escape(source.name)
        ))  # fmt: skip
        return
    show_report(report)
    current = session.current_model()
    if report.record is not None and not report.usable and (current is None or current.id != report.record.id):
        st.caption(_("The current model was not replaced, because the export failed a check."))
    elif report.record is not None:
        st.caption(_("The exported model is now the current model."))
        next_steps("decode", "partition", "benchmark")
