"""A comparison on the page: the first divergence and why, the path to it, the outputs, the nodes by error, the
graph coloured by error, and what could not be compared."""

from __future__ import annotations

import json
import math

import pandas as pd
import streamlit as st

from core.compare import CompareReport, Divergence, TensorError
from core.compare.divergence import CAUSES
from core.compare.engine import ONLY_OUTPUTS
from core.compare.records import EXACT_NODES
from core.graph import GraphView
from core.graph.colourings import error_colouring
from core.i18n import _, ngettext, number, pgettext
from core.jobs.wire import to_data
from core.notes import significant
from core.quantize import Variant
from core.quantize.judge import Tolerance
from ui import session
from ui.graph_panel import draw_graph
from ui.text import md_escape

__all__ = ["compare_section", "fix_verdict", "nodes_frame", "tensors_frame"]

SHOWN_NODES = 200  # rows of the node table (the download has them all)


def _figure(value: float) -> str:
    return "∞" if math.isinf(value) else significant(value, 3)


def tensors_frame(tensors: list[TensorError]) -> pd.DataFrame:
    """Tensors with their errors, as the page's tables show them (a grid shows text as text: nothing to escape)."""
    return pd.DataFrame(
        {
            _("tensor"): [t.name for t in tensors],
            _("shape"): [str(t.shape) for t in tensors],
            _("max abs error"): [_figure(t.max_abs) for t in tensors],
            _("mean abs error"): [_figure(t.mean_abs) for t in tensors],
            _("relative error"): [_figure(t.relative) for t in tensors],
            _("cosine"): [f"{t.cosine:.6f}" for t in tensors],
            _("within"): [_("yes") if t.within else _("no") for t in tensors],
        }
    )


def nodes_frame(report: CompareReport) -> pd.DataFrame:
    """Every compared node that differs at all, worst first (one that agrees exactly is no lead)."""
    nodes = report.ranked_nodes
    return pd.DataFrame(
        {
            _("node"): [n.node for n in nodes],
            _("op type"): [n.op_type + (f" → {n.b_op_type}" if n.b_op_type else "") for n in nodes],
            _("module"): [n.module for n in nodes],
            _("max abs error"): [_figure(n.max_abs) for n in nodes],
            _("relative error"): [_figure(n.relative) for n in nodes],
            _("cosine"): [f"{n.cosine:.6f}" for n in nodes],
            _("within"): [_("yes") if n.within else _("no") for n in nodes],
        }
    )


def _metrics(report: CompareReport) -> None:
    cols = st.columns(4)
    cols[0].metric(_("Tensors compared"), number(report.matched))
    within = sum(o.within for o in report.outputs)
    cols[1].metric(_("Outputs within"), f"{number(within)} / {number(len(report.outputs))}")
    found = report.first_divergence
    cols[2].metric(_("First divergence"), found.op_type if found else _("none"))
    cols[3].metric(_("Time"), _("{seconds} s").format(seconds=f"{report.seconds:.1f}"))
    st.caption(
        _(
            "A: {a} at {a_level}. B: {b} at {b_level}. Within the tolerance: {tolerance}. Each model ran {groups} "
            "time(s), a group of tensors each time, the largest group {mb} MiB: memory stays bounded, whatever "
            "the model's size."
        ).format(
            a=md_escape(report.a, 120), a_level=report.a_level, b=md_escape(report.b, 120), b_level=report.b_level,
            tolerance=md_escape(report.tolerance), groups=report.groups, mb=f"{report.peak_group_mb:.1f}",
        )
    )  # fmt: skip
    if report.b_kind and within < len(report.outputs):  # a variant Quantize may well have judged within its gate
        st.caption(
            _(
                "Quantize judges a variant by its outputs as a whole: their cosine with float32's (at least "
                "{cosine}), their mean error and the top-1 agreement; here the outputs' cosine is {seen}. This "
                "page's tolerance bounds every value, and a {kind} variant rounds every value: it shows where the "
                "variant departs most, not whether it passes. Raise the relative tolerance (0.01 for float16) to "
                "see only the largest departures."
            ).format(
                cosine=f"{Tolerance().min_cosine:g}",
                seen=f"{min(o.cosine for o in report.outputs):.6f}",
                kind="FP16" if report.b_kind == "fp16" else "INT8",
            )
        )


def _divergence(found: Divergence) -> None:
    module = _(" in module “{module}”").format(module=md_escape(found.module, 200)) if found.module else ""
    st.error(
        _("**The first divergence**: {op} node **{node}**{module}, likely {cause}.").format(
            op=md_escape(found.op_type, 60), node=md_escape(found.node, 200), module=module,
            cause=_(CAUSES.get(found.cause, found.cause)),
        )
    )  # fmt: skip
    for why in found.why:
        st.markdown("- " + md_escape(why, 600))
    if found.uncompared_inputs:
        st.caption(
            _(
                "Some of its inputs were fused away at the level compared ({inputs}): the error may come from the "
                "nodes fused into them."
            ).format(inputs=md_escape(pgettext("list", ", ").join(found.uncompared_inputs), 400))
        )
    st.markdown(_("**Its inputs and outputs**"))
    st.dataframe(tensors_frame([*found.inputs, *found.outputs]), hide_index=True, width="stretch")
    st.markdown(_("**The path from the model's input to it**"))
    st.caption(md_escape(" → ".join(found.path), 4000))


def _advice(report: CompareReport) -> None:
    if not report.keep_float32:
        return
    nodes = md_escape(pgettext("list", ", ").join(report.keep_float32), 1000)
    if report.b_kind == "fp16":
        st.info(
            _("**What to do**: keep these nodes in float32 when converting to float16: {nodes}.").format(nodes=nodes)
        )
    else:
        st.info(_("**What to do**: exclude these nodes from quantization: {nodes}.").format(nodes=nodes))


def compare_section(report: CompareReport, key: str, view: GraphView | None = None) -> None:
    """One comparison, in the reader's language."""
    _metrics(report)
    if report.proves_nothing:  # a warning in the verdict's place, never a green one
        st.warning(_(report.proves_nothing))
    elif report.first_divergence is None and not report.nodes:
        st.info(_(ONLY_OUTPUTS))
    elif report.first_divergence is None:
        st.success(_("No node leaves the tolerance: the two models agree on every tensor compared."))
    else:
        _divergence(report.first_divergence)
    _advice(report)
    st.markdown(_("**The outputs**"))
    st.dataframe(tensors_frame(report.outputs), hide_index=True, width="stretch")
    frame = nodes_frame(report)
    st.markdown(
        _("**The nodes by error**, worst first ({shown} of {count}).").format(
            shown=number(min(len(frame), SHOWN_NODES)), count=number(len(frame))
        )
    )
    st.dataframe(frame.head(SHOWN_NODES), hide_index=True, width="stretch")
    if report.exact_nodes:
        st.caption(_(EXACT_NODES).format(count=number(report.exact_nodes)))
    for lost in report.uncompared:
        examples = md_escape(pgettext("list", ", ").join(lost.examples), 500)
        st.caption(
            ngettext(
                "{count} tensor not compared: {reason} (e.g. {examples}).",
                "{count} tensors not compared: {reason} (e.g. {examples}).",
                lost.count,
            ).format(count=number(lost.count), reason=_(lost.reason), examples=examples)
        )
    if view is not None:
        st.markdown(_("**The graph, coloured by error**: the first divergence in purple, the worst nodes darkest."))
        relative = {n.index: n.relative for n in report.nodes}
        first = report.first_divergence.index if report.first_divergence else None
        colouring = error_colouring(view, relative, first)
        marked = next((n.name for n in view.nodes if first is not None and n.index == first), "")
        if marked and not session.page_param("node"):  # the graph opens on the first divergence
            session.set_page_param("node", marked)
        draw_graph(view, key=f"{key}_graph", colourings={"error": colouring}, colour="error")
    left, right = st.columns(2)
    left.download_button(
        _("Download the nodes (CSV)"), lambda: frame.to_csv(index=False).encode(), "compare-nodes.csv", "text/csv",
        key=f"{key}_csv", on_click="ignore",
    )  # fmt: skip
    right.download_button(
        _("Download the comparison (JSON)"), lambda: json.dumps(to_data(report), indent=2).encode(),
        "compare.json", "application/json", key=f"{key}_json", on_click="ignore",
    )  # fmt: skip


def fix_verdict(variant: Variant, tolerance: str) -> None:
    """The variant made again with Compare's nodes left out, judged by Quantize's tolerance gate."""
    if variant.error:
        st.error(md_escape(variant.error, 800))
    elif variant.accuracy_ok:
        st.success(
            _("{variant}, made again: within Quantize's tolerance ({tolerance}). The Quantize page lists it.").format(
                variant=variant.label, tolerance=md_escape(tolerance, 400)
            )
        )
    else:
        st.warning(
            _("{variant}, made again: still out of Quantize's tolerance ({why}). Compare it again for the next node.")
            .format(variant=variant.label, why=md_escape(variant.accuracy_note, 400))
        )  # fmt: skip
