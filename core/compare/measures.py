"""The measures of one tensor against the reference's, and what a model's graph says about each tensor: which
node writes it, its op, the PyTorch module it came from."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from core.compare.records import TensorError
from core.model.proto import module_of

if TYPE_CHECKING:
    import onnx

__all__ = ["Graph", "graph_of", "measure", "module_of"]


def measure(name: str, a: Any, b: Any, rtol: float, atol: float) -> TensorError | None:
    """``b`` against the reference ``a``, in float64 (None when they cannot be set side by side: another shape,
    or values that are not numbers). Within the tolerance: max |a - b| ≤ atol + rtol × max |a|, nothing but
    finite values where a's are finite."""
    import numpy as np

    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype.kind not in "fbiu" or b.dtype.kind not in "fbiu":
        return None
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    finite = np.isfinite(a64)
    broken = finite & ~np.isfinite(b64)
    both = finite & ~broken
    nonfinite = int(broken.sum())
    reference_max = float(np.abs(a64[finite]).max()) if finite.any() else 0.0
    if both.any():
        delta = np.abs(a64[both] - b64[both])
        max_abs, mean_abs = float(delta.max()), float(delta.mean())
        x, y = a64[both], b64[both]
        norms = float(np.linalg.norm(x) * np.linalg.norm(y))
        cosine = float(np.dot(x, y) / norms) if norms > 0 else (1.0 if max_abs == 0 else 0.0)
    else:
        max_abs, mean_abs, cosine = 0.0, 0.0, 1.0
    if nonfinite:
        max_abs = math.inf
    relative = max_abs / reference_max if reference_max > 0 else (0.0 if max_abs == 0 else math.inf)
    within = nonfinite == 0 and max_abs <= atol + rtol * reference_max
    return TensorError(
        name=name,
        shape=[int(d) for d in a.shape],
        max_abs=max_abs,
        mean_abs=mean_abs,
        relative=relative,
        cosine=cosine,
        within=within,
        nonfinite=nonfinite,
        reference_max=reference_max,
    )


@dataclass(kw_only=True)
class Graph:
    """A model's main graph as the comparison reads it: nodes in order, who writes each tensor."""

    names: list[str]  # node names, in graph (topological) order
    ops: list[str]
    modules: list[str]
    inputs: list[list[str]]  # each node's input tensors
    outputs: list[list[str]]
    producer: dict[str, int]  # tensor -> the index of the node that writes it
    weights: set[str]  # initializer names


def graph_of(model: onnx.ModelProto) -> Graph:
    graph = model.graph
    names, ops, modules, inputs, outputs, producer = [], [], [], [], [], {}
    for index, node in enumerate(graph.node):
        names.append(node.name or f"{node.op_type}_{index}")
        ops.append(node.op_type)
        modules.append(module_of(node))
        inputs.append([t for t in node.input if t])
        outputs.append([t for t in node.output if t])
        for tensor in node.output:
            if tensor:
                producer[tensor] = index
    weights = {t.name for t in graph.initializer}
    return Graph(
        names=names, ops=ops, modules=modules, inputs=inputs, outputs=outputs, producer=producer, weights=weights
    )
