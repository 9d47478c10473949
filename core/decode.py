"""Take an ONNX file apart: the first bytes field by field, the ModelProto tree, nodes, weights, text form.

``decode_model`` is the worker job behind the Decode page and ``python -m core inspect``. It never loads
external weights (memory grows with the graph, not the weights) and decodes whatever it can of a damaged
file, listing what it could not read in ``problems``.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.graphview import GraphLayout, layout_graph
from core.intake import attribute_subgraphs, external_entries, tensor_elements, tensor_nbytes, value_specs
from core.model import TensorSpec
from core.protowire import MODEL_PROTO_FIELDS, WIRE_TYPES, WireField, read_fields

__all__ = ["DecodedModel", "decode_model", "annotate_header", "HEADER_BYTES", "MAX_LAYOUT_NODES"]

HEADER_BYTES = 64
MAX_LAYOUT_NODES = 20_000  # larger graphs get no drawing (the node table still lists every node)
SMALL_TENSOR = 16  # tensors up to this many elements keep their values in the text form
NOT_WEIGHTS = {"int64", "int32"}  # shapes, axes and indices


@dataclass
class HeaderField:
    """One top-level field of the file, as protoc --decode_raw would show it, with what ONNX calls it."""

    offset: int
    length: int  # tag + length prefix + payload, as far as it lies in the file
    hex: str  # the field's first bytes
    number: int
    wire_type: str
    field: str  # ModelProto field name, or "unknown"
    value: str
    explanation: str


@dataclass
class TensorInfo:
    name: str
    dtype: str
    shape: list[int]
    elements: int
    bytes: int
    storage: str  # "inline", "external: file @ offset", or "constant node"
    graph: str

    @property
    def is_weight(self) -> bool:
        """Integer index and shape tensors (int64, int32) are not learned weights."""
        return self.dtype not in NOT_WEIGHTS


@dataclass
class NodeInfo:
    index: int
    graph: str  # "main" or a subgraph path
    name: str
    op_type: str
    domain: str
    inputs: list[str]
    outputs: list[str]
    attributes: dict[str, str]
    subgraphs: list[str] = field(default_factory=list)


@dataclass
class LayerWeight:
    node: str
    op_type: str
    graph: str
    parameters: int
    bytes: int
    tensors: list[str]


@dataclass
class SubgraphInfo:
    path: str  # e.g. "main / if (If) . then_branch"
    owner: str  # the node that holds it
    owner_op: str
    attribute: str
    node_count: int
    depth: int


@dataclass
class FunctionInfo:
    domain: str
    name: str
    inputs: list[str]
    outputs: list[str]
    node_count: int
    op_counts: dict[str, int]


@dataclass
class DecodedModel:
    path: str
    size_bytes: int
    header_hex: str
    header: list[HeaderField]
    ir_version: int | None = None
    producer_name: str = ""
    producer_version: str = ""
    domain: str = ""
    model_version: int | None = None
    doc_string: str = ""
    graph_name: str = ""
    opsets: dict[str, int] = field(default_factory=dict)
    metadata: dict[str, str] = field(default_factory=dict)
    inputs: list[TensorSpec] = field(default_factory=list)
    outputs: list[TensorSpec] = field(default_factory=list)
    node_count: int = 0  # main graph
    total_node_count: int = 0  # every graph and function
    op_counts: dict[str, int] = field(default_factory=dict)  # main graph
    initializers: list[TensorInfo] = field(default_factory=list)
    initializer_count: int = 0
    initializer_bytes: int = 0
    parameter_count: int = 0
    external_files: list[str] = field(default_factory=list)
    value_info_count: int = 0
    functions: list[FunctionInfo] = field(default_factory=list)
    subgraphs: list[SubgraphInfo] = field(default_factory=list)
    nodes: list[NodeInfo] = field(default_factory=list)
    layers: list[LayerWeight] = field(default_factory=list)
    layouts: dict[str, GraphLayout] = field(default_factory=dict)
    text: str = ""
    checker_ok: bool | None = None
    checker_message: str = ""
    shapes_known: int = 0
    shapes_total: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def subgraph_count(self) -> int:
        return len(self.subgraphs)


# ----------------------------------------------------------------------------------------------- header
def _field_value(buf: bytes, f: WireField, name: str) -> tuple[str, str]:
    """The decoded value, and a sentence a learner can follow."""
    tag = f"tag {buf[f.offset : f.offset + f.tag_length].hex(' ')} = field {f.number} << 3 | wire type {f.wire_type}"
    if f.wire_type == 0:
        return str(f.value), f"{tag} (varint); the varint that follows is {f.value}."
    if f.wire_type != 2:
        return str(f.value), f"{tag} ({WIRE_TYPES[f.wire_type]})."
    prefix = f"{tag} (length-delimited); the length prefix says {f.payload_length:,} bytes follow"
    payload = buf[f.payload_offset : f.payload_offset + min(f.payload_length, 256)]
    if name in ("producer_name", "producer_version", "domain", "doc_string"):
        text = payload.decode("utf-8", errors="replace")
        more = "…" if f.payload_length > len(payload) else ""
        return repr(text[:80] + more), f"{prefix}: a UTF-8 string."
    if name == "opset_import":
        inner = {g.number: g for g in read_fields(payload, 4)}
        domain = payload[inner[1].payload_offset : inner[1].end].decode(errors="replace") if 1 in inner else ""
        version = inner[2].value if 2 in inner else None
        shown = repr(domain) if domain else "'' (the default domain, ai.onnx)"
        return f"domain {shown}, version {version}", f"{prefix}: an OperatorSetIdProto message."
    kinds = {
        "graph": "GraphProto",
        "metadata_props": "StringStringEntryProto",
        "functions": "FunctionProto",
        "training_info": "TrainingInfoProto",
        "configuration": "DeviceConfigurationProto",
    }
    return f"{kinds.get(name, 'message')} of {f.payload_length:,} bytes", f"{prefix}: a nested message."


def annotate_header(buf: bytes, total_length: int, max_fields: int = 12) -> list[HeaderField]:
    """The top-level fields that start in ``buf`` (the file's first bytes), explained."""
    return [_annotate(buf, f, 0) for f in read_fields(buf, max_fields=max_fields, total_length=total_length)]


def _annotate(buf: bytes, f: WireField, base: int) -> HeaderField:
    """``buf`` holds the file from offset ``base``; ``f``'s offsets are relative to ``buf``."""
    name = MODEL_PROTO_FIELDS.get(f.number, ("unknown", -1))[0]
    value, explanation = _field_value(buf, f, name)
    shown = buf[f.offset : min(f.offset + 12, f.end, len(buf))]
    return HeaderField(
        base + f.offset, f.end - f.offset, shown.hex(" "), f.number, WIRE_TYPES[f.wire_type], name, value, explanation
    )


def top_level_fields(path: Path, max_fields: int = 64) -> list[HeaderField]:
    """Every top-level field of the file, found by reading each tag and jumping over its payload, so the
    fields after a large graph (opset_import, metadata) are listed too without reading the graph."""
    size = path.stat().st_size
    fields: list[HeaderField] = []
    with path.open("rb") as fh:
        position = 0
        while position < size and len(fields) < max_fields:
            fh.seek(position)
            window = fh.read(4096)
            found = read_fields(window, max_fields=1, total_length=size - position)
            if not found:
                break
            f = found[0]
            if f.end > len(window) and f.payload_length <= 1 << 16:  # a small field cut by the window: read it all
                window = window + fh.read(f.end - len(window))
            fields.append(_annotate(window, f, position))
            position += f.end
    return fields


# ----------------------------------------------------------------------------------------------- walking
def _attr_text(attr: Any) -> tuple[str, list[Any]]:
    """An attribute's value in a short form, and any subgraphs it holds."""
    import onnx
    from onnx import helper

    kind = attr.type
    if kind == onnx.AttributeProto.GRAPH:
        count = len(attr.g.node)
        return f"graph '{attr.g.name}' ({count} node{'' if count == 1 else 's'})", [attr.g]
    if kind == onnx.AttributeProto.GRAPHS:
        return f"{len(attr.graphs)} graphs", list(attr.graphs)
    if kind == onnx.AttributeProto.TENSOR:
        t = attr.t
        return f"tensor {_dtype(t.data_type)} {list(t.dims)}", []
    if kind == onnx.AttributeProto.SPARSE_TENSOR:
        return f"sparse tensor {list(attr.sparse_tensor.dims)}", []
    try:
        value = helper.get_attribute_value(attr)
    except Exception:
        return "(unreadable)", []
    if isinstance(value, bytes):
        value = value.decode("utf-8", errors="replace")
    elif isinstance(value, list):
        value = [v.decode("utf-8", errors="replace") if isinstance(v, bytes) else v for v in value]
    text = repr(value) if isinstance(value, str) else str(value)
    return (text[:200] + "…") if len(text) > 200 else text, []


def _dtype(elem_type: int) -> str:
    from core.intake import _dtype_name

    return _dtype_name(elem_type)


def _walk(graph: Any, path: str, depth: int) -> Iterator[tuple[Any, str, int, Any, str]]:
    """(graph, path, depth, owner node, attribute) for this graph and every subgraph below it, iteratively."""
    stack = [(graph, path, depth, None, "")]
    while stack:
        current, current_path, current_depth, owner, attribute = stack.pop()
        yield current, current_path, current_depth, owner, attribute
        for index, node in enumerate(current.node):
            who = node.name or f"{node.op_type}_{index}"
            for label, sub in attribute_subgraphs(node):
                stack.append((sub, f"{current_path} / {who} ({node.op_type}).{label}", current_depth + 1, node, label))


def _node_info(
    node: Any, index: int, graph: str, attributes: dict[str, str], subgraphs: list[str] | None = None
) -> NodeInfo:
    return NodeInfo(
        index,
        graph,
        node.name,
        node.op_type,
        node.domain or "ai.onnx",
        list(node.input),
        list(node.output),
        attributes,
        subgraphs or [],
    )


def _text_form(model: Any) -> str:
    """onnx.printer's text, with large weight values left out (they would be megabytes of digits)."""
    import onnx
    import onnx.printer

    light = onnx.ModelProto()
    light.CopyFrom(model)
    graphs = [g for g, *_ in _walk(light.graph, "main", 0)]
    for function in light.functions:
        for node in function.node:
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.GRAPH:
                    graphs.extend(g for g, *_ in _walk(attr.g, "f", 1))
    for graph in graphs:
        tensors = list(graph.initializer) + [
            attr.t for node in graph.node for attr in node.attribute if attr.type == onnx.AttributeProto.TENSOR
        ]
        for tensor in tensors:
            if tensor_elements(tensor) > SMALL_TENSOR or tensor.data_location == onnx.TensorProto.EXTERNAL:
                for name in (
                    "raw_data",
                    "float_data",
                    "int32_data",
                    "int64_data",
                    "double_data",
                    "uint64_data",
                    "string_data",
                    "external_data",
                ):
                    tensor.ClearField(name)
                tensor.data_location = onnx.TensorProto.DEFAULT
    try:
        text = onnx.printer.to_text(light)
    except Exception as exc:
        return f"# the text form could not be printed: {exc}"
    text = text.replace("=  {}", "= {…}")
    return re.sub(r"(\w) \{\}(?=[>,\s])", r"\1 {…}", text)


def _shape_coverage(model: Any) -> tuple[int, int, str]:
    """How many intermediate tensors of the main graph get a known shape from ONNX shape inference."""
    import onnx

    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception as exc:
        return 0, 0, f"shape inference failed: {str(exc).strip().splitlines()[0][:300]}"
    known_values = {v.name: v for v in list(inferred.graph.value_info) + list(inferred.graph.output)}
    outputs = [o for node in model.graph.node for o in node.output if o]
    known = 0
    for name in outputs:
        value = known_values.get(name)
        if value is not None and value.type.HasField("tensor_type") and value.type.tensor_type.HasField("shape"):
            known += 1
    return known, len(outputs), ""


def decode_model(
    path: str, progress: Callable[[float, str], None] | None = None, with_text: bool = True
) -> DecodedModel:
    """Decode the ONNX file at ``path`` without loading its external data. Runs in the worker."""
    import onnx

    report = progress or (lambda fraction, message: None)
    file = Path(path)
    size = file.stat().st_size
    with file.open("rb") as fh:
        head = fh.read(4096)
    decoded = DecodedModel(str(file), size, head[:HEADER_BYTES].hex(" "), top_level_fields(file))
    report(0.1, "Parsing the protobuf (external weights are not loaded)")
    try:
        model = onnx.load_model(str(file), load_external_data=False)
    except Exception as exc:
        decoded.problems.append(
            f"The file could not be parsed as a ModelProto ({type(exc).__name__}); only its first fields are "
            "shown. It may be truncated or not an ONNX file."
        )
        return decoded

    decoded.ir_version = int(model.ir_version) if model.HasField("ir_version") else None
    decoded.producer_name, decoded.producer_version = model.producer_name, model.producer_version
    decoded.domain, decoded.doc_string = model.domain, model.doc_string
    decoded.model_version = int(model.model_version) if model.HasField("model_version") else None
    decoded.opsets = {op.domain or "ai.onnx": int(op.version) for op in model.opset_import}
    decoded.metadata = {p.key: p.value for p in model.metadata_props}
    if decoded.ir_version and decoded.ir_version > onnx.IR_VERSION:
        decoded.problems.append(
            f"IR version {decoded.ir_version} is newer than this onnx library knows ({onnx.IR_VERSION}); fields "
            "added since may be missing below."
        )
    known_domains = {"ai.onnx", "ai.onnx.ml", "ai.onnx.training", "ai.onnx.preview.training", "com.microsoft"}
    local = {f.domain for f in model.functions}
    for domain, version in decoded.opsets.items():
        if domain == "ai.onnx" and version > onnx.defs.onnx_opset_version():
            decoded.problems.append(
                f"Opset {version} is newer than this onnx library knows ({onnx.defs.onnx_opset_version()}); "
                "operators are listed but cannot be checked."
            )
        elif domain not in known_domains and domain not in local:
            decoded.problems.append(f"Operator domain '{domain}' is not a standard one: its ops are custom.")
    if not model.HasField("graph"):
        decoded.problems.append("The model has no graph: there is nothing to run.")
        return decoded

    report(0.3, "Walking the graph and its subgraphs")
    graph = model.graph
    decoded.graph_name = graph.name
    initializer_names = {t.name for t in graph.initializer}
    decoded.inputs = value_specs(graph.input, skip=initializer_names)
    decoded.outputs = value_specs(graph.output)
    decoded.node_count = len(graph.node)
    decoded.op_counts = dict(Counter(n.op_type for n in graph.node).most_common())
    decoded.value_info_count = len(graph.value_info)
    external: set[str] = set()
    element_counts: dict[str, int] = {}
    graph_protos: dict[str, Any] = {}
    for g, g_path, depth, owner, attribute in _walk(graph, "main", 0):
        graph_protos[g_path] = g
        if owner is not None:
            decoded.subgraphs.append(SubgraphInfo(g_path, owner.name, owner.op_type, attribute, len(g.node), depth))
        for tensor in g.initializer:
            entries = external_entries(tensor)
            storage = "inline"
            if tensor.data_location == onnx.TensorProto.EXTERNAL:
                location = entries.get("location", "?")
                external.add(location)
                storage = f"external: {location} @ {entries.get('offset', '0')}"
            elements = tensor_elements(tensor)
            element_counts[tensor.name] = elements
            decoded.initializers.append(
                TensorInfo(
                    tensor.name,
                    _dtype(tensor.data_type),
                    [int(d) for d in tensor.dims],
                    elements,
                    tensor_nbytes(tensor),
                    storage,
                    g_path,
                )
            )
        producers_of_constants: dict[str, tuple[int, int]] = {}
        for index, node in enumerate(g.node):
            attributes: dict[str, str] = {}
            subgraph_names: list[str] = []
            for attr in node.attribute:
                text, subs = _attr_text(attr)
                attributes[attr.name] = text
                subgraph_names += [s.name for s in subs]
                if node.op_type == "Constant" and attr.type == onnx.AttributeProto.TENSOR:
                    elements = tensor_elements(attr.t)
                    decoded.initializers.append(
                        TensorInfo(
                            node.output[0],
                            _dtype(attr.t.data_type),
                            [int(d) for d in attr.t.dims],
                            elements,
                            tensor_nbytes(attr.t),
                            "constant node",
                            g_path,
                        )
                    )
                    if attr.t.data_type not in (onnx.TensorProto.INT64, onnx.TensorProto.INT32):
                        producers_of_constants[node.output[0]] = (elements, tensor_nbytes(attr.t))
            decoded.nodes.append(_node_info(node, index, g_path, attributes, subgraph_names))
        # weights per layer: each weight tensor goes to the first node that computes with it; Identity
        # nodes (which the legacy exporter puts in front of shared weights) pass it on, they do not own it
        sizes = {
            t.name: (element_counts.get(t.name, 0), tensor_nbytes(t))
            for t in g.initializer
            if t.data_type not in (onnx.TensorProto.INT64, onnx.TensorProto.INT32)
        }
        sizes.update(producers_of_constants)
        claimed: set[str] = set()
        for node in g.node:
            if node.op_type == "Identity" and node.input and node.input[0] in sizes:
                sizes[node.output[0]] = sizes[node.input[0]]
                claimed.add(node.output[0])  # an alias: counted where the original is used
        for index, node in enumerate(g.node):
            if node.op_type in ("Constant", "Identity"):
                continue
            held = []
            for name in node.input:
                if name in sizes and sizes[name][0] > 1 and name not in claimed:
                    held.append(name)
                    claimed.add(name)
            if held:
                decoded.layers.append(
                    LayerWeight(
                        node.name or f"{node.op_type}_{index}",
                        node.op_type,
                        g_path,
                        sum(sizes[n][0] for n in held),
                        sum(sizes[n][1] for n in held),
                        held,
                    )
                )
    decoded.initializer_count = sum(1 for t in decoded.initializers if t.storage != "constant node")
    decoded.initializer_bytes = sum(t.bytes for t in decoded.initializers)
    decoded.parameter_count = sum(t.elements for t in decoded.initializers if t.is_weight)
    decoded.external_files = sorted(external)
    for function in model.functions:
        decoded.functions.append(
            FunctionInfo(
                function.domain,
                function.name,
                list(function.input),
                list(function.output),
                len(function.node),
                dict(Counter(n.op_type for n in function.node)),
            )
        )
        for index, node in enumerate(function.node):
            attributes = {a.name: _attr_text(a)[0] for a in node.attribute}
            decoded.nodes.append(_node_info(node, index, f"function {function.domain}.{function.name}", attributes))
    decoded.total_node_count = len(decoded.nodes)

    report(0.55, "Laying out the graph for drawing")
    weights = {t.name: t.elements for t in decoded.initializers}
    graphs = {"main": graph} | {
        s.path: g
        for (g, s) in zip(
            [g for g, _, _, owner, _ in _walk(graph, "main", 0) if owner is not None], decoded.subgraphs, strict=False
        )
    }
    for g_path, g in graphs.items():
        if len(g.node) <= MAX_LAYOUT_NODES:
            decoded.layouts[g_path] = layout_graph(g, g_path, weights)
        else:
            decoded.problems.append(
                f"The graph '{g_path}' has {len(g.node):,} nodes, too many to draw ({MAX_LAYOUT_NODES:,} at most); "
                "the node table lists them all."
            )
    if decoded.layouts.get("main") and decoded.layouts["main"].has_cycle:
        decoded.problems.append("The main graph has a cycle: ONNX graphs must be acyclic, so no runtime will run it.")

    report(0.7, "Running the checker and shape inference")
    try:
        onnx.checker.check_model(str(file))  # by path, so external-data locations resolve without loading
        decoded.checker_ok, decoded.checker_message = True, "onnx.checker finds no problem."
    except Exception as exc:
        decoded.checker_ok = False
        decoded.checker_message = str(exc).strip().splitlines()[0][:500] if str(exc).strip() else type(exc).__name__
    decoded.shapes_known, decoded.shapes_total, shape_problem = _shape_coverage(model)
    if shape_problem:
        decoded.problems.append(shape_problem)
    if with_text:
        report(0.9, "Printing the text form")
        decoded.text = _text_form(model)
    return decoded


def summary(decoded: DecodedModel) -> dict[str, Any]:
    """The fields ``python -m core inspect`` promises, in a flat JSON object."""
    return {
        "ir_version": decoded.ir_version,
        "producer_name": decoded.producer_name,
        "producer_version": decoded.producer_version,
        "opsets": decoded.opsets,
        "inputs": [dataclasses.asdict(s) for s in decoded.inputs],
        "outputs": [dataclasses.asdict(s) for s in decoded.outputs],
        "node_count": decoded.node_count,
        "total_node_count": decoded.total_node_count,
        "op_counts": decoded.op_counts,
        "initializer_count": decoded.initializer_count,
        "parameter_count": decoded.parameter_count,
        "initializer_bytes": decoded.initializer_bytes,
        "subgraph_count": decoded.subgraph_count,
        "function_count": len(decoded.functions),
        "external_files": decoded.external_files,
        "metadata": decoded.metadata,
        "checker_ok": decoded.checker_ok,
        "shape_inference": {"known": decoded.shapes_known, "total": decoded.shapes_total},
        "header_fields": [dataclasses.asdict(h) for h in decoded.header],
        "problems": decoded.problems,
    }
