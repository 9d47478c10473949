"""Old semantics that onnx's version converter carries over wrongly, put right; and the ones onnx's reference
evaluator would misread in the original, so that it does not stand for the original there.

Before opset 7, Add, Mul and their kin broadcast their second input along an explicit ``axis`` (Caffe2's way: a
bias of [C] added along axis 1 of an NCHW tensor), and PRelu applied a slope of [C] per channel. From opset 7 both
broadcast like numpy, from the last axis. The converter's adapter gives such a second input as many trailing 1-dims
as the first input has more dims than it (one too many for a bias along axis 1), and leaves PRelu's slope as it
was; the reference evaluator runs both by numpy's rules whatever the opset.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from core.notes import Note, note
from core.upgrade import sentences as say
from core.upgrade.records import OpChange

if TYPE_CHECKING:
    import onnx

__all__ = ["align_legacy_broadcasts", "reference_misreads", "repair_prelu_slopes"]

Shape = list[int | None]


def _shapes(model: onnx.ModelProto) -> dict[str, Shape]:
    """The shape of every value of the main graph shape inference (or the weights themselves) can tell."""
    from onnx import shape_inference

    try:
        inferred = shape_inference.infer_shapes(model)
    except Exception:  # an old graph onnx cannot infer: what the file declares
        inferred = model
    shapes: dict[str, Shape] = {}
    for value in [*inferred.graph.input, *inferred.graph.value_info, *inferred.graph.output]:
        if value.type.HasField("tensor_type") and value.type.tensor_type.HasField("shape"):
            dims = value.type.tensor_type.shape.dim
            shapes[value.name] = [d.dim_value if d.HasField("dim_value") else None for d in dims]
    for tensor in model.graph.initializer:
        shapes[tensor.name] = list(tensor.dims)
    return shapes


def _legacy_axis(node: onnx.NodeProto, shapes: dict[str, Shape]) -> tuple[int, int, int] | None:
    """(the axis, the second input's rank, the trailing dims it needs) for a node that broadcasts it along an
    explicit axis numpy would not align it to; None for any other node."""
    attrs = {a.name: a.i for a in node.attribute if a.name in ("broadcast", "axis")}
    if attrs.get("broadcast") != 1 or "axis" not in attrs or len(node.input) < 2:
        return None
    first, second = shapes.get(node.input[0]), shapes.get(node.input[1])
    if first is None or second is None:
        return None
    axis = attrs["axis"] + (len(first) if attrs["axis"] < 0 else 0)
    trailing = len(first) - axis - len(second)
    return (axis, len(second), trailing) if axis >= 0 and trailing > 0 else None


def align_legacy_broadcasts(model: onnx.ModelProto) -> list[OpChange]:
    """Give the second input of every legacy axis broadcast its trailing 1-dims (an Unsqueeze before the node), in
    ``model`` itself, before the converter sees it: numpy's broadcasting then meets the same axes. The changes."""
    from onnx import helper

    shapes = _shapes(model)
    names = {name for node in model.graph.node for name in [*node.input, *node.output]}
    fixed: Counter[str] = Counter()
    nodes = []
    for k, node in enumerate(model.graph.node):
        found = _legacy_axis(node, shapes)
        if found is not None and found[0] > 0:  # along axis 0 the converter gets it right
            _, rank, trailing = found
            aligned = f"{node.input[1]}_aligned_{k}"
            while aligned in names:
                aligned += "_"
            names.add(aligned)
            axes = list(range(rank, rank + trailing))
            nodes.append(helper.make_node("Unsqueeze", [node.input[1]], [aligned], axes=axes))
            node.input[1] = aligned
            fixed[node.op_type] += 1
        nodes.append(node)
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    return [
        OpChange(
            kind="repaired",
            op=op,
            nodes=count,
            text=note(say.BROADCAST_ALONG_AXIS),
        )
        for op, count in sorted(fixed.items())
    ]


def _per_channel_slope(node: onnx.NodeProto, shapes: dict[str, Shape]) -> bool:
    """A PRelu whose slope [C] applies to the channels (axis 1) of an input of rank 3 or more."""
    if node.op_type != "PRelu" or len(node.input) < 2:
        return False
    x, slope = shapes.get(node.input[0]), shapes.get(node.input[1])
    if x is None or slope is None or len(slope) != 1 or slope[0] in (None, 1) or len(x) <= 2:
        return False
    return x[1] in (None, slope[0])


def repair_prelu_slopes(original: onnx.ModelProto, converted: onnx.ModelProto) -> list[OpChange]:
    """Reshape every per-channel PRelu slope (an initializer) of a model from before opset 7 from [C] to
    [C, 1, ...] in ``converted``, so it still meets the channels. The changes."""
    if not any(o.domain in ("", "ai.onnx") and o.version < 7 for o in original.opset_import):
        return []
    shapes = _shapes(original)
    weights = {t.name: t for t in converted.graph.initializer}
    declared = {v.name: v for v in converted.graph.input}  # an IR-3 model lists its weights as inputs too
    repaired, done = 0, set()
    for node in converted.graph.node:
        if not _per_channel_slope(node, shapes) or node.input[1] not in weights:
            continue
        repaired += 1
        if node.input[1] in done:
            continue
        extra = len(shapes[node.input[0]]) - 2
        weights[node.input[1]].dims.extend([1] * extra)  # [C] -> [C, 1, ...]: the same values, per channel
        if node.input[1] in declared:
            for _ in range(extra):
                declared[node.input[1]].type.tensor_type.shape.dim.add().dim_value = 1
        done.add(node.input[1])
    if not repaired:
        return []
    return [
        OpChange(
            kind="repaired",
            op="PRelu",
            nodes=repaired,
            text=note(say.PRELU_SLOPE),
        )
    ]


def reference_misreads(model: onnx.ModelProto) -> list[Note]:
    """What onnx's reference evaluator would run by numpy's rules instead of the original's (old) ones."""
    if not any(o.domain in ("", "ai.onnx") and o.version < 7 for o in model.opset_import):
        return []
    shapes = _shapes(model)
    found: Counter[tuple[str, str]] = Counter()  # (what, the op it names) -> nodes
    for node in model.graph.node:
        if _legacy_axis(node, shapes) is not None:
            found[(say.ALONG_AXIS, node.op_type)] += 1
        elif _per_channel_slope(node, shapes):
            x, slope = shapes[node.input[0]], shapes[node.input[1]]
            if x[-1] == slope[0] or x.count(slope[0]) != 1:  # numpy's rules, or its guess, would take another axis
                found[(say.PRELU_SLOPES, "")] += 1
    return [
        note(
            say.MISREAD_ONE if count == 1 else say.MISREAD_COUNT,
            what=note(what, op=op) if op else note(what),
            count=count,
        )
        for (what, op), count in found.items()
    ]
