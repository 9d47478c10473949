"""What a graph does with its inputs, read from its nodes where a name or a shape says too little: a float input that
opens on a strided 1-D convolution (raw audio into a feature extractor, as wav2vec2's), a Loop's trip count (an input,
or a dim a Loop or Scan counts its iterations by), a boolean that chooses an If's branch, an integer input one-hot
encoded against a fixed range of values (magika's bytes, 0–256), and a NonMaxSuppression anywhere, subgraphs too
(a detector that keeps its own post-processing). Runs in the worker, on the loaded proto; nothing here is a guess
the plan could not explain: each finding names the node it comes from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from core.model.proto import walk_graphs

if TYPE_CHECKING:
    import onnx

__all__ = ["CONDITION", "ONE_HOT", "TRIP_COUNT", "WAVEFORM", "GraphUses", "graph_uses"]

WAVEFORM, TRIP_COUNT, CONDITION, ONE_HOT = "waveform", "trip_count", "condition", "one_hot"  # TensorSpec.use
MAX_ONE_HOT = 1 << 20  # a range of values larger than this is no one-hot table
# ops that carry an input's values on unchanged (a reshape, a cast, a broadcast): what reaches an Equal, an If or a
# Loop through them is still the input; a signal is still the signal when scaled or shifted too (a Conv's input)
_KEEP = {"Cast", "Reshape", "Unsqueeze", "Squeeze", "Flatten", "Identity", "Expand", "Not"}
_SCALE = {"Sub", "Div", "Mul", "Add"}
_SAME_AXES = {"Cast", "Identity"}  # ops that keep every axis where it was (a dim keeps its meaning through them)


@dataclass(frozen=True, kw_only=True)
class GraphUses:
    """What the main graph does with each input (by name), and whether any graph suppresses boxes."""

    uses: dict[str, str] = field(default_factory=dict)  # input -> WAVEFORM, TRIP_COUNT, CONDITION or ONE_HOT
    loop_axes: dict[str, int] = field(default_factory=dict)  # input -> the axis a Loop or Scan iterates over
    one_hot: dict[str, int] = field(default_factory=dict)  # input -> how many values it is one-hot encoded against
    suppression: bool = False  # a NonMaxSuppression node in the graph or a subgraph


class _Constants:
    """The graph's initializers and Constant nodes' tensors by name, each decoded only when asked and only when small
    and of integers (indices, a depth, a range of classes): a large model's weights are never read here."""

    def __init__(self, graph: onnx.GraphProto) -> None:
        import onnx

        self.tensors: dict[str, onnx.TensorProto] = {t.name: t for t in graph.initializer}
        for node in graph.node:
            if node.op_type == "Constant" and node.output:
                value = next(
                    (a.t for a in node.attribute if a.name == "value" and a.type == onnx.AttributeProto.TENSOR), None
                )
                if value is not None:
                    self.tensors[node.output[0]] = value

    def __contains__(self, name: str) -> bool:
        return name in self.tensors

    def rank(self, name: str) -> int | None:
        tensor = self.tensors.get(name)
        return len(tensor.dims) if tensor is not None else None

    def integers(self, name: str) -> Any:
        """The tensor's values, or None for one that is large, external, not of integers or damaged."""
        from onnx import numpy_helper

        tensor = self.tensors.get(name)
        if tensor is None or tensor.data_location == 1 or tensor.data_type not in _INTEGER_TYPES:
            return None
        if len(tensor.dims) > 4 or _elements(tensor) > MAX_ONE_HOT:
            return None
        try:
            return numpy_helper.to_array(tensor)
        except Exception:  # a damaged tensor says nothing here
            return None


_INTEGER_TYPES = {2, 3, 4, 5, 6, 7, 12, 13}  # TensorProto's UINT8 … INT64, UINT32, UINT64


def _elements(tensor: onnx.TensorProto) -> int:
    count = 1
    for d in tensor.dims:
        count *= max(int(d), 0)
    return count


def _weight_rank(constants: _Constants, node: onnx.NodeProto) -> int:
    """The rank of a Conv's weight (3 for a 1-D convolution), from its initializer or Constant, else its
    kernel_shape."""
    rank = constants.rank(node.input[1]) if len(node.input) > 1 else None
    if rank is not None:
        return rank
    kernel = next((list(a.ints) for a in node.attribute if a.name == "kernel_shape"), None)
    return len(kernel) + 2 if kernel else 0


def _ints(node: onnx.NodeProto, name: str) -> list[int]:
    return next((list(a.ints) for a in node.attribute if a.name == name), [])


def _int(node: onnx.NodeProto, name: str, default: int) -> int:
    return next((int(a.i) for a in node.attribute if a.name == name), default)


def _arange_size(array: Any) -> int:
    """n when ``array`` holds 0, 1, …, n-1 along its one axis longer than 1 (a one-hot's table of classes), else 0."""
    import numpy as np

    if array is None:
        return 0
    flat = np.asarray(array).reshape(-1)
    if flat.size < 2 or flat.dtype.kind not in "iu" or flat.size != max(np.asarray(array).shape or (1,)):
        return 0
    return int(flat.size) if np.array_equal(flat, np.arange(flat.size)) else 0


def _scalar(array: Any) -> int | None:
    import numpy as np

    if array is None:
        return None
    flat = np.asarray(array).reshape(-1)
    return int(flat[0]) if flat.size == 1 and flat.dtype.kind in "iu" else None


def graph_uses(model: onnx.ModelProto) -> GraphUses:
    """What the main graph does with its inputs (see the module's docstring)."""
    graph = model.graph
    dtypes = {i.name: i.type.tensor_type.elem_type for i in graph.input}
    origin = {name: name for name in dtypes}  # tensor -> the graph input its values come from, unchanged
    signal = {name: name for name in dtypes}  # the same, scaled or shifted on the way
    same_axes = {name: name for name in dtypes}  # the same, through ops that keep every axis in place
    axis_of: dict[str, tuple[str, int | None]] = {}  # Shape(x) -> (x, None); a dim of it -> (x, axis)
    constants = _Constants(graph)
    uses: dict[str, str] = {}
    loop_axes: dict[str, int] = {}
    one_hot: dict[str, int] = {}
    for node in graph.node:  # nodes are in topological order
        ins = list(node.input)
        op = node.op_type
        if op == "Conv" and ins and ins[0] in signal and dtypes.get(signal[ins[0]]) in (1, 10, 11, 16):
            strides = _ints(node, "strides")
            if _weight_rank(constants, node) == 3 and any(s > 1 for s in strides):
                uses.setdefault(signal[ins[0]], WAVEFORM)
        elif op == "If" and ins and ins[0] in origin and dtypes.get(origin[ins[0]]) == 9:  # BOOL
            uses.setdefault(origin[ins[0]], CONDITION)
        elif op == "Loop" and ins and ins[0]:
            if ins[0] in origin:
                uses.setdefault(origin[ins[0]], TRIP_COUNT)
            elif ins[0] in axis_of and axis_of[ins[0]][1] is not None:
                name, axis = axis_of[ins[0]]
                loop_axes.setdefault(name, axis)  # type: ignore[arg-type]
        elif op == "Scan":
            scanned = _int(node, "num_scan_inputs", 0)
            axes = _ints(node, "scan_input_axes")
            for k, name in enumerate(ins[len(ins) - scanned :] if scanned else []):
                if name in same_axes:
                    loop_axes.setdefault(same_axes[name], axes[k] if k < len(axes) else 0)
        elif op == "OneHot" and len(ins) > 1 and ins[0] in origin and ins[1] in constants:
            depth = _scalar(constants.integers(ins[1]))
            if depth and 1 < depth <= MAX_ONE_HOT:
                one_hot[origin[ins[0]]] = max(one_hot.get(origin[ins[0]], 0), depth)
        elif op == "Equal" and len(ins) == 2:
            for mine, other in ((ins[0], ins[1]), (ins[1], ins[0])):
                if mine in origin and other in constants and dtypes.get(origin[mine]) in _INTEGER_TYPES:
                    size = _arange_size(constants.integers(other))
                    if size:
                        one_hot[origin[mine]] = max(one_hot.get(origin[mine], 0), size)
        if op == "Shape" and ins and ins[0] in same_axes and not node.attribute:
            axis_of[node.output[0]] = (same_axes[ins[0]], None)
        elif op == "Gather" and len(ins) > 1 and ins[0] in axis_of and ins[1] in constants:
            index = _scalar(constants.integers(ins[1]))
            if index is not None and index >= 0 and axis_of[ins[0]][1] is None:
                axis_of[node.output[0]] = (axis_of[ins[0]][0], index)
        elif op in ("Squeeze", "Cast", "Reshape", "Identity", "Unsqueeze") and ins and ins[0] in axis_of:
            axis_of[node.output[0]] = axis_of[ins[0]]
        if op in _KEEP and ins and ins[0] in origin:
            for out in node.output:
                origin[out] = origin[ins[0]]
        if op in _KEEP | _SCALE and ins and ins[0] in signal:
            for out in node.output:
                signal[out] = signal[ins[0]]
        if op in _SAME_AXES and ins and ins[0] in same_axes:
            for out in node.output:
                same_axes[out] = same_axes[ins[0]]
    for name in one_hot:
        uses.setdefault(name, ONE_HOT)
    suppression = any(node.op_type == "NonMaxSuppression" for visit in walk_graphs(model) for node in visit.graph.node)
    return GraphUses(uses=uses, loop_axes=loop_axes, one_hot=one_hot, suppression=suppression)
