"""The profile on the page: where the time goes per op type in both engines, the top nodes, eager layers next to
the ONNX Runtime nodes they became, time by module, the graph coloured by latency, and downloads."""

from __future__ import annotations

import json

import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots

from core.graph import GraphView
from core.graph.colourings import latency_colouring
from core.graph.palette import ENGINES
from core.i18n import _, number
from core.jobs.wire import to_data
from core.notes import say, significant
from core.profile import ProfileReport
from core.profile.profiler import headline
from core.profile.words import note_text
from core.runtime.fallback import FALLBACKS
from ui.bench_view import busy_notice
from ui.charts import escaped, ms_bars_layout
from ui.downloads import Download, csv_of, side_by_side
from ui.graph_panel import draw_graph
from ui.profile_phases import phases_section, providers_section
from ui.text import md_escape

__all__ = ["nodes_frame", "profile_section", "rows_frame"]

_ORT, _EAGER, _OVERHEAD = ENGINES["ort"], ENGINES["eager"], "#999999"  # the engines' colours on every page


def nodes_frame(report: ProfileReport) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "node": n.name,
                "op_type": n.op_type,
                "provider": n.provider,
                "mean_ms": n.mean_ms,
                "share": n.share,
                "runs_per_call": n.calls,
                "module": n.module,
                "original_nodes": " + ".join(n.originals),
                "note": note_text(n.note),
                "inputs": ", ".join(n.input_shapes),
                "outputs": ", ".join(n.output_shapes),
            }
            for n in report.nodes
        ],
        columns=["node", "op_type", "provider", "mean_ms", "share", "runs_per_call", "module", "original_nodes",
                 "note", "inputs", "outputs"],
    )  # fmt: skip


def rows_frame(report: ProfileReport) -> pd.DataFrame:
    rows = []
    for row in report.matched:
        label = (
            " + ".join(f"{m} ({k})" for m, k in zip(row.modules, row.kinds, strict=True)) or f"({note_text(row.note)})"
        )
        ratio = row.eager_ms / row.ort_ms if row.eager_ms and row.ort_ms else None
        rows.append(
            {
                "eager layer(s)": label,
                "eager ms": row.eager_ms,
                "ONNX Runtime ms": row.ort_ms,
                "eager / ORT": ratio,
                "ONNX Runtime node(s)": ", ".join(row.nodes),
                "what happened": note_text(row.note) if row.modules else "",
            }
        )
    return pd.DataFrame(rows)


@escaped
def op_types_figure(report: ProfileReport) -> go.Figure:
    """Time per call by ONNX Runtime op type and by PyTorch aten op, each with its overhead as a bar of its own."""
    sides = [("ONNX Runtime", _ORT)] + ([("PyTorch eager", _EAGER)] if report.eager is not None else [])
    overheads = {_("runtime overhead"), _("framework overhead")}
    fig = make_subplots(rows=1, cols=len(sides), subplot_titles=[s for s, _c in sides], horizontal_spacing=0.25)
    ort = [(t.op_type, t.mean_ms) for t in report.op_types[:12]] + [(_("runtime overhead"), report.overhead_ms)]
    bars = [ort]
    if report.eager is not None:
        ops = [(op.name.removeprefix("aten::"), op.mean_ms) for op in report.eager.ops[:12]]
        rest = max(0.0, report.eager.call_ms - sum(op.mean_ms for op in report.eager.ops))
        bars.append([*ops, (_("framework overhead"), rest)])
    for col, ((side, colour), values) in enumerate(zip(sides, bars, strict=True), start=1):
        values = sorted(values, key=lambda v: v[1])
        fig.add_trace(
            go.Bar(
                x=[v for _k, v in values],
                y=[k for k, _v in values],
                orientation="h",
                marker_color=[_OVERHEAD if k in overheads else colour for k, _v in values],
                text=[_("{ms} ms").format(ms=significant(v)) for _k, v in values],
                textposition="outside",
                cliponaxis=False,
                showlegend=False,
                name=side,
            ),
            row=1,
            col=col,
        )
        fig.update_xaxes(title_text=_("ms per call"), row=1, col=col)
        fig.update_yaxes(type="category", automargin=True, row=1, col=col)
    fig.update_layout(height=160 + 26 * max(len(b) for b in bars), margin={"l": 10, "r": 60, "t": 40, "b": 10})
    return fig


@escaped
def layers_figure(frame: pd.DataFrame) -> go.Figure:
    """Eager layers against the ONNX Runtime nodes they became, ms per call, first layer on top."""
    shown = frame[frame["eager ms"].notna() | frame["ONNX Runtime ms"].notna()].iloc[::-1]
    fig = go.Figure()
    for column, colour in (("eager ms", _EAGER), ("ONNX Runtime ms", _ORT)):
        name = "PyTorch eager" if column == "eager ms" else "ONNX Runtime"
        fig.add_trace(
            go.Bar(x=shown[column], y=shown["eager layer(s)"], orientation="h", name=name, marker_color=colour)
        )
    ms_bars_layout(fig, 120 + 44 * len(shown))
    return fig


@escaped
def treemap_figure(report: ProfileReport) -> go.Figure:
    """ONNX Runtime's time by the module each node came from, nested as the modules are."""
    totals: dict[str, float] = {}
    for node in report.nodes:
        parts = node.module.split(".") if node.module else [_("(no module)")]
        for depth in range(1, len(parts) + 1):
            key = ".".join(parts[:depth])
            totals[key] = totals.get(key, 0.0) + node.mean_ms
    top = _("model")
    ids = [top, *totals]
    parents = ["", *(k.rpartition(".")[0] or top for k in totals)]
    values = [sum(n.mean_ms for n in report.nodes), *totals.values()]
    # a module inside a Sequential is named by its index ("features.5"): its kind says what it is ("5 · MaxPool2d"),
    # and the kinds of the layers an exporter folded into one node with it ("1 · Conv2d + BatchNorm2d + ReLU")
    kinds = {m: " + ".join(k for k in row.kinds if k) for row in report.matched for m in row.modules if any(row.kinds)}
    fig = go.Figure(
        go.Treemap(
            ids=ids,
            labels=[f"{i.rpartition('.')[2]} · {kinds[i]}" if i in kinds else i.rpartition(".")[2] for i in ids],
            parents=parents,
            values=values,
            branchvalues="total",
            texttemplate="%{label}<br>" + _("{ms} ms").format(ms="%{value:.3g}"),
            hovertemplate="%{id}: " + _("{ms} ms").format(ms="%{value:.3g}") + "<extra></extra>",
        )
    )
    fig.update_layout(height=420, margin={"l": 0, "r": 0, "t": 10, "b": 0})
    return fig


def _readable(rows: pd.DataFrame) -> pd.DataFrame:
    """The layer table with its numbers as text (a layer with no node says so with a dash, never "None"), headed
    in the reader's language."""
    shown = rows.copy()
    for column, digits in (("eager ms", 4), ("ONNX Runtime ms", 4), ("eager / ORT", 3)):
        suffix = "×" if column == "eager / ORT" else ""
        shown[column] = [f"{significant(v, digits)}{suffix}" if pd.notna(v) else "—" for v in rows[column]]
    return shown.rename(columns={
        "eager layer(s)": _("eager layer(s)"), "eager ms": _("eager ms"), "ONNX Runtime ms": _("ONNX Runtime ms"),
        "eager / ORT": _("eager / ORT"), "ONNX Runtime node(s)": _("ONNX Runtime node(s)"),
        "what happened": _("what happened"),
    })  # fmt: skip


def _metrics(report: ProfileReport) -> None:
    """One call, its kernels, its overhead, and eager's, as four figures."""
    cols = st.columns(4)
    cols[0].metric(
        _("One call"), _("{ms} ms").format(ms=significant(report.call_ms)),
        _("CPU {ms} ms").format(ms=significant(report.cpu_ms)), delta_color="off", delta_arrow="off",
        help=_(
            "The median profiled call, as Python sees it, and its CPU time (all threads): far below the call, it "
            "waited for a CPU; above it, several threads worked."
        ),
    )  # fmt: skip
    cols[1].metric(
        _("In kernels"),
        _("{ms} ms").format(ms=significant(report.kernel_ms)),
        _("{share} of the call").format(share=f"{report.kernel_ms / report.call_ms:.0%}") if report.call_ms else "",
        delta_color="off",
        delta_arrow="off",  # a note beside the time, not a change: no arrow (a longer time is never an "up")
    )
    cols[2].metric(
        _("Runtime overhead"),
        _("{ms} ms").format(ms=significant(report.overhead_ms)),
        help=_(
            "The call minus its kernels: scheduling, copies, Python, and the profiler's own bookkeeping, which "
            "makes a profiled call slower than the Benchmark page's (its times are the ones to quote)."
        ),
    )
    if report.eager is not None:
        against = (
            _("{times}× ONNX Runtime's").format(times=number(report.eager.call_ms / report.call_ms, 1))
            if report.call_ms
            else ""
        )
        eager_ms = _("{ms} ms").format(ms=significant(report.eager.call_ms))
        cols[3].metric("PyTorch eager", eager_ms, against, delta_color="off", delta_arrow="off")


def profile_section(report: ProfileReport, key: str, view: GraphView | None = None) -> None:
    """One profile: headline, charts, tables, and ``view`` (the model's graph) coloured by latency, in the reader's
    language (the profile's notes said here: core.notes)."""
    for said in (n for n in report.notes if n.key in FALLBACKS):  # a provider that fell back, before any figure
        (st.warning if said.severity == "warning" else st.info)(say(said))  # the app's words: provider names
    st.subheader(md_escape(say(headline(report)), 500))
    advice = _("Profile again when the other work is done.")
    busy_notice(report.activity, f"{key}_again", "profile_again", _("Profile it again"), advice)
    for note in report.notes:
        if note != report.activity.note and note.key not in FALLBACKS:  # the machine's: in the busy notice above
            st.caption(md_escape(say(note), 800))
    _metrics(report)
    providers_section(report)
    st.markdown(_("**Where the time goes, by op type**: one call, each engine with its overhead as a bar of its own."))
    st.plotly_chart(op_types_figure(report), key=f"{key}_ops", config={"displaylogo": False})
    phases_section(report, key)
    frame = nodes_frame(report)
    st.markdown(
        _("**The top nodes** of the {count} ONNX Runtime ran ({level}), with what each one was.").format(
            count=number(len(frame)), level=report.level
        )
    )
    top = frame.head(20).assign(
        share=[significant(v * 100, 3) for v in frame["share"].head(20)],
        mean_ms=[significant(v, 4) for v in frame["mean_ms"].head(20)],
    )
    shown_top = top.rename(columns={
        "node": _("node"), "op_type": _("op type"), "provider": _("provider"), "mean_ms": _("ms per call"),
        "share": _("share of the call (%)"), "runs_per_call": _("runs per call"), "module": _("module"),
        "original_nodes": _("the model's node(s)"), "note": _("note"), "inputs": _("inputs"), "outputs": _("outputs"),
    })  # fmt: skip
    st.dataframe(shown_top, hide_index=True, width="stretch")  # a grid shows text as text: nothing to escape
    rows = rows_frame(report)
    if not rows.empty:
        st.markdown(
            _(
                "**Layer by layer**: each PyTorch layer next to the ONNX Runtime node(s) it became. Layers the "
                "exporter folded away share the row of the layer they were folded into."
            )
        )
        st.plotly_chart(layers_figure(rows), key=f"{key}_layers", config={"displaylogo": False})
        st.dataframe(_readable(rows), hide_index=True, width="stretch")
    if any(n.module for n in report.nodes):
        st.markdown(_("**ONNX Runtime's time by module**: click a box to open it."))
        st.plotly_chart(treemap_figure(report), key=f"{key}_treemap", config={"displaylogo": False})
    if view is not None:
        st.markdown(_("**The graph, coloured by latency**: each node by its share of the call in what it became."))
        draw_graph(view, key=f"{key}_graph", colourings={"latency": latency_colouring(view, report)}, colour="latency")
    stem = f"{report.model}-profile-{report.id}"
    side_by_side(
        Download(label=_("Download the nodes (CSV)"), data=csv_of(frame), file_name=f"{stem}.csv", mime="text/csv",
                 key=f"{key}_csv"),
        Download(label=_("Download the whole profile (JSON)"), data=lambda: json.dumps(to_data(report), indent=2),
                 file_name=f"{stem}.json", key=f"{key}_json"),
    )  # fmt: skip
