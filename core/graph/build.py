"""Read an ONNX graph into a GraphView: nodes with their key attributes, weights and Constants folded into
their consumers, edges labelled with shapes, groups from scopes, subgraphs and local functions."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.errors import WorkbenchError
from core.graph.attributes import attributes_text, dtype_key
from core.graph.groups import GroupTable, finish_groups, scope_parts
from core.graph.records import Folded, GraphView, ViewEdge, ViewNode
from core.graph.weights import WeightBudget, weight_stats
from core.i18n import N_
from core.model.checks import SHAPES_FAILED
from core.model.onnx_file import check_external_data
from core.model.proto import attribute_subgraphs, dtype_name, tensor_elements, type_spec
from core.model.records import shape_dim
from core.notes import Note, note

if TYPE_CHECKING:
    import onnx

__all__ = ["MAX_DEPTH", "NO_STATS", "SHAPE_INFERENCE_LIMIT", "SKIPPED", "view_graph"]

# the view's notes (core.notes: the view keeps the template and its values, said where it is drawn)
SKIPPED = N_("shape inference skipped: {count} nodes (the limit is {limit})")
NO_STATS = N_("statistics left out for {count} weights (too many values to read)")

SHAPE_INFERENCE_LIMIT = 60_000  # nodes; above it ONNX shape inference is skipped (see benchmarks/graph_view.py)
_GRAPH_TYPES = (5, 10)  # AttributeProto.GRAPH, GRAPHS
MAX_DEPTH = 8  # subgraphs and function calls inside each other, drawn to this depth
_LEND_ELEMENTS = 1 << 14  # larger weights are kept out of shape inference (it needs their shapes only)


def _dims(dims: Any) -> str:
    return "×".join(shape_dim(d) for d in dims)


@dataclass(kw_only=True)
class _Scope:
    """The names one graph can see: tensor -> producing node, folded values, known types; then its parent's."""

    producers: dict[str, int] = field(default_factory=dict)
    folded: dict[str, Folded] = field(default_factory=dict)
    types: dict[str, str] = field(default_factory=dict)
    parent: _Scope | None = None
    weights: dict[str, Any] = field(default_factory=dict)  # initializers not folded yet: only those read are

    def find_folded(self, name: str, fold: Callable[[Any], Folded]) -> Folded | None:
        """The folded value ``name`` stands for here, an initializer folded (``fold``) when first read: a
        graph of a million initializers no node reads costs a dict of their names, not their statistics."""
        scope: _Scope | None = self
        while scope is not None:
            found = scope.folded.get(name)
            if found is None and name in scope.weights:
                found = scope.folded[name] = fold(scope.weights.pop(name))
            if found is not None:
                return found
            scope = scope.parent
        return None

    def find(self, table: str, name: str) -> Any:
        scope: _Scope | None = self
        while scope is not None:
            found = getattr(scope, table).get(name)
            if found is not None:
                return found
            scope = scope.parent
        return None


def _type_label(type_proto: onnx.TypeProto) -> str:
    dtype, shape = type_spec(type_proto)
    if shape is None:
        return dtype
    return f"{dtype} {_dims(shape)}".rstrip() if shape else f"{dtype} scalar"


def _constant_value(node: onnx.NodeProto, stats: Any) -> Folded | None:
    """A Constant node's value as a folded input; ``stats(tensor)`` describes its values."""
    import onnx

    for attr in node.attribute:
        if attr.type == onnx.AttributeProto.TENSOR:
            return Folded(
                name=node.output[0], shape=_dims(attr.t.dims), dtype=dtype_name(attr.t.data_type), stats=stats(attr.t)
            )
        if attr.type == onnx.AttributeProto.SPARSE_TENSOR:
            return Folded(name=node.output[0], shape=_dims(attr.sparse_tensor.dims), dtype="sparse")
        if attr.name.startswith("value_"):
            kind = attr.name.removeprefix("value_")
            return Folded(name=node.output[0], shape="" if not kind.endswith("s") else "n", dtype=kind.rstrip("s"))
    return None


class _Builder:
    def __init__(self, functions: dict[tuple[str, str], Any], folder: Path | None) -> None:
        self.view = GraphView(name="")
        self.groups = GroupTable()
        self.functions = functions
        self.linked: set[tuple[int, int, str]] = set()
        self.folder = folder
        self.budget = WeightBudget()

    def stats(self, tensor: onnx.TensorProto) -> str:
        return weight_stats(tensor, self.folder, self.budget)

    def fold(self, tensor: onnx.TensorProto) -> Folded:
        """An initializer as the folded input of the nodes that read it."""
        return Folded(
            name=tensor.name, shape=_dims(tensor.dims), dtype=dtype_name(tensor.data_type), stats=self.stats(tensor)
        )

    def add_node(self, node: ViewNode) -> int:
        node.id = len(self.view.nodes)
        self.view.nodes.append(node)
        return node.id

    def link(self, scope: _Scope, tensor: str, target: int) -> None:
        source = scope.find("producers", tensor)
        if source is not None and source != target and (source, target, tensor) not in self.linked:
            self.linked.add((source, target, tensor))
            self.view.edges.append(
                ViewEdge(source=source, target=target, tensor=tensor, label=scope.find("types", tensor) or "")
            )

    def read_graph(self, graph: onnx.GraphProto, scope: _Scope, base_group: int, depth: int) -> None:
        """Add ``graph``'s nodes under ``base_group``; Constant nodes and initializers become folded inputs."""
        scope.weights.update((tensor.name, tensor) for tensor in graph.initializer)
        for sparse in graph.sparse_initializer:
            scope.folded[sparse.values.name] = Folded(name=sparse.values.name, shape=_dims(sparse.dims), dtype="sparse")
        outputs = {value.name for value in graph.output}
        for position, node in enumerate(graph.node):
            if node.op_type == "Constant" and len(node.output) == 1 and not node.input:
                value = _constant_value(node, self.stats)
                if value is not None:
                    scope.folded[value.name] = value
                    self.view.folded_constants += 1
                    continue
            if depth == 0 and self.fold_identity(node, scope, outputs):
                continue
            added = self.read_node(node, scope, base_group, depth)
            if depth == 0:
                self.view.nodes[added].index = position

    def fold_identity(self, node: onnx.NodeProto, scope: _Scope, outputs: set[str]) -> bool:
        """An Identity of the main graph that passes on a weight or constant, folded like one into the nodes that
        read its output (the legacy exporter leaves one for each weight whose values another shares, e.g. the
        equal biases BatchNorm folding makes; drawn, they are a row of boxes with long edges). An Identity in
        the data flow stays a node. False when it is kept."""
        if node.op_type != "Identity" or node.domain not in ("", "ai.onnx") or len(node.input) != 1:
            return False
        if len(node.output) != 1 or not node.input[0] or not node.output[0] or node.output[0] in outputs:
            return False
        source, output = node.input[0], node.output[0]
        value = scope.find_folded(source, self.fold)
        if value is None:
            return False
        stats = "; ".join(x for x in (value.stats, f"the values of {source}, passed on by an Identity") if x)
        scope.folded[output] = Folded(name=output, shape=value.shape, dtype=value.dtype, stats=stats)
        self.view.folded_identities.append(f"{node.name or 'Identity'}: {source} → {output}")
        return True

    def read_node(self, node: onnx.NodeProto, scope: _Scope, base_group: int, depth: int) -> int:
        """One node; the subgraphs and function body it holds are read first, into a "node" group that the
        renderer draws inside the node when it is opened."""
        inputs, outputs, op = list(node.input), list(node.output), node.op_type
        group = self.groups.nested(base_group, scope_parts(node))
        name = node.name or f"{op}_{len(self.view.nodes)}"
        holder = -1  # the group of the bodies this node holds (If/Loop/Scan branches, a function's body)
        if depth < MAX_DEPTH:
            if any(a.type in _GRAPH_TYPES for a in node.attribute):
                holder = self.groups.new(group, name, "node")
                for label, sub in attribute_subgraphs(node):
                    sub_scope = _Scope(types=_types(sub), parent=scope)
                    self.read_graph(sub, sub_scope, self.groups.new(holder, label, "subgraph"), depth + 1)
            function = self.functions.get((node.domain, op)) if self.functions else None
            if function is not None:
                holder = holder if holder >= 0 else self.groups.new(group, name, "node")
                self.read_call(node, function, scope, holder, depth)
        folded = [f for f in (scope.find_folded(i, self.fold) for i in inputs if i) if f is not None]
        out_type = next((scope.types[o] for o in outputs if o in scope.types), "")
        in_type = "" if out_type else next((t for t in (scope.find("types", i) for i in inputs if i) if t), "")
        key = dtype_key(op, out_type or in_type or (folded[0].dtype if folded else ""))
        index = self.add_node(
            ViewNode(
                id=0,
                op=op,
                name=name,
                attrs=attributes_text(node),
                inputs=inputs,
                outputs=outputs,
                folded=folded,
                group=group,
                dtype=key,
                domain=node.domain,
            )
        )
        self.view.node_count += 1
        for tensor in inputs:
            if tensor and (not folded or scope.find_folded(tensor, self.fold) is None):
                self.link(scope, tensor, index)
        if holder >= 0:
            self.groups.groups[holder].owner = index
        for tensor in outputs:
            if tensor:
                scope.producers[tensor] = index
        return index

    def read_call(
        self, node: onnx.NodeProto, function: onnx.FunctionProto, scope: _Scope, holder: int, depth: int
    ) -> None:
        """A local function's body as a group inside the call: it sees only its formal inputs, bound to the
        call's."""
        import onnx

        inner = self.groups.new(holder, function.name, "function")
        body = _Scope()
        for formal, actual in zip(function.input, node.input, strict=False):
            source = scope.find("producers", actual) if actual else None
            if source is not None:
                body.producers[formal] = source
        graph = onnx.helper.make_graph(list(function.node), function.name, [], [])
        self.read_graph(graph, body, inner, depth + 1)


def _types(graph: onnx.GraphProto) -> dict[str, str]:
    """Tensor name -> 'float32 1×128' from the graph's inputs, outputs and value_info."""
    types: dict[str, str] = {}
    for value in [*graph.input, *graph.value_info, *graph.output]:
        if value.type.WhichOneof("value"):
            types[value.name] = _type_label(value.type)
    return types


def _inferred(model: onnx.ModelProto, notes: list[Note]) -> Any:
    """The model with shapes inferred, or itself when it is too large or inference fails."""
    import onnx

    count = len(model.graph.node)
    if count > SHAPE_INFERENCE_LIMIT:
        notes.append(note(SKIPPED, count=count, limit=SHAPE_INFERENCE_LIMIT))
        return None
    # large weights are lent out while ONNX infers (it copies the whole model, and needs only their shapes):
    # 4 s fewer on a model of 400 MB
    lent: dict[str, bytes] = {}
    for tensor in model.graph.initializer:  # the cheapest test first: most tensors have no raw data
        if (
            tensor.HasField("raw_data")
            and tensor.data_location != onnx.TensorProto.EXTERNAL
            and tensor_elements(tensor) > _LEND_ELEMENTS
        ):
            lent[tensor.name] = tensor.raw_data
            tensor.ClearField("raw_data")
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception as exc:  # a model ONNX cannot infer is still drawn, with the shapes it declares
        notes.append(note(SHAPES_FAILED, error=str(exc)[:200]))
        inferred = None
    finally:
        for tensor in model.graph.initializer if lent else ():
            if tensor.name in lent:
                tensor.raw_data = lent[tensor.name]
    if inferred is not None and lent:
        for tensor in inferred.graph.initializer:
            if tensor.name in lent:
                tensor.raw_data = lent[tensor.name]
    return inferred


def view_graph(
    model_or_graph: onnx.ModelProto | onnx.GraphProto, name: str = "", folder: Path | None = None
) -> GraphView:
    """The graph view of a ModelProto (shapes inferred when small enough) or of one GraphProto; ``folder``
    holds the model's external-data files, read for the weights' statistics."""
    import onnx

    notes: list[Note] = []
    graph, functions = model_or_graph, {}
    if isinstance(model_or_graph, onnx.ModelProto):
        inferred = _inferred(model_or_graph, notes)
        graph = (inferred or model_or_graph).graph
        functions = {(f.domain, f.name): f for f in model_or_graph.functions}
    refused = ""
    if folder is not None:  # external data is read only once the model's every location has been checked
        try:
            if not isinstance(model_or_graph, onnx.ModelProto):
                raise WorkbenchError("a graph alone cannot have its external data checked")
            check_external_data(model_or_graph, folder)
        except WorkbenchError as exc:
            refused, folder = str(exc), None
    builder = _Builder(functions, folder)
    if refused:
        builder.budget.no_external = refused
    builder.view.notes = notes
    builder.view.shapes_inferred = graph is not model_or_graph and not notes
    scope = _Scope(types=_types(graph))
    initializers = {t.name for t in graph.initializer}
    for value in graph.input:
        if value.name not in initializers:  # IR-3 models list their weights as inputs too
            scope.producers[value.name] = builder.add_node(
                ViewNode(
                    id=0,
                    op="Input",
                    name=value.name,
                    attrs=scope.types.get(value.name, ""),
                    inputs=[],
                    outputs=[value.name],
                )
            )
    builder.read_graph(graph, scope, -1, 0)
    for value in graph.output:
        index = builder.add_node(
            ViewNode(
                id=0,
                op="Output",
                name=value.name,
                attrs=scope.types.get(value.name, ""),
                inputs=[value.name],
                outputs=[],
            )
        )
        builder.link(scope, value.name, index)
    view = builder.view
    if builder.budget.skipped:
        notes.append(note(NO_STATS, count=builder.budget.skipped))
    view.name = name or graph.name
    view.groups = finish_groups(builder.groups.groups, view.nodes)
    return view
