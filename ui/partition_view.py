"""Sections of the Partition page: the providers, one partition (graph, summary, tables), optimization levels."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pandas as pd
import streamlit as st

from core.graph import GraphView
from core.graph.colourings import NOWHERE, Colouring
from core.partition import (
    KERNEL_PROVIDERS,
    KIND_TITLES,
    OptimizationReport,
    PartitionReport,
    PartitionResult,
    fusions_used,
    level_changes,
)
from core.runtime.ort import ProviderInfo, short_name
from core.runtime.placement import NodePlacement
from ui import session
from ui.charts import levels_figure
from ui.graph_panel import draw_graph
from ui.tables import Rows, all_rows, page_of, page_of_rows
from ui.text import escaped_frame, human_bytes, md_escape

__all__ = [
    "levels_frame",
    "levels_section",
    "placement_frame",
    "placements",
    "providers_section",
    "report_section",
    "share_frame",
]


def providers_section(table: list[ProviderInfo]) -> None:
    frame = pd.DataFrame(
        {
            "provider": [p.name for p in table],
            "in this build": ["yes" if p.available else "no" for p in table],
            "hardware": [p.hardware for p in table],
            "what it takes": [p.install for p in table],
        }
    )
    st.table(escaped_frame(frame), hide_index=True)


def share_frame(result: PartitionResult) -> pd.DataFrame:
    rows = [
        (report.title, short_name(provider), nodes)
        for report in result.reports
        for provider, nodes in report.providers.items()
    ]
    return pd.DataFrame(rows, columns=["partition", "provider", "nodes"])


def placement_frame(nodes: list[NodePlacement]) -> pd.DataFrame:
    """Where each node runs (``nodes``: a page of a report's nodes)."""
    return pd.DataFrame(
        {
            "#": [str(n.index) if n.index >= 0 else "—" for n in nodes],  # "—": in a subgraph, or added by ORT
            "node": [n.name for n in nodes],
            "op": [f"{n.domain}:{n.op_type}" if n.domain not in ("", "ai.onnx") else n.op_type for n in nodes],
            "graph": [n.graph for n in nodes],
            "provider": [_label(n) for n in nodes],
            "subgraph": [str(n.subgraph) if n.subgraph >= 0 else "—" for n in nodes],
            "note": [n.note for n in nodes],
        }
    )


def _label(node: NodePlacement) -> str:
    return short_name(node.provider) if node.provider else NOWHERE


def placements(report: PartitionReport) -> Rows[NodePlacement]:
    """Where every node runs: in the job's file, or in the result itself."""
    return report.node_rows if report.node_rows is not None else report.nodes


def report_section(
    report: PartitionReport, view: GraphView | None, key: str, colourings: dict[str, Colouring] | None = None
) -> None:
    """One partition: its figures, the graph coloured by provider (``colourings`` offers more), every node."""
    st.subheader(report.summary)
    first = report.providers_requested[0]
    on_first = report.providers.get(first, 0)
    pieces = sum(1 for s in report.subgraphs if s.provider == first)
    cols = st.columns(4)
    cols[0].metric("Nodes placed (main graph)", f"{sum(report.providers.values()):,}")
    cols[1].metric(f"On {short_name(first)}", f"{on_first:,}")
    if first in KERNEL_PROVIDERS:
        cols[2].metric(
            f"Connected pieces on {short_name(first)}",
            pieces,
            help=f"{short_name(first)} runs each node with a kernel of its own, so it has no partitions to compile; "
            "these are the connected runs of nodes it holds, and each border with another provider is a copy.",
        )
    else:
        cols[2].metric(
            f"{short_name(first)} partitions",
            pieces,
            help="Each partition is compiled by the provider into one piece; each border is a hand-over.",
        )
    if first != "CPUExecutionProvider":
        cols[3].metric("Fall back to CPU", f"{len(report.fallback):,}")
    else:
        cols[3].metric("Copy nodes", len(report.copies))
    if report.unsupported_ops:
        st.markdown(
            f"**Ops {short_name(first)} cannot take** (each breaks the graph into another piece): "
            + ", ".join(f"**{md_escape(op, 80)}**" for op in report.unsupported_ops)
        )
    for note in report.notes:
        st.caption(md_escape(note, 600))
    if view is not None:
        selected = draw_graph(view, key=key, colourings=colourings, colour="provider")
        if selected is not None and selected.index >= 0:
            node = next((n for n in all_rows(placements(report), NodePlacement) if n.index == selected.index), None)
            if node is not None:
                st.info(
                    f"**{md_escape(node.name or node.op_type)}** ({md_escape(node.op_type)}) runs on "
                    f"**{_label(node)}**"
                    + (f", in subgraph {node.subgraph}." if node.subgraph >= 0 else ".")
                    + (f" ({md_escape(node.note, 200)})" if node.note else "")
                )
    nodes_tab, subgraphs_tab, log_tab = st.tabs(["Every node", "Subgraphs", "ORT's log"])
    with nodes_tab:
        providers = sorted({short_name(p) if p else NOWHERE for p in report.node_providers})
        chosen = st.multiselect("Show providers", providers, default=providers, key=f"{key}_filter")
        keep = None if set(chosen) >= set(providers) else (lambda n: _label(n) in chosen)
        page = page_of_rows(placements(report), NodePlacement, f"{key}_page", keep, "nodes")
        shown = placement_frame(page)
        st.dataframe(shown, hide_index=True, width="stretch", height=min(420, 38 + 35 * max(len(shown), 1)))
    with subgraphs_tab:
        st.caption(
            "Connected pieces of the main graph that run on one provider. Every border between two pieces is "
            "a hand-over; between a device and the host it costs a copy on every run."
        )
        shown_pieces = page_of(report.subgraphs, f"{key}_subgraph_page", what="subgraphs")
        sub = pd.DataFrame(
            {
                "subgraph": [s.index for s in shown_pieces],
                "provider": [short_name(s.provider) for s in shown_pieces],
                "nodes": [s.nodes for s in shown_pieces],
                "ops": [", ".join(f"{op} ×{n}" for op, n in s.ops.items()) for s in shown_pieces],
                "from": [s.first for s in shown_pieces],
                "to": [s.last for s in shown_pieces],
            }
        )
        st.dataframe(sub, hide_index=True, width="stretch")
        if report.copies:
            st.markdown("**Copy nodes ONNX Runtime inserted**")
            st.table(escaped_frame(pd.DataFrame([vars(c) for c in report.copies])), hide_index=True)
    with log_tab:
        if report.log:
            st.caption("The 'Node placements' lines of ONNX Runtime's verbose log, from when the session was made.")
            st.code("\n".join(report.log), language=None)
        else:
            st.caption("A simulation creates no session, so there is no log; the checker's groups are shown instead.")


def levels_frame(report: OptimizationReport) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "level": [lv.name for lv in report.levels],
            "key": [lv.key for lv in report.levels],
            "nodes": [lv.node_count for lv in report.levels],
            "rewrites": [len(lv.rewrites) for lv in report.levels],
        }
    )


def _op_table(report: OptimizationReport) -> pd.DataFrame:
    ops = sorted({op for lv in report.levels for op in lv.op_counts} | set(report.original_ops))
    data = {"op": ops, "model": [report.original_ops.get(op, 0) for op in ops]}
    for lv in report.levels:
        data[lv.name] = [lv.op_counts.get(op, 0) for op in ops]
    return pd.DataFrame(data)


def levels_section(report: OptimizationReport, name: str, key: str) -> None:
    st.plotly_chart(levels_figure(levels_frame(report)), key=f"{key}_chart", config={"displaylogo": False})
    if report.original_subgraph_nodes:
        last = report.levels[-1] if report.levels else None
        after = f", and {last.subgraph_nodes:,} at {last.name}" if last is not None else ""
        st.caption(
            f"The counts and fusions are the main graph's. ORT optimizes the If/Loop/Scan bodies too: they hold "
            f"{report.original_subgraph_nodes:,} node(s) as exported{after}."
        )
    transformers = {lv.key: lv.transformers for lv in report.levels}
    for change in level_changes(report.levels):
        head = f"**{change.name}** ({change.node_count:,} nodes)"
        same = f"the {change.same_as_before:,} rewrite(s) of the level before" if change.same_as_before else ""
        if not change.by_kind:
            st.markdown(f"{head}: " + (f"no further change ({same})." if same else "no change."))
            continue
        by = ", ".join(transformers.get(change.key, [])) or "ORT's transformers"
        st.markdown(f"{head}, by {md_escape(by, 400)}: " + (f"{same}, and these:" if same else "these rewrites:"))
        lines = []
        for kind, items in change.by_kind.items():
            total = sum(n for _, n in items)
            lines.append(f"- {KIND_TITLES.get(kind) or md_escape(kind, 40)}: {total:,}")
            lines += [f"  - {md_escape(t, 400)}" + (f" (×{n})" if n > 1 else "") for t, n in items[:12]]
            if len(items) > 12:
                lines.append(f"  - … {len(items) - 12:,} more")
        st.markdown("\n".join(lines))
    fusions = fusions_used(report.levels)
    if fusions:
        st.markdown("**The fused ops ONNX Runtime introduced**")
        st.table(pd.DataFrame({"op": list(fusions), "what it does": list(fusions.values())}), hide_index=True)
    with st.expander("Op counts per level"):
        st.dataframe(_op_table(report), hide_index=True, width="stretch")
    choice = st.selectbox(
        "Download the optimized model of level",
        [lv.key for lv in report.levels],
        index=len(report.levels) - 1,
        format_func=lambda k: next(lv.name for lv in report.levels if lv.key == k),
        key=f"{key}_download_level",
    )
    level = next(lv for lv in report.levels if lv.key == choice)
    if level.warning:
        st.warning(level.warning)
    path = Path(level.path)
    if len(level.files) > 1:
        st.caption(
            f"This model keeps its weights in a side file ({human_bytes(level.size_bytes)} in all), too large to "
            "download from the browser. The command line saves every level: `python -m core partition MODEL "
            "--levels --out-dir DIR`."
        )
    elif path.exists():
        st.download_button(
            f"Download {name}.{level.key}.onnx ({human_bytes(level.size_bytes)})",
            partial(session.workspace().read_file, path),  # read when clicked, only inside this session's folder
            f"{name}.{level.key}.onnx",
            "application/octet-stream",
            key=f"{key}_download",
        )
