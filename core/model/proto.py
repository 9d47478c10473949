"""Helpers over ONNX protobufs shared by every feature: dtype names, value types, tensors, one graph walker.

Nothing here opens a file; callers hand in protos they loaded (always with ``load_external_data=False``).
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from core.model.records import TensorSpec, format_shape

if TYPE_CHECKING:
    import onnx

__all__ = [
    "FLOAT_TYPES",
    "NOT_WEIGHT_TYPES",
    "constants_to_initializers",
    "GraphVisit",
    "attribute_subgraphs",
    "domain_use",
    "dtype_name",
    "external_entries",
    "iter_tensors",
    "module_of",
    "onnx_type",
    "parameter_count",
    "tensor_elements",
    "tensor_nbytes",
    "type_spec",
    "type_text",
    "value_specs",
    "index_tables",
    "itemsize",
    "walk_graphs",
]

NOT_WEIGHT_TYPES = (6, 7)  # INT32, INT64: shapes, axes and indices, not learned weights
FLOAT_TYPES = {1, 10, 11, 16}  # FLOAT, FLOAT16, DOUBLE, BFLOAT16: the weights Quantize converts
_SMALL_FLOAT_TYPES = range(16, 27)  # bf16 and the 8-, 4- and 2-bit types: at least a byte each when counted


@functools.cache
def dtype_name(elem_type: int) -> str:
    """numpy's name for an ONNX element type ('float32', 'int64', 'string'), or ONNX's own when numpy has none.
    Cached: a model asks it once per tensor, a million times in a crafted one."""
    import onnx
    from onnx import helper

    if elem_type == onnx.TensorProto.STRING:
        return "string"  # numpy holds strings as objects; the model's type is a string
    try:
        return str(helper.tensor_dtype_to_np_dtype(elem_type).name).replace("str", "string")
    except Exception:
        try:
            return onnx.TensorProto.DataType.Name(elem_type).lower()
        except ValueError:
            return f"unknown type {elem_type}"


def type_spec(type_proto: onnx.TypeProto) -> tuple[str, list[int | str] | None]:
    """(dtype, shape) of a value's type; dims are ints, symbolic names, or "?" when unnamed."""
    kind = type_proto.WhichOneof("value")
    if kind in ("tensor_type", "sparse_tensor_type"):
        tensor = getattr(type_proto, kind)
        dtype = dtype_name(tensor.elem_type)
        if not tensor.HasField("shape"):
            return dtype, None
        shape: list[int | str] = []
        for dim in tensor.shape.dim:
            if dim.HasField("dim_value") and dim.dim_value < 0:
                shape.append("-1")  # written by some converters for "any size": a dynamic dim
            elif dim.HasField("dim_value"):
                shape.append(int(dim.dim_value))
            else:
                shape.append(dim.dim_param or "?")
        return dtype, shape
    if kind == "sequence_type":
        inner, _ = type_spec(type_proto.sequence_type.elem_type)
        return f"sequence<{inner}>", None
    if kind == "optional_type":
        inner, inner_shape = type_spec(type_proto.optional_type.elem_type)
        return f"optional<{inner}>", inner_shape
    if kind == "map_type":
        value, _ = type_spec(type_proto.map_type.value_type)
        return f"map<{dtype_name(type_proto.map_type.key_type)}, {value}>", None
    return "unknown", None


def onnx_type(dtype: str) -> str:
    """A dtype as ONNX names the type: tensor(string), tensor(float), seq(tensor(float)), map(int64, ...) (from
    numpy's names, as records and plans keep them)."""
    for head, onnx_head in (("sequence<", "seq("), ("optional<", "optional(")):
        if dtype.startswith(head) and dtype.endswith(">"):
            return onnx_head + onnx_type(dtype[len(head) : -1]) + ")"
    if dtype.startswith("map<") and dtype.endswith(">"):
        return f"map({dtype[4:-1]})"
    return f"tensor({_ONNX_NAMES.get(dtype, dtype)})"


_ONNX_NAMES = {"str": "string", "object": "string", "float32": "float", "float64": "double"}


def type_text(type_proto: onnx.TypeProto) -> str:
    """'float32 [batch×3×224×224]', for showing one value's type."""
    dtype, shape = type_spec(type_proto)
    return f"{dtype} [{format_shape(shape)}]"


def value_specs(values: Any, skip: set[str] | frozenset[str] = frozenset()) -> list[TensorSpec]:
    """TensorSpecs of graph inputs or outputs; ``skip`` drops names (IR-3 initializers listed as inputs)."""
    specs = []
    for value in values:
        if value.name in skip:
            continue
        dtype, shape = type_spec(value.type)
        dynamic = {str(i): str(d) for i, d in enumerate(shape or []) if isinstance(d, str)}
        specs.append(TensorSpec(name=value.name, dtype=dtype, shape=shape, dynamic_axes=dynamic))
    return specs


_PASS_INDICES = {"Cast", "Reshape", "Unsqueeze", "Squeeze", "Flatten", "Identity", "Clip"}


def index_tables(graph: onnx.GraphProto) -> dict[str, int]:
    """Graph inputs used as the indices of a Gather on a weight (an embedding table), directly or through
    ops that keep the values (Cast, Reshape…): input name -> the table's rows."""
    import onnx

    tables = {n.input[0] for n in graph.node if n.op_type == "Gather" and len(n.input) > 1}
    if not tables:
        return {}
    rows: dict[str, int] = {t.name: int(t.dims[0]) for t in graph.initializer if t.name in tables and t.dims}
    for node in graph.node:
        if node.op_type == "Constant" and node.output and node.output[0] in tables:
            value = next(
                (a.t for a in node.attribute if a.name == "value" and a.type == onnx.AttributeProto.TENSOR), None
            )
            if value is not None and value.dims:
                rows[node.output[0]] = int(value.dims[0])
    origin = {i.name: i.name for i in graph.input}  # tensor -> the graph input its values come from
    found: dict[str, int] = {}
    for node in graph.node:  # nodes are in topological order
        if node.op_type in _PASS_INDICES and node.input and node.input[0] in origin:
            for out in node.output:
                origin[out] = origin[node.input[0]]
        if node.op_type == "Gather" and len(node.input) > 1 and node.input[1] in origin and node.input[0] in rows:
            name = origin[node.input[1]]
            found[name] = max(found.get(name, 0), rows[node.input[0]])
    return found


def attribute_subgraphs(node: onnx.NodeProto) -> Iterator[tuple[str, onnx.GraphProto]]:
    """(label, graph) for every graph a node's attributes hold: "then_branch", or "branches[1]" in a list."""
    import onnx

    for attr in node.attribute:
        if attr.type == onnx.AttributeProto.GRAPH:
            yield attr.name, attr.g
        elif attr.type == onnx.AttributeProto.GRAPHS:
            for i, graph in enumerate(attr.graphs):
                yield (f"{attr.name}[{i}]" if len(attr.graphs) > 1 else attr.name), graph


@dataclass(frozen=True, kw_only=True)
class GraphVisit:
    """One graph met by ``walk_graphs``: where it sits, and which node attribute holds it."""

    graph: Any  # onnx.GraphProto
    path: str  # "main", "main / loop (Loop).body", "function custom.DoubleRelu"
    depth: int  # 0 for the main graph and function bodies
    owner: Any = None  # the NodeProto whose attribute holds this graph; None at the top
    attribute: str = ""
    is_function: bool = False


MAX_LABEL = 60  # a node's name in a graph path: every node of a subgraph repeats it


def _node_label(node: onnx.NodeProto, index: int) -> str:
    """How a subgraph's path names the node that holds it: its name, or, when that is long, the name's start and
    the node's position (a million-character name must not be copied into every path below it)."""
    name = node.name if isinstance(node.name, str) else ""
    if not name:
        return f"{node.op_type}_{index}"
    return name if len(name) <= MAX_LABEL else f"{name[:40]}… (node {index})"


def walk_graphs(model: onnx.ModelProto, *, functions: bool = False, root: str = "main") -> Iterator[GraphVisit]:
    """The main graph and every If/Loop/Scan subgraph at any depth, in file order (pre-order), then, with
    ``functions``, each local function's body and its subgraphs. ``model`` is a ModelProto or a GraphProto.
    Iterative, so a deeply nested model cannot exhaust the stack."""
    import onnx

    tops: list[GraphVisit] = []
    if isinstance(model, onnx.ModelProto):
        tops.append(GraphVisit(graph=model.graph, path=root, depth=0))
        if functions:
            for function in model.functions:
                body = onnx.helper.make_graph(list(function.node), function.name, [], [])
                tops.append(
                    GraphVisit(
                        graph=body, path=f"function {function.domain}.{function.name}", depth=0, is_function=True
                    )
                )
    else:
        tops.append(GraphVisit(graph=model, path=root, depth=0))
    stack = list(reversed(tops))
    while stack:
        visit = stack.pop()
        yield visit
        children = []
        for index, node in enumerate(visit.graph.node):
            who = _node_label(node, index)
            for label, sub in attribute_subgraphs(node):
                path = f"{visit.path} / {who} ({node.op_type}).{label}"
                children.append(
                    GraphVisit(
                        graph=sub,
                        path=path,
                        depth=visit.depth + 1,
                        owner=node,
                        attribute=label,
                        is_function=visit.is_function,
                    )
                )
        stack.extend(reversed(children))


def iter_tensors(model: onnx.ModelProto) -> Iterator[tuple[str, onnx.TensorProto]]:
    """Every tensor a model holds with where it lives: initializers, sparse initializers, Constant node values
    ("constant"), and the tensors other nodes hold in attributes ("attribute", e.g. ConstantOfShape's fill value)."""
    import onnx

    for visit in walk_graphs(model, functions=True):
        graph = visit.graph
        for tensor in graph.initializer:
            yield "initializer", tensor
        for sparse in graph.sparse_initializer:
            yield "sparse initializer", sparse.values
            yield "sparse initializer's indices", sparse.indices
        for node in graph.node:
            held = "constant" if node.op_type == "Constant" else "attribute"
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.TENSOR:
                    yield held, attr.t
                elif attr.type == onnx.AttributeProto.SPARSE_TENSOR:
                    yield held, attr.sparse_tensor.values
                    yield f"{held}'s indices", attr.sparse_tensor.indices


_WEIGHT_PLACES = ("initializer", "sparse initializer", "constant")


def parameter_count(model: onnx.ModelProto) -> int:
    """The model's parameters, as the Model and Decode pages both count them: the elements of every initializer,
    sparse initializer and Constant node value, in every graph and function. Integer tensors (shapes, axes,
    indices) are not learned weights, nor are other nodes' attribute tensors (ConstantOfShape's fill value)."""
    return sum(
        tensor_elements(tensor)
        for where, tensor in iter_tensors(model)
        if where in _WEIGHT_PLACES and tensor.data_type not in NOT_WEIGHT_TYPES
    )


MAX_ELEMENTS = 1 << 64  # past this a tensor's element count stops growing: dims of 2 repeated a million times
# would otherwise make a million-bit number, one slow multiplication at a time


def tensor_elements(tensor: onnx.TensorProto) -> int:
    """How many elements a tensor's dims promise (negative dims count as 0), at most MAX_ELEMENTS."""
    count = 1
    for d in tensor.dims:
        if d <= 0:
            return 0
        count *= d
        if count > MAX_ELEMENTS:
            return 0 if any(d <= 0 for d in tensor.dims) else MAX_ELEMENTS
    return count


@functools.cache
def itemsize(data_type: int) -> int:
    """Bytes per element of an ONNX element type (strings and unknown types 0; the sub-byte types count as 1)."""
    from onnx import helper

    try:
        size = int(helper.tensor_dtype_to_np_dtype(data_type).itemsize)
    except Exception:
        size = 0
    return max(size, 1) if data_type in _SMALL_FLOAT_TYPES else size


def tensor_nbytes(tensor: onnx.TensorProto) -> int:
    """The bytes a tensor's dims and dtype promise (strings count as 0)."""
    return tensor_elements(tensor) * itemsize(tensor.data_type)


def external_entries(tensor: onnx.TensorProto) -> dict[str, str]:
    """A tensor's external-data entries (location, offset, length, checksum) as a dict."""
    return {entry.key: entry.value for entry in tensor.external_data}


def _string_holders(model: onnx.ModelProto) -> Iterator[tuple[Any, str, str, object]]:
    """(message, field, where, detail) for every string field a page shows: names, op types, domains, doc strings,
    metadata, at any depth and in local functions. Repeated fields are given by name too. ``where`` is a
    template that ``detail`` fills, only for the few fields found wrong (a million f-strings cost seconds)."""
    yield from ((model, f, "the model's {}", f) for f in ("producer_name", "producer_version", "domain", "doc_string"))
    for prop in model.metadata_props:
        yield from ((prop, f, "metadata {}", f) for f in ("key", "value"))
    for function in model.functions:
        yield from ((function, f, "a local function's {}", f) for f in ("name", "domain", "input", "output"))
    for visit in walk_graphs(model, functions=True):
        graph = visit.graph
        yield graph, "name", "the name of graph {}", visit.path
        for values in (graph.input, graph.output, graph.value_info, graph.initializer):
            for value in values:
                yield value, "name", "a value name in {}", visit.path
        for index, node in enumerate(graph.node):
            for name in ("name", "op_type", "domain", "input", "output", "doc_string"):
                yield node, name, "the {0[0]} of node {0[1]} in {0[2]}", (name, index, visit.path)


def non_utf8_text(model: onnx.ModelProto, repair: bool = False) -> list[str]:
    """Where the model holds text that is not UTF-8 (protobuf hands it over as bytes); with ``repair``, each
    such text is replaced by its readable part (invalid bytes become U+FFFD) so it can be shown."""
    found: list[str] = []
    for message, name, where, detail in _string_holders(model):
        value = getattr(message, name)
        if type(value) is str or not (
            isinstance(value, bytes) or (not isinstance(value, str) and any(isinstance(v, bytes) for v in value))
        ):
            continue
        found.append(where.format(detail))
        if not repair:
            continue
        if isinstance(value, bytes):
            setattr(message, name, value.decode("utf-8", errors="replace"))
        else:
            fixed = [v.decode("utf-8", errors="replace") if isinstance(v, bytes) else v for v in value]
            del value[:]
            value.extend(fixed)
    return found


def expanded_node_count(model: onnx.ModelProto) -> int:
    """How many nodes the model has once every call of a local function is replaced by the function's body, as
    ONNX Runtime inlines them: 8 nested functions called 10 times each are 10⁸ nodes in a 2 kB file. A function
    that calls itself, directly or not, counts as unbounded (-1)."""
    bodies = {(f.domain, f.name): f for f in model.functions}
    sizes: dict[tuple[str, str], int] = {}

    def nodes_of(graph_nodes: Any) -> list[Any]:
        found = list(graph_nodes)
        for node in graph_nodes:
            for _, sub in attribute_subgraphs(node):
                found += [n for visit in walk_graphs(sub) for n in visit.graph.node]
        return found

    def size(key: tuple[str, str], calling: tuple[tuple[str, str], ...]) -> int:
        if key in calling:
            return -1
        if key not in sizes:
            total = 0
            for node in nodes_of(bodies[key].node):
                inner = (node.domain, node.op_type)
                cost = size(inner, (*calling, key)) if inner in bodies else 1
                if cost < 0:
                    return -1
                total += cost
            sizes[key] = total
        return sizes[key]

    total = 0
    for visit in walk_graphs(model):
        for node in visit.graph.node:
            key = (node.domain, node.op_type)
            cost = size(key, ()) if key in bodies else 1
            if cost < 0:
                return -1
            total += cost
    return total


def domain_use(model: onnx.ModelProto) -> tuple[list[str], list[str]]:
    """The operator domains ``model`` declares beyond the standard ones (ai.onnx, ai.onnx.ml), as (those a node
    uses, in a graph, a subgraph or a local function; those only declared), each sorted: what the Model card and
    Decode both say of them."""
    declared = sorted({o.domain or "ai.onnx" for o in model.opset_import} - {"ai.onnx", "ai.onnx.ml"})
    used = {node.domain or "ai.onnx" for visit in walk_graphs(model, functions=True) for node in visit.graph.node}
    return [d for d in declared if d in used], [d for d in declared if d not in used]


def module_of(node: onnx.NodeProto) -> str:
    """The PyTorch module an ONNX node came from ("" when the exporter did not say): torch's dynamo exporter writes
    ``pkg.torch.onnx.name_scopes`` (['', 'block', 'block.conv', 'conv2d']: the module is the last but one), the
    legacy exporter names nodes after the scope ("/layer1/conv/Conv")."""
    for prop in node.metadata_props:
        if prop.key == "pkg.torch.onnx.name_scopes":
            try:
                scopes = ast.literal_eval(prop.value)
            except (ValueError, SyntaxError):
                return ""
            modules = [s for s in scopes[1:-1] if isinstance(s, str)]
            return modules[-1] if modules else ""
    if node.name.startswith("/"):
        return ".".join(part for part in node.name.strip("/").split("/")[:-1] if part)
    return ""


def constants_to_initializers(model: onnx.ModelProto) -> int:
    """Move the float tensors of the main graph's Constant nodes (more than one element) into initializers
    named after the node's output; returns how many moved. Quantize does it (ORT's quantizers quantize only
    initializers), and so does diff, so that a Paddle export and its variant hold their weights alike."""
    import onnx

    kept, moved = [], 0
    tensor_type = onnx.AttributeProto.TENSOR
    for node in model.graph.node:
        value = next((a.t for a in node.attribute if a.name == "value" and a.type == tensor_type), None)
        weight = value is not None and value.data_type in FLOAT_TYPES and tensor_elements(value) > 1
        if weight and node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
            tensor = onnx.TensorProto()
            tensor.CopyFrom(value)
            tensor.name = node.output[0]
            model.graph.initializer.append(tensor)
            moved += 1
            continue
        kept.append(node)
    if moved:
        del model.graph.node[:]
        model.graph.node.extend(kept)
    return moved
