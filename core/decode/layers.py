"""A model's repeated blocks, by their nodes' names: the decoder layers of a language model
(``/model/layers.3/attn/...`` as onnxruntime-genai and optimum name them, ``/transformer/h.3/...`` GPT-2's), a
transformer's encoder layers (``/encoder/layer.3/...``), a vision model's ``blocks.3``; or, where the names say
nothing, the module path torch's exporter writes in each node's metadata. For each block: its nodes, its op types,
the contrib ops it uses (com.microsoft: GroupQueryAttention, MatMulNBits...) and the weights its nodes hold.
"""

from __future__ import annotations

import ast
from collections import Counter
from typing import TYPE_CHECKING

from core.decode.records import LayerGroup, LayerWeight
from core.model.blocks import BLOCK_WORDS, block_of

if TYPE_CHECKING:
    import onnx

__all__ = ["BLOCK_WORDS", "CONTRIB_DOMAINS", "block_of", "layer_groups"]

CONTRIB_DOMAINS = frozenset({"com.microsoft", "com.microsoft.nchwc", "com.microsoft.experimental"})  # ONNX Runtime's
TORCH_SCOPES = "pkg.torch.onnx.name_scopes"  # torch.onnx's dynamo exporter: the module path of every node
_MAX_NAME = 1_000  # a longer name is read this far only
_MAX_META = 4_000  # a longer metadata value is not a scope list: ignored, never parsed


def _path(node: onnx.NodeProto) -> str:
    """Where the node sits: its name's folders, else the innermost module torch's metadata names."""
    name = node.name[:_MAX_NAME] if isinstance(node.name, str) else ""
    if "/" in name:
        return name
    for prop in node.metadata_props:
        if prop.key == TORCH_SCOPES and len(prop.value) <= _MAX_META:
            try:
                scopes = ast.literal_eval(prop.value)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                return name
            found = [s for s in scopes if isinstance(s, str) and s] if isinstance(scopes, list) else []
            return found[-2] if len(found) > 1 else name  # the last is the node's own name
    return name


def layer_groups(graph: onnx.GraphProto, weights: list[LayerWeight]) -> list[LayerGroup]:
    """The blocks of ``graph`` in order, each with its nodes, op types, contrib ops and the weights its nodes hold
    (``weights``: the graph's, per node); none unless the names show at least two blocks."""
    held = {w.node: (w.parameters, w.bytes) for w in weights}
    found: dict[str, LayerGroup] = {}
    ops: dict[str, Counter[str]] = {}
    for index, node in enumerate(graph.node):
        block = block_of(_path(node))
        if block is None:
            continue
        name, number = block
        group = found.get(name)
        if group is None:
            group = found[name] = LayerGroup(name=name, index=number)
            ops[name] = Counter()
        group.nodes += 1
        ops[name][node.op_type] += 1
        if node.domain in CONTRIB_DOMAINS and node.op_type not in group.contrib_ops:
            group.contrib_ops.append(node.op_type)
        parameters, size = held.get(node.name or f"{node.op_type}_{index}", (0, 0))
        group.parameters += parameters
        group.bytes += size
    if len(found) < 2:
        return []
    for name, group in found.items():
        group.ops = dict(ops[name].most_common())
    return list(found.values())
