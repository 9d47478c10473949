"""The structural diff of two ONNX models, the worker job behind ``python -m core diff`` and the Compare page.

Both models are parsed without their external data, checked against the server's limits, and their external-data
locations checked before any file is read. Each graph's nodes are matched (core.diff.match), every matched pair
compared (op, attributes, inputs, weights), and the bodies of matched If/Loop/Scan nodes diffed the same way,
named by their path. Weights are read one pair at a time (core.diff.weights).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.diff.match import Matching, Node, match_nodes, nodes_of, tensor_stem
from core.diff.records import Change, DiffReport, DiffRequest, ModelChange, NodeDiff, WeightChange
from core.diff.weights import TensorReader, compare_dequantized, compare_tensors
from core.errors import DiffError, brief
from core.i18n import _
from core.model.counts import check_counts
from core.model.onnx_file import check_external_data
from core.model.proto import attribute_subgraphs, constants_to_initializers, type_text
from core.settings import IntakeLimits

if TYPE_CHECKING:
    import onnx

__all__ = ["diff_models", "open_model"]

_GRAPH_TYPES = (5, 10)  # AttributeProto.GRAPH, GRAPHS: diffed as bodies, not as values
_TENSOR_TYPES = (4, 11)  # TENSOR, SPARSE_TENSOR: compared as weights


def _silent(fraction: float, message: str) -> None:
    """Progress goes nowhere when nobody watches."""


def open_model(path: str, limits: IntakeLimits) -> tuple[onnx.ModelProto, int]:
    """The ONNX model at ``path`` without its external data, within ``limits``, its data files checked; and its
    node count (every graph and function)."""
    import onnx

    file = Path(path)
    try:
        model = onnx.load_model(str(file), load_external_data=False)
    except Exception as exc:
        raise DiffError(
            _("“{model}” could not be parsed as an ONNX model ({error}); diff takes two ONNX files.").format(
                model=brief(file.name), error=brief(exc, 200)
            )
        ) from exc
    if not model.HasField("graph"):
        raise DiffError(_("“{model}” holds no graph: there is nothing to diff.").format(model=brief(file.name)))
    counts = check_counts(model, file.name, limits)
    check_external_data(model, file.parent)
    return model, counts.nodes


def _change(what: str, detail: str, before: str, after: str) -> Change:
    return Change(what=what, detail=detail, before=before, after=after)


@dataclass(kw_only=True)
class _Diff:
    """What the walk through both models carries: the report, the models' folders, and the weights read."""

    report: DiffReport
    reader_a: TensorReader
    reader_b: TensorReader
    weights: dict[tuple[str, str], WeightChange | None] = field(default_factory=dict)

    def weight(self, ta: onnx.TensorProto, tb: onnx.TensorProto, key: tuple[str, str]) -> WeightChange | None:
        if key not in self.weights:
            self.report.weights_compared += 1
            self.weights[key] = compare_tensors(ta, tb, self.reader_a, self.reader_b)
        return self.weights[key]


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    elif isinstance(value, list):
        value = [v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in value]
    return brief(value, 200)


def _attributes(node: onnx.NodeProto) -> dict[str, Any]:
    """Each attribute but bodies: its value as text, or the tensor it holds."""
    from onnx import helper

    found: dict[str, Any] = {}
    for attr in node.attribute:
        if attr.type in _GRAPH_TYPES:
            continue
        if attr.type in _TENSOR_TYPES:
            found[attr.name] = attr.t if attr.type == 4 else attr.sparse_tensor.values
        else:
            found[attr.name] = _text(helper.get_attribute_value(attr))
    return found


def _compare_attributes(d: _Diff, na: Node, nb: Node, out: NodeDiff) -> None:
    if not (na.bodies or nb.bodies) and na.proto.attribute == nb.proto.attribute:
        return  # the same attributes, compared in protobuf's own code
    attrs_a, attrs_b = _attributes(na.proto), _attributes(nb.proto)
    for name in sorted(set(attrs_a) | set(attrs_b)):
        va, vb = attrs_a.get(name), attrs_b.get(name)
        if isinstance(va, str | None) and isinstance(vb, str | None):
            if va != vb:
                out.changes.append(_change("attribute", name, va or "", vb or ""))
        elif va is None or vb is None or isinstance(va, str) or isinstance(vb, str):
            out.changes.append(_change("attribute", name, "" if va is None else name, "" if vb is None else name))
        else:
            key = (f"{na.name}.{name}", f"{nb.name}.{name}")
            change = d.weight(va, vb, key)
            if change is not None:
                out.weights.append(change)


def _compare_inputs(d: _Diff, scope: _Scope, na: Node, nb: Node, out: NodeDiff) -> None:
    """Each input slot: a weight in both is compared by value; another tensor must be the one A's maps to (or
    keep its name). Another op's inputs mean other things: its weights pair by name, the rest is one change."""
    if (na.op_type, na.domain) != (nb.op_type, nb.domain):
        _other_op_inputs(d, scope, na, nb, out)
        return
    for slot in range(max(len(na.input), len(nb.input))):
        ta = na.input[slot] if slot < len(na.input) else ""
        tb = nb.input[slot] if slot < len(nb.input) else ""
        if _weights_pair(d, scope, ta, tb, out) or _dequantized_pair(d, scope, ta, tb, out):
            continue
        if tb not in (ta, scope.tensors.get(ta)) and not scope.through_qdq(ta, tb):
            out.changes.append(_change("input", str(slot), ta, tb))
    if len(na.output) != len(nb.output):
        out.changes.append(_change("output", "", str(len(na.output)), str(len(nb.output))))


def _weights_pair(d: _Diff, scope: _Scope, ta: str, tb: str, out: NodeDiff) -> bool:
    """Whether ``ta`` and ``tb`` are both weights (their change, if any, goes into ``out``)."""
    wa, wb = scope.inits_a.get(ta), scope.inits_b.get(tb)
    if wa is None or wb is None:
        return False
    scope.paired_a.add(ta)
    scope.paired_b.add(tb)
    change = d.weight(wa, wb, (ta, tb))
    if change is not None:
        out.weights.append(change)
    return True


# ops that take a quantized weight with its scale and zero point: the weight's, scale's and zero point's inputs
# (and the axis a per-channel scale runs along: a Conv's output channels, a MatMul's columns)
_QLINEAR = {"QLinearConv": (3, 4, 5, 0), "QLinearMatMul": (3, 4, 5, -1)}


def _dequantized_pair(d: _Diff, scope: _Scope, ta: str, tb: str, out: NodeDiff, node: Node | None = None) -> bool:
    """Whether A's float weight ``ta`` is B's quantized weight behind ``tb``: a DequantizeLinear of an integer
    initializer (QDQ), or the weight input of a QLinear op (``node``); its change, if any, goes into ``out``."""
    wa = scope.inits_a.get(ta)
    if wa is None:
        return False
    if node is not None:
        *slots, axis = _QLINEAR[node.op_type]
        names = [node.input[i] if i < len(node.input) else "" for i in slots]
    else:
        dq = scope.dequantizer(tb)
        if dq is None:
            return False
        names = [dq.input[i] if i < len(dq.input) else "" for i in range(3)]
        axis = next((a.i for a in dq.proto.attribute if a.name == "axis"), 1)
    q, scale, zero = (scope.inits_b.get(n) if n else None for n in names)
    if q is None or scale is None:
        return False
    key = (ta, f"{names[0]} dequantized")
    if key not in d.weights:
        d.report.weights_compared += 1
        d.weights[key] = compare_dequantized(wa, (q, scale, zero, axis), d.reader_a, d.reader_b)
    change = d.weights[key]
    if change is None:
        return False
    scope.paired_a.add(ta)
    scope.paired_b.update(n for n in names if n)
    if change.differing:
        out.weights.append(change)
    return True


def _other_op_inputs(d: _Diff, scope: _Scope, na: Node, nb: Node, out: NodeDiff) -> None:
    stems = {tensor_stem(t): t for t in nb.input if t in scope.inits_b}
    for ta in na.input:
        tb = stems.get(tensor_stem(ta), "")
        if ta not in scope.inits_a or not tb:
            continue
        qlinear = nb.op_type in _QLINEAR and nb.input[_QLINEAR[nb.op_type][0]] == tb
        if not (qlinear and _dequantized_pair(d, scope, ta, tb, out, nb)):
            _weights_pair(d, scope, ta, tb, out)
    same = all(tb in (ta, scope.tensors.get(ta)) for ta, tb in zip(na.input, nb.input, strict=False))
    if not same or len(na.input) != len(nb.input):
        out.changes.append(_change("input", "", ", ".join(na.input), ", ".join(nb.input)))


@dataclass(kw_only=True)
class _Scope:
    """One pair of graphs being diffed: the initializers each sees (its own and the graphs' around it), the
    tensor names of A known in B, and the initializers a node pairs."""

    path: str
    inits_a: dict[str, Any]
    inits_b: dict[str, Any]
    tensors: dict[str, str]
    paired_a: set[str] = field(default_factory=set)
    paired_b: set[str] = field(default_factory=set)
    nodes_b: list[Node] = field(default_factory=list)
    dequantizers: dict[str, Node] | None = None  # B's DequantizeLinear nodes by output, found when first asked

    def dequantizer(self, tensor: str, op: str = "DequantizeLinear") -> Node | None:
        """B's DequantizeLinear (or QuantizeLinear) node that writes ``tensor``."""
        if self.dequantizers is None:
            quantizers = ("QuantizeLinear", "DequantizeLinear")
            self.dequantizers = {n.output[0]: n for n in self.nodes_b if n.op_type in quantizers and n.output}
        found = self.dequantizers.get(tensor)
        return found if found is not None and found.op_type == op else None

    def through_qdq(self, ta: str, tb: str) -> bool:
        """Whether B's ``tb`` is A's ``ta`` quantized and dequantized again (a QDQ model's activations)."""
        dq = self.dequantizer(tb)
        q = self.dequantizer(dq.input[0], "QuantizeLinear") if dq is not None and dq.input else None
        return q is not None and bool(q.input) and q.input[0] in (ta, self.tensors.get(ta))


def _label(node: Node, index: int) -> str:
    name = node.name or f"{node.op_type}_{index}"
    return name if len(name) <= 60 else f"{name[:40]}… (node {index})"


def _compare_bodies(d: _Diff, scope: _Scope, nb: Node, na: Node, j: int, out: NodeDiff) -> None:
    if not (na.bodies or nb.bodies):
        return
    bodies_a, bodies_b = dict(attribute_subgraphs(na.proto)), dict(attribute_subgraphs(nb.proto))
    for label in sorted(set(bodies_a) | set(bodies_b)):
        if label not in bodies_a or label not in bodies_b:
            out.changes.append(
                _change("body", label, "" if label not in bodies_a else label, label if label in bodies_b else "")
            )
            continue
        path = f"{scope.path} / {_label(nb, j)} ({nb.op_type}).{label}"
        if _diff_graph(d, bodies_a[label], bodies_b[label], path, scope):
            out.changes.append(_change("body", label, "", path))


def _io(d: _Diff, ga: onnx.GraphProto, gb: onnx.GraphProto, path: str) -> dict[str, str]:
    """The graph inputs and outputs that differ, into the report; the tensors known to correspond (by name,
    else by position) as seeds for matching the nodes."""
    seeds: dict[str, str] = {}
    inits_a, inits_b = {t.name for t in ga.initializer}, {t.name for t in gb.initializer}
    for kind, values_a, values_b in (
        ("input", [v for v in ga.input if v.name not in inits_a], [v for v in gb.input if v.name not in inits_b]),
        ("output", list(ga.output), list(gb.output)),
    ):
        names_b = {v.name for v in values_b}
        only_a = [v for v in values_a if v.name not in names_b]
        names_a = {v.name for v in values_a}
        only_b = [v for v in values_b if v.name not in names_a]
        pairs = [(va, vb) for va in values_a for vb in values_b if va.name == vb.name]
        pairs += list(zip(only_a, only_b, strict=False))  # renamed: by position
        for va, vb in pairs:
            seeds[va.name] = vb.name
            before, after = type_text(va.type), type_text(vb.type)
            if va.name != vb.name or before != after:
                d.report.model.append(
                    ModelChange(
                        kind=kind, name=vb.name, before=f"{va.name}: {before}", after=f"{vb.name}: {after}", graph=path
                    )
                )
        for va in only_a[len(only_b) :]:
            d.report.model.append(ModelChange(kind=kind, name=va.name, before=type_text(va.type), after="", graph=path))
        for vb in only_b[len(only_a) :]:
            d.report.model.append(ModelChange(kind=kind, name=vb.name, before="", after=type_text(vb.type), graph=path))
    return seeds


def _node_entry(scope: _Scope, node: Node, index: int, **more: Any) -> NodeDiff:
    return NodeDiff(
        node=node.name or f"{node.op_type}_{index}", graph=scope.path, op_type=node.op_type, index=index, **more
    )


def _diff_graph(d: _Diff, ga: onnx.GraphProto, gb: onnx.GraphProto, path: str, outer: _Scope | None) -> bool:
    """Diff one pair of graphs (and the bodies inside them) into the report; whether anything differs."""
    before = (len(d.report.added), len(d.report.removed), len(d.report.changed), len(d.report.model))
    seeds = dict(outer.tensors) if outer is not None else {}
    seeds.update(_io(d, ga, gb, path))
    scope = _Scope(
        path=path,
        inits_a={**(outer.inits_a if outer else {}), **{t.name: t for t in ga.initializer}},
        inits_b={**(outer.inits_b if outer else {}), **{t.name: t for t in gb.initializer}},
        tensors={},
    )
    nodes_a, nodes_b = nodes_of(ga), nodes_of(gb)
    scope.nodes_b = nodes_b
    matching: Matching = match_nodes(nodes_a, nodes_b, seeds)
    scope.tensors = matching.tensors
    for i, (j, how) in sorted(matching.pairs.items(), key=lambda p: p[1][0]):
        na, nb = nodes_a[i], nodes_b[j]
        out = _node_entry(scope, nb, j, node_a=na.name if na.name != nb.name else "", matched_by=how)
        if (na.op_type, na.domain) != (nb.op_type, nb.domain):
            out.changes.append(
                _change("op_type", "", f"{na.domain}:{na.op_type}".lstrip(":"), f"{nb.domain}:{nb.op_type}".lstrip(":"))
            )
        _compare_attributes(d, na, nb, out)
        _compare_inputs(d, scope, na, nb, out)
        _compare_bodies(d, scope, nb, na, j, out)
        if out.changes or out.weights:
            d.report.changed.append(out)
        else:
            d.report.unchanged += 1
            if out.node_a:
                d.report.renamed.append(out)
    taken = matching.matched_b()
    d.report.removed += [_node_entry(scope, n, i) for i, n in enumerate(nodes_a) if i not in matching.pairs]
    d.report.added += [_node_entry(scope, n, j) for j, n in enumerate(nodes_b) if j not in taken]
    _initializers(d, scope, ga, gb)
    return before != (len(d.report.added), len(d.report.removed), len(d.report.changed), len(d.report.model))


def _initializers(d: _Diff, scope: _Scope, ga: onnx.GraphProto, gb: onnx.GraphProto) -> None:
    """Initializers of this graph no node pairs with one of the other model's, by name: added or removed."""
    names_a = {t.name for t in ga.initializer}
    names_b = {t.name for t in gb.initializer}
    for t in ga.initializer:
        if t.name not in scope.paired_a and t.name not in names_b:
            d.report.model.append(
                ModelChange(kind="initializer", name=t.name, before=_tensor_text(t), after="", graph=scope.path)
            )
    for t in gb.initializer:
        if t.name not in scope.paired_b and t.name not in names_a:
            d.report.model.append(
                ModelChange(kind="initializer", name=t.name, before="", after=_tensor_text(t), graph=scope.path)
            )


def _tensor_text(t: onnx.TensorProto) -> str:
    from core.diff.weights import shape_text
    from core.model.proto import dtype_name

    return f"{dtype_name(t.data_type)} {shape_text(t)}"


def _model_fields(d: _Diff, ma: onnx.ModelProto, mb: onnx.ModelProto) -> None:
    """Opsets and metadata that differ."""
    opsets_a = {o.domain or "ai.onnx": str(o.version) for o in ma.opset_import}
    opsets_b = {o.domain or "ai.onnx": str(o.version) for o in mb.opset_import}
    for domain in sorted(set(opsets_a) | set(opsets_b)):
        if opsets_a.get(domain) != opsets_b.get(domain):
            d.report.model.append(
                ModelChange(kind="opset", name=domain, before=opsets_a.get(domain, ""), after=opsets_b.get(domain, ""))
            )
    fields = ("ir_version", "producer_name", "producer_version", "domain", "model_version", "doc_string")
    meta_a = {f: brief(getattr(ma, f), 200) for f in fields} | {p.key: brief(p.value, 200) for p in ma.metadata_props}
    meta_b = {f: brief(getattr(mb, f), 200) for f in fields} | {p.key: brief(p.value, 200) for p in mb.metadata_props}
    for key in sorted(set(meta_a) | set(meta_b), key=lambda k: (k not in fields, k)):
        if meta_a.get(key, "") != meta_b.get(key, ""):
            d.report.model.append(
                ModelChange(kind="metadata", name=key, before=meta_a.get(key, ""), after=meta_b.get(key, ""))
            )


def diff_models(
    request: DiffRequest,
    progress: Callable[[float, str], None] | None = None,
    limits: IntakeLimits | None = None,
) -> DiffReport:
    """Diff model B against model A. Runs in the worker; a model past ``limits`` is refused before any work."""
    started = time.perf_counter()
    report = progress or _silent
    limits = limits or IntakeLimits()
    report(0.05, _("Parsing model A (external weights are not loaded)"))
    ma, nodes_a = open_model(request.path_a, limits)
    report(0.25, _("Parsing model B (external weights are not loaded)"))
    mb, nodes_b = open_model(request.path_b, limits)
    d = _Diff(
        report=DiffReport(
            model_a=Path(request.path_a).name,
            model_b=Path(request.path_b).name,
            nodes_a=nodes_a,
            nodes_b=nodes_b,
        ),
        reader_a=TensorReader(Path(request.path_a).parent),
        reader_b=TensorReader(Path(request.path_b).parent),
    )
    # weights a Constant node holds are diffed as weights: a Paddle export against the variant Quantize made of it
    # (which moved them into initializers) listed 213 removed Constant nodes and compared no weight at all
    d.report.constant_weights = [constants_to_initializers(ma), constants_to_initializers(mb)]
    report(0.45, _("Matching the nodes and comparing their weights"))
    _model_fields(d, ma, mb)
    try:
        _diff_graph(d, ma.graph, mb.graph, "main", None)
    finally:
        d.reader_a.close()
        d.reader_b.close()
    d.report.seconds = time.perf_counter() - started
    return d.report
