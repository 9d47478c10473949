"""Sections of the Partition page: the providers, one partition (graph, summary, tables), optimization levels."""

from __future__ import annotations

import shutil
from dataclasses import replace
from functools import partial
from pathlib import Path

import pandas as pd
import streamlit as st

from core.graph import GraphView
from core.graph.colourings import NOWHERE, Colouring
from core.graph.palette import PROVIDER_TEXT
from core.i18n import _, ngettext, number, pgettext
from core.jobs import OPTIMIZE, PARTITION
from core.notes import say, say_all
from core.partition import (
    KERNEL_PROVIDERS,
    KIND_TITLES,
    SIMULATED,
    LevelChanges,
    LevelsRequest,
    OptimizationReport,
    PartitionReport,
    PartitionRequest,
    PartitionResult,
    fusions_used,
    level_changes,
)
from core.partition.words import summary
from core.runtime.ort import LEVELS, ProviderInfo, provider_table, short_name
from core.runtime.placement import CONSTANT, INLINED, REMOVED, NodePlacement
from core.runtime.provider_options import CPU
from ui import jobs, session, targets
from ui.bars import bar_table, stacked_bar_table
from ui.graph_panel import draw_graph
from ui.hooks import NEXT_STEP
from ui.runtime_view import declined_section
from ui.tables import Rows, all_rows, page_of, page_of_rows
from ui.text import escaped_frame, human_bytes, md_escape

__all__ = [
    "AHEAD_MAX_BYTES",
    "LEVELS_BEFORE_GRAPH",
    "LEVELS_ON_REQUEST",
    "contrib_frame",
    "contrib_line",
    "contrib_section",
    "default_level",
    "default_providers",
    "levels_section",
    "levels_table",
    "partition_ahead",
    "partition_with_levels",
    "placement_frame",
    "placements",
    "providers_of",
    "providers_section",
    "report_section",
    "share_section",
]

# nodes; on a larger model the optimization levels (five ONNX Runtime sessions over the whole graph, minutes on a
# small machine) wait for a click, and the partition above them does not wait for them
LEVELS_ON_REQUEST = 50_000
# nodes up to which the Partition page waits for the levels (started beside the partition) before drawing its
# graph, so that it draws it once, with what each level did; above, the graph comes first and the page runs again.
# Both only where the levels are a job of their own (another runtime's partition, or levels that failed with it):
# the partition's job makes them at every size (partition_with_levels), and the graph is drawn once, with them
LEVELS_BEFORE_GRAPH = 2_000
# the largest model whose partition and levels start on Decode (partition_ahead): the levels write five copies of it
AHEAD_MAX_BYTES = 16 * 2**20


@st.cache_data(show_spinner=False)
def providers_of(available: tuple[str, ...] | None) -> list[ProviderInfo]:
    """What a build of ONNX Runtime has: this server's (None), or the chosen target's (the same for every user)."""
    return provider_table(list(available) if available is not None else None)


def default_providers(table: list[ProviderInfo]) -> list[str]:
    """The page's first choice of providers: every hardware one this build has, then the CPU."""
    hardware = [p.name for p in table if p.available and p.name not in ("AzureExecutionProvider", CPU)]
    return [*hardware, CPU]


def default_level() -> str:
    """The optimization level the page opens with: the address's, else ALL."""
    return session.page_param("level") if session.page_param("level") in LEVELS else "all"


@NEXT_STEP.register
def partition_ahead(step: str) -> None:
    """Partition offered next (Decode's first next step) for a small ONNX model: the page's first job, the
    partition on this server's runtime with the page's first choices and the levels beside it, starts now, and the
    page's run takes it (``partition_with_levels``)."""
    # a larger one's sessions over every graph and function, or its five optimized copies, only when asked for
    record = session.small_onnx_model(LEVELS_BEFORE_GRAPH, AHEAD_MAX_BYTES) if step == "partition" else None
    if record is None or jobs.kept(OPTIMIZE, record.id) is not None:
        return
    available = targets.providers()
    table = providers_of(tuple(available) if available is not None else None)
    request = PartitionRequest(
        path=record.path, providers=default_providers(table), level=default_level(), simulate=list(SIMULATED)
    )
    if jobs.kept(PARTITION, record.id, request) is not None:
        return
    folder = session.workspace().new_folder(OPTIMIZE.folder)
    if not jobs.start(
        PARTITION, replace(request, levels_dir=str(folder)), model=record.id, once=True, keep_s=jobs.AHEAD_KEPT_S
    ):
        shutil.rmtree(folder, ignore_errors=True)


def partition_with_levels(
    request: PartitionRequest, levels_request: LevelsRequest, label: str, model: str
) -> tuple[PartitionResult, OptimizationReport | None]:
    """The partition and the levels from one job: one worker, not two (a second worker started cold took most of
    the sample's page), the partition's session built beside the levels' and the ALL session once, five sessions
    two at a time (core.partition.partitioner; on a large model the partition comes with its levels). The job may
    have started on Decode (``partition_ahead``), its levels in a folder of its own. Each is kept as its own
    job's result for its request, so the page's next runs take them as they are; the levels are None when they
    could not be made (the page then asks for them alone, which says why)."""
    folder = session.workspace().new_folder(OPTIMIZE.folder)
    result = jobs.run(PARTITION, replace(request, levels_dir=str(folder)), label, model=model, reuse=True)
    jobs.keep(PARTITION, model, result, request)
    levels = result.optimization
    written = {Path(level.path).parent for level in levels.levels} if levels is not None else set()
    if folder not in written:  # none written, or written by the job started ahead
        shutil.rmtree(folder, ignore_errors=True)
    if levels is None:
        return result, None
    session.workspace().prune(OPTIMIZE.folder, keep={*written, *session.paths_in_use()})
    jobs.keep(OPTIMIZE, model, levels, levels_request)
    return result, levels


def providers_section(table: list[ProviderInfo]) -> None:
    frame = pd.DataFrame(
        {
            _("provider"): [p.name for p in table],
            _("in this build"): [_("yes") if p.available else _("no") for p in table],
            _("hardware"): [_(p.hardware) if p.hardware else "" for p in table],  # marked in core.runtime.ort
            _("what it takes"): [_(p.install) for p in table],
        }
    )
    st.table(escaped_frame(frame), hide_index=True)


def share_section(result: PartitionResult) -> None:
    """Each partition (this machine's and the simulated ones) as one bar of its nodes per provider, in text: a
    chart made the browser load Plotly (4.7 MB of JavaScript) before the page was done."""
    nowhere = _where(NOWHERE)
    rows = [(say(report.title), _shares(report, nowhere)) for report in result.reports]
    st.markdown(
        stacked_bar_table(rows, [_("Partition"), _("nodes per provider")], colours=PROVIDER_TEXT, faint=nowhere)
    )


def _shares(report: PartitionReport, nowhere: str) -> dict[str, int]:
    """A partition's main-graph nodes per provider (short names), the most first, then those that run nowhere,
    counted as the graph's legend counts them (``main_providers``): ``providers`` holds only the placed ones."""
    shares = {short_name(p): n for p, n in report.providers.items() if p}
    unplaced = report.main_providers.count("")
    return shares | ({nowhere: unplaced} if unplaced else {})


def placement_frame(nodes: list[NodePlacement]) -> pd.DataFrame:
    """Where each node runs (``nodes``: a page of a report's nodes), headed in the reader's language."""
    return pd.DataFrame(
        {
            "#": [str(n.index) if n.index >= 0 else "—" for n in nodes],  # "—": in a subgraph, or added by ORT
            _("node"): [n.name for n in nodes],
            _("op"): [f"{n.domain}:{n.op_type}" if n.domain not in ("", "ai.onnx") else n.op_type for n in nodes],
            _("graph"): [_("added by ORT") if n.graph == "added by ORT" else n.graph for n in nodes],
            _("provider"): [_label(n) for n in nodes],
            _("subgraph"): [str(n.subgraph) if n.subgraph >= 0 else "—" for n in nodes],
            _("note"): [_note(n.note) for n in nodes],
        }
    )


def _note(note: str) -> str:
    """A node's note, translated when it is one of the placement's own (they are marked in core.runtime.placement)."""
    return _(note) if note in (INLINED, CONSTANT, REMOVED) else note


def _label(node: NodePlacement) -> str:
    return short_name(node.provider) if node.provider else _where(NOWHERE)


def _where(provider: str) -> str:
    """A provider's short name, or "runs nowhere" in the reader's language."""
    return _("runs nowhere") if provider == NOWHERE else provider


def placements(report: PartitionReport) -> Rows[NodePlacement]:
    """Where every node runs: in the job's file, or in the result itself."""
    return report.node_rows if report.node_rows is not None else report.nodes


def _metrics(report: PartitionReport) -> None:
    """The partition in four figures, and the ops the first provider cannot take."""
    first = report.providers_requested[0]
    on_first = report.providers.get(first, 0)
    pieces = sum(1 for s in report.subgraphs if s.provider == first)
    name = short_name(first)
    cols = st.columns(4)
    cols[0].metric(_("Nodes placed (main graph)"), number(sum(report.providers.values())))
    cols[1].metric(_("On {name}").format(name=name), number(on_first))
    if first in KERNEL_PROVIDERS:
        cols[2].metric(
            _("Connected pieces on {name}").format(name=name),
            number(pieces),
            help=_(
                "{name} runs each node with a kernel of its own, so it has no partitions to compile; these are the "
                "connected runs of nodes it holds, and each border with another provider is a copy."
            ).format(name=name),
        )
    else:
        cols[2].metric(
            _("{name} partitions").format(name=name),
            number(pieces),
            help=_("Each partition is compiled by the provider into one piece; each border is a hand-over."),
        )
    if first != "CPUExecutionProvider":
        cols[3].metric(_("Fall back to CPU"), number(len(report.fallback)))
    else:
        cols[3].metric(_("Copy nodes"), number(len(report.copies)))
    if report.unsupported_ops:
        ops = pgettext("list", ", ").join(f"**{md_escape(op, 80)}**" for op in report.unsupported_ops)
        st.markdown(
            _("**Ops {name} cannot take** (each breaks the graph into another piece): {ops}").format(name=name, ops=ops)
        )


def contrib_frame(report: PartitionReport) -> pd.DataFrame:
    """ONNX Runtime's own ops in the partition, each with its nodes and the providers that took them."""
    return pd.DataFrame(
        {
            _("op"): [c.op for c in report.contrib],
            _("nodes"): [c.nodes for c in report.contrib],
            _("added by ORT"): [c.added for c in report.contrib],
            _("runs on"): [_runs_on(c.providers) for c in report.contrib],
        }
    )


def _runs_on(providers: dict[str, int]) -> str:
    """The providers that took an op's nodes: "CPU", or "CUDA ×3, CPU ×1" when they share them."""
    names = {p: _where(short_name(p) if p else NOWHERE) for p in providers}
    if len(providers) == 1:
        return next(iter(names.values()))
    return pgettext("list", ", ").join(f"{names[p]} ×{number(n)}" for p, n in providers.items())


def contrib_line(report: PartitionReport) -> None:
    """The model's own contrib ops (a language model's GroupQueryAttention, MatMulNBits) and where they run, in a
    line above the tables; the fusions ONNX Runtime added are in the tab."""
    written = [c for c in report.contrib if c.added < c.nodes]
    if not written:
        return
    ops = pgettext("list", "; ").join(
        _("{op} ×{count} on {where}").format(op=md_escape(c.op, 120), count=number(c.nodes - c.added),
                                              where=_runs_on(c.providers))
        for c in written
    )  # fmt: skip
    st.markdown(_("**ONNX Runtime's own ops in the model** (com.microsoft): {ops}.").format(ops=ops))


def contrib_section(report: PartitionReport) -> None:
    """Where ONNX Runtime's own ops (com.microsoft) run: the model's and those its optimizer put in."""
    st.caption(
        _(
            "The com.microsoft domain holds ONNX Runtime's own ops: contrib ops a model is written with "
            "(GroupQueryAttention, MatMulNBits, SkipLayerNormalization...) and the fusions its optimizer puts in. "
            "No other runtime runs them, and a provider runs only those it has kernels for."
        )
    )
    st.dataframe(contrib_frame(report), hide_index=True, width="stretch")


def report_section(
    report: PartitionReport, view: GraphView | None, key: str, colourings: dict[str, Colouring] | None = None
) -> None:
    """One partition: what fell back (before any figure), its figures, the graph coloured by provider
    (``colourings`` offers more), every node and the nodes a provider declined."""
    for warned in (n for n in report.notes if n.severity == "warning"):
        st.warning(say(warned))  # the app's own words: provider and runtime names
    st.subheader(summary(report))
    _metrics(report)
    for note in say_all(n for n in report.notes if n.severity != "warning"):
        st.caption(md_escape(note, 600))
    contrib_line(report)
    declined_section(report)
    if view is not None:
        selected = draw_graph(view, key=key, colourings=colourings, colour="provider")
        if selected is not None and selected.index >= 0:
            node = next((n for n in all_rows(placements(report), NodePlacement) if n.index == selected.index), None)
            if node is not None:
                said = {
                    "node": md_escape(node.name or node.op_type),
                    "op": md_escape(node.op_type),
                    "where": _label(node),
                }
                text = (
                    _("**{node}** ({op}) runs on **{where}**, in subgraph {subgraph}.").format(
                        **said, subgraph=node.subgraph
                    )
                    if node.subgraph >= 0
                    else _("**{node}** ({op}) runs on **{where}**.").format(**said)
                )
                st.info(text + (f" ({md_escape(_note(node.note), 200)})" if node.note else ""))
    titles = [_("Every node"), _("Subgraphs"), _("ORT's log")] + (
        [_("ONNX Runtime's own ops")] if report.contrib else []
    )
    nodes_tab, subgraphs_tab, log_tab, *contrib_tab = st.tabs(titles)
    with nodes_tab:
        providers = sorted({short_name(p) if p else _where(NOWHERE) for p in report.node_providers})
        # keyed by the providers too: another runtime's run (OpenVINO beside CPU) shows all of its own, where a kept
        # choice among the last run's providers hid the new one's nodes
        chosen = st.multiselect(_("Show providers"), providers, default=providers, key=f"{key}_{providers}_filter")
        keep = None if set(chosen) >= set(providers) else (lambda n: _label(n) in chosen)
        page = page_of_rows(placements(report), NodePlacement, f"{key}_page", keep, _("nodes"))
        shown = placement_frame(page)
        st.dataframe(shown, hide_index=True, width="stretch", height=min(420, 38 + 35 * max(len(shown), 1)))
    with subgraphs_tab:
        st.caption(
            _(
                "Connected pieces of the main graph that run on one provider. Every border between two pieces is "
                "a hand-over; between a device and the host it costs a copy on every run."
            )
        )
        shown_pieces = page_of(report.subgraphs, f"{key}_subgraph_page", what=_("subgraphs"))
        sub = pd.DataFrame(
            {
                _("subgraph"): [s.index for s in shown_pieces],
                _("provider"): [short_name(s.provider) for s in shown_pieces],
                _("nodes"): [s.nodes for s in shown_pieces],
                _("ops"): [", ".join(f"{op} ×{n}" for op, n in s.ops.items()) for s in shown_pieces],
                _("from"): [s.first for s in shown_pieces],
                _("to"): [s.last for s in shown_pieces],
            }
        )
        st.dataframe(sub, hide_index=True, width="stretch")
        if report.copies:
            st.markdown(_("**Copy nodes ONNX Runtime inserted**"))
            st.table(escaped_frame(pd.DataFrame([vars(c) for c in report.copies])), hide_index=True)
    with log_tab:
        if report.log:
            st.caption(_("The “Node placements” lines of ONNX Runtime's verbose log, from when the session was made."))
            st.text("\n".join(report.log))  # not st.code: its highlighter is 1.5 MB of JavaScript to load
        else:
            st.caption(
                _("A simulation creates no session, so there is no log; the checker's groups are shown instead.")
            )
    for tab in contrib_tab:
        with tab:
            contrib_section(report)


def levels_table(report: OptimizationReport) -> str:
    """Nodes and rewrites per level, the model as exported first, with a bar of the nodes (Markdown)."""
    rows = [(_("as exported"), [report.original_nodes, 0])]
    rows += [(lv.name, [lv.node_count, len(lv.rewrites)]) for lv in report.levels]
    return bar_table(rows, [_("optimization level"), _("nodes"), _("rewrites")])


def _op_table(report: OptimizationReport) -> pd.DataFrame:
    ops = sorted({op for lv in report.levels for op in lv.op_counts} | set(report.original_ops))
    data = {_("op"): ops, _("model"): [report.original_ops.get(op, 0) for op in ops]}
    for lv in report.levels:
        data[lv.name] = [lv.op_counts.get(op, 0) for op in ops]
    return pd.DataFrame(data)


def levels_section(report: OptimizationReport, name: str, key: str) -> None:
    st.markdown(levels_table(report))
    if report.original_subgraph_nodes:
        last = report.levels[-1] if report.levels else None
        exported = number(report.original_subgraph_nodes)
        st.caption(
            _(
                "The counts and fusions are the main graph's. ORT optimizes the If/Loop/Scan bodies too: they hold "
                "{count} node(s) as exported, and {after} at {level}."
            ).format(count=exported, after=number(last.subgraph_nodes), level=last.name)
            if last is not None
            else _(
                "The counts and fusions are the main graph's. ORT optimizes the If/Loop/Scan bodies too: they hold "
                "{count} node(s) as exported."
            ).format(count=exported)
        )
    for change in level_changes(report.levels):
        _level_lines(change, report)
    fusions = fusions_used(report.levels)
    if fusions:
        st.markdown(_("**The fused ops ONNX Runtime introduced**"))
        what = [_(line) for line in fusions.values()]  # marked in core.partition.explain
        st.table(pd.DataFrame({_("op"): list(fusions), _("what it does"): what}), hide_index=True)
    with st.expander(_("Op counts per level")):
        st.dataframe(_op_table(report), hide_index=True, width="stretch")
    choice = st.selectbox(
        _("Download the optimized model of level"),
        [lv.key for lv in report.levels],
        index=len(report.levels) - 1,
        format_func=lambda k: next(lv.name for lv in report.levels if lv.key == k),
        key=f"{key}_download_level",
    )
    level = next(lv for lv in report.levels if lv.key == choice)
    if level.warning:
        st.warning(say(level.warning))
    path = Path(level.path)
    if len(level.files) > 1:
        st.caption(
            _(
                "This model keeps its weights in a side file ({size} in all), too large to download from the "
                "browser. The command line saves every level: `python -m core partition MODEL --levels --out-dir "
                "DIR`."
            ).format(size=human_bytes(level.size_bytes))
        )
    elif path.exists():
        st.download_button(
            _("Download {file} ({size})").format(file=f"{name}.{level.key}.onnx", size=human_bytes(level.size_bytes)),
            partial(session.workspace().read_file, path),  # read when clicked, only inside this session's folder
            f"{name}.{level.key}.onnx",
            "application/octet-stream",
            key=f"{key}_download",
            on_click="ignore",
        )


def _level_lines(change: LevelChanges, report: OptimizationReport) -> None:
    """What one level did over the level before, by kind of rewrite, in the reader's language."""
    head = ngettext("**{level}** ({count} node)", "**{level}** ({count} nodes)", change.node_count).format(
        level=change.name, count=number(change.node_count)
    )
    same = ""
    if change.same_as_before and change.same_as_before < change.before_total:  # some undone: say which share is kept
        same = ngettext(
            "{count} of the {total} rewrite of the level before",
            "{count} of the {total} rewrites of the level before",
            change.before_total,
        ).format(count=number(change.same_as_before), total=number(change.before_total))
    elif change.same_as_before:
        same = ngettext(
            "the {count} rewrite of the level before", "the {count} rewrites of the level before", change.same_as_before
        ).format(count=number(change.same_as_before))
    if not change.by_kind:
        said = _("{head}: no further change ({same}).") if same else _("{head}: no change.")
        st.markdown(said.format(head=head, same=same))
        return
    transformers = next((lv.transformers for lv in report.levels if lv.key == change.key), [])
    by = md_escape(pgettext("list", ", ").join(transformers), 400) if transformers else _("ORT's transformers")
    said = _("{head}, by {by}: {same}, and these:") if same else _("{head}, by {by}: these rewrites:")
    st.markdown(said.format(head=head, by=by, same=same))
    lines = []
    for kind, items in change.by_kind.items():
        total = sum(n for _text, n in items)
        title = _(KIND_TITLES[kind]) if kind in KIND_TITLES else md_escape(kind, 40)  # marked in core.partition
        lines.append("- " + _("{kind}: {count}").format(kind=title, count=number(total)))
        lines += [f"  - {md_escape(t, 400)}" + (f" (×{number(n)})" if n > 1 else "") for t, n in items[:12]]
        if len(items) > 12:
            lines.append("  - " + _("… {count} more").format(count=number(len(items) - 12)))
    st.markdown("\n".join(lines))
