"""The structural diff of two models on a page (the Compare page places it): what was added, removed and changed,
B's graph with its added and changed nodes coloured (the removed ones, which B does not have, listed below it),
and the tables. Self-contained: it runs the DIFF job itself and keeps the result for the pair in the session."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.diff import KIND_WORDS, DiffReport, DiffRequest, NodeDiff
from core.diff.words import change_text
from core.graph.colourings import Colouring, by_index
from core.graph.records import GraphView
from core.i18n import _, number
from core.jobs import DIFF
from core.model import ModelRecord
from ui.graph_panel import draw_graph, graph_of
from ui.jobs import run
from ui.text import md_escape

__all__ = ["diff_colouring", "diff_section"]

ROWS = 5_000  # rows a table shows (python -m core diff A B --json lists them all)
ADDED, CHANGED = "#2f9e44", "#f59f00"  # green, amber: as diff tools colour them


def diff_colouring(view: GraphView, report: DiffReport) -> Colouring:
    """B's graph coloured: added and changed nodes (main graph by place, bodies by name); groups holding one show
    it when closed."""
    added, changed = _("added"), _("changed")
    main = {f"n{n.index}": added for n in report.added if n.graph == "main"}
    main |= {f"n{n.index}": changed for n in report.changed if n.graph == "main"}
    keys = by_index(view, main)
    for kind, nodes in ((added, report.added), (changed, report.changed)):
        keys |= {n.node: kind for n in nodes if n.graph != "main"}
    return Colouring(
        title=_("what changed"),
        keys=keys,
        order=[changed, added],
        colours={added: ADDED, changed: CHANGED},
        rest=_("unchanged"),
        marked=[changed, added],
    )


def _frame(nodes: list[NodeDiff], with_changes: bool) -> pd.DataFrame:
    rows = []
    renamed = any(n.node_a for n in nodes)
    for n in nodes[:ROWS]:
        row = {_("node"): n.node, _("op"): n.op_type, _("graph"): n.graph}
        if with_changes and renamed:
            row[_("name in A")] = n.node_a
        if with_changes:
            row[_("what changed")] = change_text(n)
        rows.append(row)
    return pd.DataFrame(rows)


def _metrics(report: DiffReport, a: str, b: str) -> None:
    columns = st.columns(4)
    for column, label, count in zip(
        columns,
        (_("added"), _("removed"), _("changed"), _("unchanged")),
        (len(report.added), len(report.removed), len(report.changed), report.unchanged),
        strict=True,
    ):
        column.metric(label, number(count))
    said = _("{b} against {a}: {nodes_a} nodes in A, {nodes_b} in B, {weights} weight pairs compared, in {seconds} s.")
    text = said.format(
        a=a,
        b=b,
        nodes_a=number(report.nodes_a),
        nodes_b=number(report.nodes_b),
        weights=number(report.weights_compared),
        seconds=f"{report.seconds:.1f}",
    )
    if any(report.constant_weights):
        text += " " + _(
            "Weights held in Constant nodes ({a_count} in A, {b_count} in B) were diffed as the initializers they "
            "become when a model is loaded or quantized."
        ).format(a_count=number(report.constant_weights[0]), b_count=number(report.constant_weights[1]))
    if report.renamed:
        text += " " + _("{count} nodes matched under another name (by position or through a quantizer's renames) "
                        "are otherwise the same.").format(count=number(len(report.renamed)))  # fmt: skip
    st.caption(md_escape(text, 1000))


def _table(title: str, frame: pd.DataFrame, total: int) -> None:
    if not total:
        return
    st.markdown(f"**{md_escape(title, 200)}**")
    small = st.column_config.TextColumn(width="small")
    wide = {_("what changed"): st.column_config.TextColumn(width="large"), _("op"): small, _("graph"): small}
    st.dataframe(frame, hide_index=True, width="stretch", column_config=wide)
    if total > ROWS:
        st.caption(_("The first {shown} of {total}; `python -m core diff A B --json` lists them all.").format(
            shown=number(ROWS), total=number(total)
        ))  # fmt: skip


def _model_frame(report: DiffReport) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                _("what"): _(KIND_WORDS[m.kind]) if m.kind in KIND_WORDS else m.kind,
                _("name"): m.name,
                _("in A"): m.before or "∅",
                _("in B"): m.after or "∅",
                _("graph"): m.graph,
            }
            for m in report.model[:ROWS]
        ]
    )


def _selected(report: DiffReport, name: str) -> None:
    found = next((n for n in report.changed if n.node == name), None)
    if found is not None:
        st.markdown(
            _("**{node}** ({op}) changed: {what}").format(
                node=md_escape(found.node, 200),
                op=md_escape(found.op_type, 80),
                what=md_escape(change_text(found), 2000),
            )
        )
    elif any(n.node == name for n in report.added):
        st.markdown(_("**{node}** is new in B.").format(node=md_escape(name, 200)))


def diff_section(a: ModelRecord, b: ModelRecord, key: str) -> None:
    """The diff of model ``b`` against model ``a`` (both ONNX: two uploads, library models, a model and its
    quantized variant or upgrade), run once per pair in a session; ``key`` keeps its graph view apart from the
    page's other elements. Its permalink is the page's address, where the page names the two models; the node
    selected on B's graph is kept there too (``?node=``, as every graph view does)."""
    st.subheader(_("What changed in the graph"))
    if a.format != "onnx" or b.format != "onnx" or not a.path or not b.path:
        st.info(_("The structural diff compares two ONNX models: export a PyTorch model first."))
        return
    label = _("Diffing '{b}' against '{a}'").format(a=a.name, b=b.name)
    report = run(DIFF, DiffRequest(path_a=a.path, path_b=b.path), label, model=f"{a.id}:{b.id}", reuse=True)
    _metrics(report, a.name, b.name)
    if report.same:
        st.success(_("The two models have the same graph, weights, opsets and metadata."))
        return
    st.caption(
        _(
            "B's graph: added nodes in green, changed ones in amber; a closed group holding one takes its colour. "
            "Removed nodes are not in B: they are listed below."
        )
    )
    view = graph_of(b)
    if view is not None:
        picked = draw_graph(view, key=f"{key}-graph", colourings={"diff": diff_colouring(view, report)}, colour="diff")
        if picked is not None:
            _selected(report, picked.name)
    _table(_("Changed"), _frame(report.changed, True), len(report.changed))
    _table(_("Added (in B only)"), _frame(report.added, False), len(report.added))
    _table(_("Removed (in A only)"), _frame(report.removed, False), len(report.removed))
    _table(_("Inputs, outputs, initializers, opsets and metadata"), _model_frame(report), len(report.model))
