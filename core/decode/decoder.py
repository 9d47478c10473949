"""Take an ONNX file apart: the first bytes field by field, the ModelProto tree, nodes, weights, text form.

``decode_model`` is the worker job behind the Decode page and ``python -m core inspect``. It never loads
external weights (memory grows with the graph, not the weights) and decodes whatever it can of a damaged
file, listing what it could not read in ``problems``.
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.decode import sentences as say
from core.decode.header import HEADER_BYTES, top_level_fields
from core.decode.layers import layer_groups
from core.decode.records import (
    DecodedModel,
    DecodeRequest,
    FunctionInfo,
    HeaderField,
    LayerWeight,
    NodeInfo,
    SubgraphInfo,
    TensorInfo,
)
from core.decode.text import shape_coverage, text_form
from core.i18n import _
from core.model.counts import check_counts
from core.model.onnx_file import check_external_data
from core.model.proto import (
    NOT_WEIGHT_TYPES,
    GraphVisit,
    domain_use,
    dtype_name,
    external_entries,
    itemsize,
    non_utf8_text,
    parameter_count,
    tensor_elements,
    value_specs,
    walk_graphs,
)
from core.model.topology import has_cycle
from core.notes import Note, note, warning
from core.settings import IntakeLimits
from core.tables import write_rows

if TYPE_CHECKING:
    import onnx

__all__ = ["decode_model", "summary"]

_INLINE, _CONSTANT_NODE = note(say.INLINE), note(say.CONSTANT_NODE)  # one each, shared by every tensor
_KNOWN_DOMAINS = {"ai.onnx", "ai.onnx.ml", "ai.onnx.training", "ai.onnx.preview.training", "com.microsoft"}


def _attr_text(attr: onnx.AttributeProto) -> tuple[str, list[Any]]:
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
        return f"tensor {dtype_name(t.data_type)} {list(t.dims)}", []
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


def _node_info(node: onnx.NodeProto, index: int, graph: str) -> NodeInfo:
    attributes: dict[str, str] = {}
    subgraphs: list[str] = []
    for attr in node.attribute:
        text, subs = _attr_text(attr)
        attributes[attr.name] = text
        subgraphs += [s.name for s in subs]
    return NodeInfo(
        index=index,
        graph=graph,
        name=node.name,
        op_type=node.op_type,
        domain=node.domain or "ai.onnx",
        inputs=list(node.input),
        outputs=list(node.output),
        attributes=attributes,
        subgraphs=subgraphs,
    )


def _tensor_info(name: str, tensor: onnx.TensorProto, storage: Note, graph: str) -> TensorInfo:
    elements, data_type = tensor_elements(tensor), tensor.data_type
    return TensorInfo(
        name=name,
        dtype=dtype_name(data_type),
        shape=list(tensor.dims),
        elements=elements,
        bytes=elements * itemsize(data_type),
        storage=storage,
        graph=graph,
    )


def _model_fields(decoded: DecodedModel, model: onnx.ModelProto) -> None:
    """The ModelProto's own fields, and what this onnx library cannot check in them."""
    import onnx

    decoded.ir_version = int(model.ir_version) if model.HasField("ir_version") else None
    decoded.producer_name, decoded.producer_version = model.producer_name, model.producer_version
    decoded.domain, decoded.doc_string = model.domain, model.doc_string
    decoded.model_version = int(model.model_version) if model.HasField("model_version") else None
    decoded.opsets = {op.domain or "ai.onnx": int(op.version) for op in model.opset_import}
    decoded.metadata = {p.key: p.value for p in model.metadata_props}
    if decoded.ir_version and decoded.ir_version > onnx.IR_VERSION:
        decoded.problems.append(warning(say.NEWER_IR, version=decoded.ir_version, known=onnx.IR_VERSION))
    version = decoded.opsets.get("ai.onnx", 0)
    if version > onnx.defs.onnx_opset_version():
        decoded.problems.append(warning(say.NEWER_OPSET, version=version, known=onnx.defs.onnx_opset_version()))


def _custom_domains(decoded: DecodedModel, model: onnx.ModelProto) -> None:
    """Each operator domain the model declares beyond the standard ones: custom ops when a node uses it and it is
    neither ONNX Runtime's nor the model's own functions', nothing at all when none does (exporters declare domains
    they end up not using); the same domains the Model card names (core.model.proto.domain_use)."""
    local = {f.domain for f in model.functions}
    in_use, unused = domain_use(model)
    for domain in in_use:
        if domain not in _KNOWN_DOMAINS and domain not in local:
            decoded.problems.append(warning(say.CUSTOM_DOMAIN, domain=domain))
    quoted = [f"'{domain}'" for domain in unused]
    if len(quoted) == 1:
        decoded.problems.append(warning(say.UNUSED_DOMAIN, domain=quoted[0]))
    elif quoted:  # one sentence for all of them (a quantizer's export declares half a dozen)
        decoded.problems.append(warning(say.UNUSED_DOMAINS, domains=", ".join(quoted)))


def _graph_tensors(decoded: DecodedModel, visit: GraphVisit, external: set[str]) -> None:
    """Initializers (inline or external) and Constant-node values of one graph."""
    import onnx

    external_location = onnx.TensorProto.EXTERNAL
    for tensor in visit.graph.initializer:
        storage = _INLINE
        if tensor.data_location == external_location:
            entries = external_entries(tensor)
            external.add(entries.get("location", "?"))
            storage = note(say.EXTERNAL, file=entries.get("location", "?"), offset=entries.get("offset", "0"))
        decoded.initializers.append(_tensor_info(tensor.name, tensor, storage, visit.path))
    for node in visit.graph.node:
        if node.op_type != "Constant" or not node.output:
            continue
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.TENSOR:
                decoded.initializers.append(_tensor_info(node.output[0], attr.t, _CONSTANT_NODE, visit.path))


def _layer_weights(visit: GraphVisit) -> list[LayerWeight]:
    """Weights per layer: each weight tensor goes to the first node that computes with it. Identity nodes
    (which the legacy exporter puts in front of shared weights) pass it on; they do not own it."""
    import onnx

    graph = visit.graph
    used = {name for node in graph.node for name in node.input}
    sizes: dict[str, tuple[int, int]] = {}
    for t in graph.initializer:  # only the tensors a node reads: a million unused ones cost nothing here
        if t.name in used and t.data_type not in NOT_WEIGHT_TYPES:
            elements = tensor_elements(t)
            sizes[t.name] = (elements, elements * itemsize(t.data_type))
    for node in graph.node:
        if node.op_type != "Constant" or not node.output or node.output[0] not in used:
            continue
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.TENSOR and attr.t.data_type not in NOT_WEIGHT_TYPES:
                elements = tensor_elements(attr.t)
                sizes[node.output[0]] = (elements, elements * itemsize(attr.t.data_type))
    claimed: set[str] = set()
    for node in graph.node:
        if node.op_type == "Identity" and node.input and node.input[0] in sizes:
            sizes[node.output[0]] = sizes[node.input[0]]
            claimed.add(node.output[0])  # an alias: counted where the original is used
    layers = []
    for index, node in enumerate(graph.node):
        if node.op_type in ("Constant", "Identity"):
            continue
        held = [
            name for name in dict.fromkeys(node.input) if name in sizes and sizes[name][0] > 1 and name not in claimed
        ]
        claimed.update(held)
        if held:
            layers.append(
                LayerWeight(
                    node=node.name or f"{node.op_type}_{index}",
                    op_type=node.op_type,
                    graph=visit.path,
                    parameters=sum(sizes[n][0] for n in held),
                    bytes=sum(sizes[n][1] for n in held),
                    tensors=held,
                )
            )
    return layers


def _walk(decoded: DecodedModel, model: onnx.ModelProto) -> list[GraphVisit]:
    """Every graph at any depth: its subgraph entry, tensors, nodes and weights per layer; then functions."""
    external: set[str] = set()
    visits = list(walk_graphs(model))
    for visit in visits:
        if visit.owner is not None:
            owner = visit.owner
            decoded.subgraphs.append(
                SubgraphInfo(
                    path=visit.path,
                    owner=owner.name,
                    owner_op=owner.op_type,
                    attribute=visit.attribute,
                    node_count=len(visit.graph.node),
                    depth=visit.depth,
                )
            )
        _graph_tensors(decoded, visit, external)
        decoded.nodes.extend(_node_info(node, index, visit.path) for index, node in enumerate(visit.graph.node))
        weights = _layer_weights(visit)
        decoded.layers.extend(weights)
        if visit.owner is None and visit.depth == 0 and not decoded.layer_groups:  # the main graph
            decoded.layer_groups = layer_groups(visit.graph, weights)
    decoded.initializer_count = sum(1 for t in decoded.initializers if t.storage.key != say.CONSTANT_NODE)
    decoded.initializer_bytes = sum(t.bytes for t in decoded.initializers)
    decoded.parameter_count = parameter_count(model)  # as the Model page counts them
    decoded.external_files = sorted(external)
    for function in model.functions:
        ops = dict(Counter(n.op_type for n in function.node))
        decoded.functions.append(
            FunctionInfo(
                domain=function.domain,
                name=function.name,
                inputs=list(function.input),
                outputs=list(function.output),
                node_count=len(function.node),
                op_counts=ops,
            )
        )
        where = f"function {function.domain}.{function.name}"
        decoded.nodes.extend(_node_info(node, index, where) for index, node in enumerate(function.node))
    decoded.total_node_count = len(decoded.nodes)
    return visits


def _cycles(decoded: DecodedModel, visits: list[GraphVisit]) -> None:
    main = next((visit.graph for visit in visits if visit.path == "main"), None)
    if main is not None and has_cycle(main):
        decoded.problems.append(warning(say.CYCLE))


def _check_model(file: Path, model: onnx.ModelProto) -> None:
    """onnx's checker on ``file``, by path, so external-data locations resolve without loading. onnx refuses a data
    file with a second hard link as a possible attack, and the app links an upload into its workspace and into the
    worker's folder rather than copy it: such a model is checked again beside stand-ins of its data files (sparse
    files of their sizes, nothing written), once the app's own check has found each location safe."""
    import onnx

    try:
        onnx.checker.check_model(str(file))
    except onnx.checker.ValidationError as exc:
        if "hard link" not in str(exc):
            raise
        data_files = check_external_data(model, file.parent)
        with tempfile.TemporaryDirectory() as stand_in:
            shutil.copyfile(file, Path(stand_in) / file.name)
            for data in data_files:
                shadow = Path(stand_in) / data.relative_to(file.parent)
                shadow.parent.mkdir(parents=True, exist_ok=True)
                with shadow.open("wb") as out:
                    out.truncate(data.stat().st_size)
            onnx.checker.check_model(str(Path(stand_in) / file.name))


def _checks(decoded: DecodedModel, file: Path, model: onnx.ModelProto) -> None:
    try:
        _check_model(file, model)
        decoded.checker_ok, decoded.checker_message = True, note(say.CHECKER_OK)
    except Exception as exc:
        decoded.checker_ok = False
        said = str(exc).strip().splitlines()[0][:500] if str(exc).strip() else type(exc).__name__
        decoded.checker_message = Note.kept(said, "warning")  # onnx's own words
    decoded.shapes_known, decoded.shapes_total, shape_problem = shape_coverage(model)
    if shape_problem is not None:
        decoded.problems.append(shape_problem)


def _silent(fraction: float, message: str) -> None:
    """Progress goes nowhere when nobody watches."""


def decode_model(
    request: DecodeRequest,
    progress: Callable[[float, str], None] | None = None,
    limits: IntakeLimits | None = None,
) -> DecodedModel:
    """Decode the model the request names. Runs in the worker. A model past ``limits`` (the server's, as a job)
    in any count is refused before anything is done per item."""
    import onnx

    report = progress or _silent
    with_text, out_dir, header_only = request.with_text, request.out_dir, request.header_only
    file = Path(request.path)
    with file.open("rb") as fh:
        head = fh.read(HEADER_BYTES)
    decoded = DecodedModel(
        path=str(file), size_bytes=file.stat().st_size, header_hex=head.hex(" "), header=top_level_fields(file)
    )
    if header_only:
        return decoded
    report(0.1, _("Parsing the protobuf (external weights are not loaded)"))
    try:
        model = onnx.load_model(str(file), load_external_data=False)
    except Exception as exc:
        decoded.problems.append(warning(say.NOT_PARSED, error=type(exc).__name__))
        return decoded
    check_counts(model, file.name, limits or IntakeLimits())
    repaired = non_utf8_text(model, repair=True)
    if repaired:
        decoded.problems.append(warning(say.NOT_UTF8, count=len(repaired), first=repaired[0]))
    _model_fields(decoded, model)
    if not model.HasField("graph"):
        decoded.problems.append(warning(say.NO_GRAPH))
        return decoded

    report(0.3, _("Walking the graph and its subgraphs"))
    graph = model.graph
    decoded.graph_name = graph.name
    decoded.inputs = value_specs(graph.input, skip={t.name for t in graph.initializer})
    decoded.outputs = value_specs(graph.output)
    decoded.node_count = len(graph.node)
    decoded.op_counts = dict(Counter(n.op_type for n in graph.node).most_common())
    decoded.value_info_count = len(graph.value_info)
    visits = _walk(decoded, model)
    _custom_domains(decoded, model)
    report(0.55, _("Laying out the graph for drawing"))
    _cycles(decoded, visits)
    report(0.7, _("Running the checker and shape inference"))
    _checks(decoded, file, model)
    if with_text:
        report(0.9, _("Printing the text form"))
        decoded.text = text_form(model)
    decoded.op_types = sorted({n.op_type for n in decoded.nodes})
    if out_dir:
        decoded.node_rows = write_rows(Path(out_dir) / "nodes.rows", decoded.nodes)
        decoded.nodes = []
    return decoded


def _english(value: str | Note) -> str:
    return value if isinstance(value, str) else value.english()


def _header_json(field: HeaderField) -> dict[str, Any]:
    return {**dataclasses.asdict(field), "value": _english(field.value), "explanation": field.explanation.english()}


def summary(decoded: DecodedModel) -> dict[str, Any]:
    """The fields ``python -m core inspect`` promises, in a flat JSON object (its sentences in English)."""
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
        "header_fields": [_header_json(h) for h in decoded.header],
        "problems": [p.english() for p in decoded.problems],
    }
