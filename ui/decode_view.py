"""Sections of the Decode page: bytes, the ModelProto tree, node details, the node table, the weights."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import streamlit as st

from core.decode import DecodedModel, DecodeRequest, NodeInfo
from core.graph.records import GraphRequest
from core.i18n import N_, _, ngettext, number, pgettext
from core.jobs import DECODE, DECODE_GRAPH, GRAPH
from core.jobs.wire import to_data
from core.model import ModelRecord, format_shape
from core.notes import say
from ui import jobs, session
from ui.bars import bar_table
from ui.cards import signature_tables
from ui.graph_panel import MAX_VIEW_NODES, START_AHEAD_MAX_BYTES, start_graph
from ui.hooks import NEXT_STEP
from ui.tables import Rows, all_rows, page_of_rows
from ui.text import escaped_frame, human_bytes, md_escape

__all__ = [
    "LAYOUT_AHEAD_MAX_NODES",
    "OP_ROWS",
    "TOGETHER_MAX_BYTES",
    "TOGETHER_MAX_NODES",
    "decode_ahead",
    "decoded_with_graph",
    "header_section",
    "layers_frame",
    "layers_section",
    "model_section",
    "model_tree",
    "node_details",
    "nodes_section",
    "op_types_section",
    "weights_section",
]


# a model up to these sizes is decoded and laid out by one job in one worker (core/decode/graphed.py); a larger one
# by two side by side (a second worker costs less there than doing the two one after the other)
TOGETHER_MAX_NODES = 2_000
TOGETHER_MAX_BYTES = 16 * 2**20
LAYOUT_AHEAD_MAX_NODES = 50_000  # a larger graph's layout (seconds of CPU) is not started before it is asked for


def _together(record: ModelRecord) -> bool:
    """Whether ``record`` is decoded and laid out by one job."""
    small = (record.node_count or 0) <= min(TOGETHER_MAX_NODES, MAX_VIEW_NODES)
    return small and record.size_bytes <= TOGETHER_MAX_BYTES


@NEXT_STEP.register
def decode_ahead(step: str) -> None:
    """Decode offered next (the Model page's link) for an ONNX model: a small one's one job starts now, and the
    page's run takes it (``decoded_with_graph``); a larger one's graph layout, which its Decode and its Partition
    wait on (1.8 CPU-seconds at 30,003 nodes), up to ``LAYOUT_AHEAD_MAX_NODES``."""
    if step != "decode":
        return
    record = session.small_onnx_model(TOGETHER_MAX_NODES, TOGETHER_MAX_BYTES)
    if record is not None and _together(record):
        request = DecodeRequest(path=record.path)
        if jobs.kept(DECODE, record.id, request) is None and jobs.kept(GRAPH, record.id) is None:
            jobs.start(DECODE_GRAPH, request, model=record.id, once=True, keep_s=jobs.AHEAD_KEPT_S)
        return
    record = session.small_onnx_model(LAYOUT_AHEAD_MAX_NODES, START_AHEAD_MAX_BYTES)
    if record is not None and not _together(record) and jobs.kept(GRAPH, record.id) is None:
        start_graph(record, ahead=True)


def decoded_with_graph(record: ModelRecord, label: str) -> DecodedModel:
    """The decoding of ``record``, with its graph view made and kept beside it (``graph_of`` takes it). A small
    model's two come from one job: a second worker, and the warm pool's replacement for it (0.4 CPU-seconds while
    the page is drawn), cost more than the layout itself; it may have started on the Model page (``decode_ahead``).
    A larger model's graph is laid out in a worker of its own while the decoding runs (``start_graph``)."""
    request, graph_request = DecodeRequest(path=record.path), GraphRequest(path=record.path)
    kept = jobs.kept(DECODE, record.id, request) is not None or jobs.kept(GRAPH, record.id) is not None
    if not _together(record) or kept:
        start_graph(record)
        return jobs.run(DECODE, request, label, model=record.id, reuse=True)
    both = jobs.run(DECODE_GRAPH, request, label, model=record.id, reuse=True)  # the node table in its folder
    jobs.keep(DECODE, record.id, both.decoded, request)
    if both.view is not None:  # else graph_of runs the graph's own job, which says why
        jobs.keep(GRAPH, record.id, both.view, graph_request)
    return both.decoded


def header_section(decoded: DecodedModel) -> None:
    offsets = "\n".join(
        f"{i:04x}  {decoded.header_hex[i * 3 : i * 3 + 48]}" for i in range(0, min(64, decoded.size_bytes), 16)
    )
    # plain fixed-width text, not st.code: a code block makes the browser load Streamlit's syntax highlighter (1.5 MB
    # of JavaScript, parsed while the person may already be clicking on to Partition) to show four lines of hex
    st.text(offsets)
    frame = pd.DataFrame(
        {
            _("offset"): [h.offset for h in decoded.header],
            _("bytes"): [h.hex + (" …" if h.length > 12 else "") for h in decoded.header],
            _("field"): [f"{h.number}: {h.field}" for h in decoded.header],
            _("wire type"): [h.wire_type for h in decoded.header],
            _("value"): [h.value if isinstance(h.value, str) else say(h.value) for h in decoded.header],
            _("how to read it"): [say(h.explanation) for h in decoded.header],
        }
    )
    st.table(escaped_frame(frame), hide_index=True)
    st.caption(
        _(
            "Every top-level field of the file, in file order: the graph usually fills almost all of it, and "
            "fields written after it (often opset_import) are found by jumping over its bytes."
        )
    )


def _nodes(count: int) -> str:
    return ngettext("{count} node", "{count} nodes", count).format(count=number(count))


def model_tree(decoded: DecodedModel) -> dict:
    """The ModelProto as a nested dict, for st.json's collapsible tree."""
    return {
        "ir_version": decoded.ir_version,
        "producer_name": decoded.producer_name,
        "producer_version": decoded.producer_version,
        "domain": decoded.domain,
        "model_version": decoded.model_version,
        "doc_string": decoded.doc_string[:2000],
        "opset_import": decoded.opsets,
        "metadata_props": {k[:200]: v[:2000] for k, v in list(decoded.metadata.items())[:200]},
        "graph": {
            "name": decoded.graph_name,
            "input": {s.name: f"{s.dtype} [{format_shape(s.shape)}]" for s in decoded.inputs},
            "output": {s.name: f"{s.dtype} [{format_shape(s.shape)}]" for s in decoded.outputs},
            "node": _nodes(decoded.node_count),
            "initializer": ngettext(
                "{count} tensor, {size}", "{count} tensors, {size}", decoded.initializer_count
            ).format(count=number(decoded.initializer_count), size=human_bytes(decoded.initializer_bytes)),
            "value_info": ngettext("{count} entry", "{count} entries", decoded.value_info_count).format(
                count=number(decoded.value_info_count)
            ),
            "subgraphs": {s.path: _nodes(s.node_count) for s in decoded.subgraphs},
        },
        "functions": {f"{f.domain}.{f.name}": f"{_nodes(f.node_count)}: {f.op_counts}" for f in decoded.functions},
    }


def model_section(decoded: DecodedModel) -> None:
    cols = st.columns(4)
    cols[0].metric(_("IR version"), decoded.ir_version if decoded.ir_version is not None else "—")
    cols[1].metric(_("Opset"), decoded.opsets.get("ai.onnx", "—"))
    cols[2].metric(
        _("Nodes"),
        number(decoded.node_count),
        help=_("{count} with subgraphs and functions").format(count=number(decoded.total_node_count)),
    )
    cols[3].metric(_("Parameters"), number(decoded.parameter_count))
    said = say(decoded.checker_message) if decoded.checker_message is not None else ""
    checker = _("passes") if decoded.checker_ok else _("fails: {message}").format(message=said)
    coverage = (
        _("{known} of {total} intermediate tensors have a known shape").format(
            known=number(decoded.shapes_known), total=number(decoded.shapes_total)
        )
        if decoded.shapes_total
        else _("no intermediate tensors")
    )
    shapes = _("**Shape inference**: {coverage}").format(coverage=coverage)  # a Chinese colon in Chinese
    st.markdown(f"- **onnx.checker** {md_escape(checker, 500)}\n- {shapes}")
    signature_tables(decoded.inputs, decoded.outputs)
    st.json(model_tree(decoded), expanded=1)
    if decoded.subgraphs:
        st.markdown(_("**Subgraphs** (If branches, Loop and Scan bodies): pick one in the graph view below."))
        frame = pd.DataFrame(
            [{_("subgraph"): s.path, _("nodes"): s.node_count, _("depth"): s.depth} for s in decoded.subgraphs]
        )
        if len(frame) > 8:  # a scrolling grid (text shown as text): fifty rows must not push the graph far down
            st.dataframe(frame, hide_index=True, width="stretch", height=320)
        else:
            st.table(escaped_frame(frame), hide_index=True)


def node_details(decoded: DecodedModel, index: int) -> None:
    """For a node of the main graph: the bytes of its weights and every attribute in full."""
    sizes = {t.name: t for t in decoded.initializers}
    node = next((n for n in all_rows(node_rows(decoded), NodeInfo) if n.graph == "main" and n.index == index), None)
    if node is None:
        return
    weights = [
        f"{md_escape(name, 120)}: {sizes[name].dtype} {md_escape(str(sizes[name].shape), 80)}, "
        f"{human_bytes(sizes[name].bytes)}"
        for name in node.inputs
        if name in sizes
    ]
    if weights:
        st.caption(_("Weights: {weights}").format(weights="; ".join(weights)))
    if node.attributes:
        frame = pd.DataFrame({_("attribute"): list(node.attributes), _("value"): list(node.attributes.values())})
        st.table(escaped_frame(frame), hide_index=True)
    else:
        st.caption(_("This node has no attributes."))


OP_ROWS = 25  # op types in Decode's table, the most frequent; the node table's filter lists every one
_NODE_COLUMNS = ["graph", "#", "name", "op_type", "domain", "inputs", "outputs", "attributes"]
_NODE_HEADERS = {
    "graph": N_("graph"),
    "name": N_("name"),
    "domain": N_("domain"),
    "inputs": N_("inputs"),
    "outputs": N_("outputs"),
    "attributes": N_("attributes"),
}


def _node_row(n: NodeInfo) -> dict[str, object]:
    return {
        "graph": n.graph,
        "#": n.index,
        "name": n.name,
        "op_type": n.op_type,
        "domain": n.domain,
        "inputs": ", ".join(n.inputs),
        "outputs": ", ".join(n.outputs),
        "attributes": ", ".join(f"{k}={v}" for k, v in n.attributes.items()),
    }


def _matches(n: NodeInfo, query: str) -> bool:
    text = " ".join([n.name, n.op_type, *n.inputs, *n.outputs, *(f"{k}={v}" for k, v in n.attributes.items())])
    return query in text.lower()


def nodes_section(decoded: DecodedModel) -> None:
    """The node table, filtered over every node and shown a page at a time (a large model has tens of thousands:
    the server builds and sends only the page in view)."""
    left, right = st.columns([2, 1])
    query = left.text_input(_("Search names, inputs, outputs and attributes"), key="node_search").strip().lower()
    ops = right.multiselect(_("Op types"), decoded.op_types, key="node_ops", placeholder=_("All op types"))
    nodes = node_rows(decoded)
    keep = (lambda n: (not ops or n.op_type in ops) and (not query or _matches(n, query))) if ops or query else None
    rows = page_of_rows(nodes, NodeInfo, "node_page", keep, _("nodes"))
    frame = pd.DataFrame([_node_row(n) for n in rows], columns=_NODE_COLUMNS)
    frame = frame.rename(columns={k: _(v) for k, v in _NODE_HEADERS.items()})  # the CSV keeps the English names
    st.dataframe(frame, hide_index=True, width="stretch", height=min(420, 38 + 35 * max(len(frame), 1)))
    st.download_button(
        _("Download the node table (CSV)"),
        lambda: (
            pd.DataFrame([_node_row(n) for n in all_rows(nodes, NodeInfo)], columns=_NODE_COLUMNS)
            .to_csv(index=False)
            .encode()
        ),
        f"{Path(decoded.path).stem}.nodes.csv",
        "text/csv",
        on_click="ignore",
    )
    op_types_section(decoded)
    layers_section(decoded)


def op_types_section(decoded: DecodedModel) -> None:
    """How many nodes of each op type the main graph holds, the most frequent first, as bars of text (a chart
    made the browser load Plotly, 4.7 MB of JavaScript, for this one figure)."""
    if not decoded.op_counts:
        return
    st.markdown("**" + _("Op types in the main graph") + "**")
    counts = sorted(decoded.op_counts.items(), key=lambda kv: -kv[1])
    st.markdown(bar_table([(op, [n]) for op, n in counts[:OP_ROWS]], [_("op"), _("nodes")]))
    if len(counts) > OP_ROWS:  # a table of every op type ran to a hundred rows on a model with many custom ops
        rest = counts[OP_ROWS:]
        st.caption(
            ngettext(
                "The other {count} op type holds {nodes} node(s); the node table's op type filter lists them all.",
                "The other {count} op types hold {nodes} node(s); the node table's op type filter lists them all.",
                len(rest),
            ).format(count=number(len(rest)), nodes=number(sum(n for _op, n in rest)))
        )


def layers_frame(decoded: DecodedModel) -> pd.DataFrame:
    """One row per repeated block: its name, nodes, most frequent op types, contrib ops and weights."""
    groups = decoded.layer_groups
    return pd.DataFrame(
        {
            _("block"): [g.name for g in groups],
            _("nodes"): [g.nodes for g in groups],
            _("op types (the most frequent)"): [
                pgettext("list", ", ").join(f"{op} ×{count}" for op, count in list(g.ops.items())[:5]) for g in groups
            ],
            _("contrib ops (com.microsoft)"): [pgettext("list", ", ").join(g.contrib_ops) or "—" for g in groups],
            _("parameters"): [number(g.parameters) for g in groups],
            _("weight bytes"): [human_bytes(g.bytes) for g in groups],
        }
    )


def layers_section(decoded: DecodedModel) -> None:
    """The main graph's repeated blocks (a language model's decoder layers), when its nodes' names show them."""
    groups = decoded.layer_groups
    if not groups:
        return
    inside = sum(g.nodes for g in groups)
    st.markdown(
        _(
            "**The layers.** The nodes' names put {inside} of the main graph's {total} nodes in {count} repeated "
            "blocks, one row each: its nodes, its most frequent op types, the contrib ops it uses (com.microsoft's, "
            "which ONNX Runtime alone runs: the Partition page says which provider took them) and the weights its "
            "nodes hold. A block that differs from the others is one to look at; a block's name in the search above "
            "lists its nodes, and the graph shows each block as a group that opens with a click."
        ).format(inside=number(inside), total=number(decoded.node_count), count=number(len(groups)))
    )
    st.dataframe(layers_frame(decoded), hide_index=True, width="stretch")  # names as text: a cell renders nothing


def weights_section(decoded: DecodedModel) -> None:
    weights = [t for t in decoded.initializers if t.is_weight]
    if not weights:
        st.info(_("This model holds no weights: every tensor comes from its inputs."))
        return
    cols = st.columns(3)
    cols[0].metric(
        _("Weight tensors"),
        number(len(weights)),
        help=_("int64 and int32 tensors (shapes, axes, indices) and scalars (an epsilon, a 0.5) are not counted"),
    )
    cols[1].metric(_("Weight bytes"), human_bytes(sum(t.bytes for t in weights)))
    cols[2].metric(_("Stored outside the file"), ", ".join(decoded.external_files) or _("none"))
    largest = sorted(weights, key=lambda t: t.bytes, reverse=True)[:15]
    st.markdown("**" + _("Largest tensors") + "**")
    st.table(
        escaped_frame(
            pd.DataFrame(
                [
                    {
                        _("tensor"): t.name,
                        "dtype": t.dtype,
                        _("shape"): "×".join(map(str, t.shape)),
                        _("bytes"): human_bytes(t.bytes),
                        _("where"): say(t.storage),
                    }
                    for t in largest
                ]
            )
        ),
        hide_index=True,
    )
    if decoded.layers:
        top = sorted(decoded.layers, key=lambda layer: layer.parameters, reverse=True)[:25]
        st.markdown("**" + _("Parameters per layer (the 25 largest)") + "**")
        rows = [(f"{layer.node} ({layer.op_type})", [layer.parameters]) for layer in top]
        st.markdown(bar_table(rows, [_("layer"), _("parameters")], colour="green"))


def node_rows(decoded: DecodedModel) -> Rows[NodeInfo]:
    """The node table: in the job's file, or in the result itself."""
    return decoded.node_rows if decoded.node_rows is not None else decoded.nodes


def decoded_json(decoded: DecodedModel) -> bytes:
    data = to_data(decoded)
    data.pop("node_rows", None)
    data["nodes"] = [to_data(n) for n in all_rows(node_rows(decoded), NodeInfo)]
    data["path"] = Path(decoded.path).name  # the server's folders are nobody's business
    return json.dumps(data, indent=1).encode()
