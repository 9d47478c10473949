"""Which node of graph B is which node of graph A: by name, then by name through a quantizer's or converter's
renames (``conv_quant`` is ``conv``), then by position in the graph: from every pair found, along the tensors
they share with their neighbours (a consumer of a matched tensor with the same op, at the same input, is the
same node), and finally by the order of the nodes of each op type that are left. A re-export that renamed every
node is matched by position alone. Linear in the size of the graph but for the last step, which is bounded."""

from __future__ import annotations

import difflib
import re
from collections import defaultdict, deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    import onnx

__all__ = ["Matching", "Node", "match_nodes", "nodes_of", "tensor_stem"]

# suffixes that ORT's quantizer and the float16 converters add to the names of the nodes they replace
_RENAMES = re.compile(r"(?:_quant|_QuantizeLinear|_DequantizeLinear|_fp16|_int8|_uint8|_float16)+$")
_TENSOR_RENAMES = re.compile(r"(?:_quantized|_fp16|_float16|_int8|_uint8)+$")
_FEW = 64  # nodes left unmatched by name that are aligned by order before (instead of) a walk of the graph
_ALIGN_MOST = 4_000  # the nodes left after the other steps, per side, that are aligned by their op types


class Node(NamedTuple):
    """What matching reads of a node, read from its protobuf once (field access there is slow on 30,000 nodes)."""

    name: str
    op_type: str
    domain: str
    input: tuple[str, ...]
    output: tuple[str, ...]
    proto: Any  # onnx.NodeProto
    bodies: bool  # holds graphs (If, Loop, Scan)


def nodes_of(graph: onnx.GraphProto) -> list[Node]:
    """The nodes of an onnx.GraphProto as ``Node``s."""
    return [
        Node(
            n.name,
            n.op_type,
            n.domain,
            tuple(n.input),
            tuple(n.output),
            n,
            any(a.type in (5, 10) for a in n.attribute),  # AttributeProto.GRAPH, GRAPHS
        )
        for n in graph.node
    ]


@dataclass
class Matching:
    """Pairs of node indices (A's, B's) with how each was found, and the tensor names of A with their B names."""

    pairs: dict[int, tuple[int, str]] = field(default_factory=dict)  # A index -> (B index, how)
    tensors: dict[str, str] = field(default_factory=dict)  # A tensor -> B tensor

    def matched_b(self) -> set[int]:
        return {b for b, _how in self.pairs.values()}


class _Side:
    """One graph's producers and consumers by tensor name."""

    def __init__(self, nodes: Sequence[Node]) -> None:
        self.nodes = nodes
        self.producer: dict[str, tuple[int, int]] = {}
        self.consumers: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for i, node in enumerate(nodes):
            for slot, name in enumerate(node.output):
                if name:
                    self.producer[name] = (i, slot)
            for slot, name in enumerate(node.input):
                if name:
                    self.consumers[name].append((i, slot))


def tensor_stem(name: str) -> str:
    """A tensor's name without what a quantizer adds to it ("conv.weight_quantized" is "conv.weight")."""
    return _TENSOR_RENAMES.sub("", name)


def _unique(keys: Sequence[str]) -> dict[str, int]:
    seen: dict[str, int] = {}
    twice: set[str] = set()
    for i, key in enumerate(keys):
        if not key:
            continue
        if key in seen:
            twice.add(key)
        seen[key] = i
    return {k: i for k, i in seen.items() if k not in twice}


def _by_names(m: Matching, a: Sequence[Node], b: Sequence[Node]) -> None:
    names_b = _unique([n.name for n in b])
    for name, i in _unique([n.name for n in a]).items():
        if name in names_b:
            m.pairs[i] = (names_b[name], "name")
    left_a = [i for i in range(len(a)) if i not in m.pairs]
    taken = m.matched_b()
    left_b = [j for j in range(len(b)) if j not in taken]
    stems_b = _unique([_RENAMES.sub("", b[j].name) for j in left_b])
    for stem, k in _unique([_RENAMES.sub("", a[i].name) for i in left_a]).items():
        if stem in stems_b:
            m.pairs[left_a[k]] = (left_b[stems_b[stem]], "quantizer's name")


def _pair(m: Matching, queue: deque[tuple[int, int]], i: int, j: int, taken: set[int]) -> None:
    m.pairs[i] = (j, "position")
    taken.add(j)
    queue.append((i, j))


def _link(m: Matching, sa: _Side, sb: _Side, ta: str, tb: str, queue: deque[tuple[int, int]], taken: set[int]) -> None:
    """A tensor of A known to be one of B: its unmatched consumers of one op at one input are the same node, and
    so are its producers when neither is matched yet."""
    groups_a: dict[tuple[str, str, int], list[int]] = defaultdict(list)
    groups_b: dict[tuple[str, str, int], list[int]] = defaultdict(list)
    for i, slot in sa.consumers.get(ta, ()):
        if i not in m.pairs:
            groups_a[(sa.nodes[i].op_type, sa.nodes[i].domain, slot)].append(i)
    if groups_a:
        for j, slot in sb.consumers.get(tb, ()):
            if j not in taken:
                groups_b[(sb.nodes[j].op_type, sb.nodes[j].domain, slot)].append(j)
        for key, found in groups_a.items():
            other = groups_b.get(key, [])
            if len(found) == 1 and len(other) == 1:
                _pair(m, queue, found[0], other[0], taken)
    pa, pb = sa.producer.get(ta), sb.producer.get(tb)
    if pa and pb and pa[0] not in m.pairs and pb[0] not in taken and pa[1] == pb[1] and _same_op(sa, sb, pa, pb):
        _pair(m, queue, pa[0], pb[0], taken)


def _same_op(sa: _Side, sb: _Side, pa: tuple[int, int], pb: tuple[int, int]) -> bool:
    na, nb = sa.nodes[pa[0]], sb.nodes[pb[0]]
    return (na.op_type, na.domain) == (nb.op_type, nb.domain)


def _propagate(m: Matching, sa: _Side, sb: _Side, seeds: dict[str, str]) -> None:
    taken = m.matched_b()
    queue: deque[tuple[int, int]] = deque((i, j) for i, (j, _how) in m.pairs.items())
    linked: set[tuple[str, str]] = set()  # a tensor read by many nodes is looked at once
    for ta, tb in seeds.items():
        linked.add((ta, tb))
        _link(m, sa, sb, ta, tb, queue, taken)
    while queue:
        i, j = queue.popleft()
        na, nb = sa.nodes[i], sb.nodes[j]
        for ta, tb in zip(na.output, nb.output, strict=False):
            if ta and tb and (ta, tb) not in linked:
                linked.add((ta, tb))
                _link(m, sa, sb, ta, tb, queue, taken)
        if na.op_type != nb.op_type or na.domain != nb.domain:
            continue  # another op's inputs mean other things (QLinearConv's third is a scale, Conv's a bias)
        for ta, tb in zip(na.input, nb.input, strict=False):
            if ta and tb and (ta, tb) not in linked:
                linked.add((ta, tb))
                _link(m, sa, sb, ta, tb, queue, taken)


def _align(m: Matching, a: Sequence[Node], b: Sequence[Node]) -> None:
    """The nodes still unmatched, aligned in graph order by their op types (a bounded number of them)."""
    taken = m.matched_b()
    left_a = [i for i in range(len(a)) if i not in m.pairs][:_ALIGN_MOST]
    left_b = [j for j in range(len(b)) if j not in taken][:_ALIGN_MOST]
    if not left_a or not left_b:
        return
    ops_a = [f"{a[i].domain}:{a[i].op_type}" for i in left_a]
    ops_b = [f"{b[j].domain}:{b[j].op_type}" for j in left_b]
    blocks = difflib.SequenceMatcher(None, ops_a, ops_b, autojunk=False).get_matching_blocks()
    for block in blocks:
        for k in range(block.size):
            m.pairs[left_a[block.a + k]] = (left_b[block.b + k], "position")


def _by_position(m: Matching, a: Sequence[Node], b: Sequence[Node], seeds: dict[str, str]) -> None:
    sa, sb = _Side(a), _Side(b)
    _propagate(m, sa, sb, seeds)
    if len(m.pairs) < len(a):
        before = len(m.pairs)
        _align(m, a, b)
        if len(m.pairs) > before:  # the aligned pairs name more tensors, and their neighbours
            _propagate(m, sa, sb, {})


def match_nodes(a: Sequence[Node], b: Sequence[Node], seeds: dict[str, str]) -> Matching:
    """Match the nodes of two graphs; ``seeds`` are tensors known to correspond (the graphs' inputs and outputs,
    the tensors of the graph around a body)."""
    m = Matching()
    _by_names(m, a, b)
    left = min(len(a), len(b)) - len(m.pairs)
    if 0 < left <= _FEW:  # a few unnamed nodes among named ones: their order settles them, without a walk
        _align(m, a, b)
        left = min(len(a), len(b)) - len(m.pairs)
    if left > 0:  # else every node of one side is matched already (the common case)
        _by_position(m, a, b, seeds)
    m.tensors.update(seeds)
    for i, (j, _how) in m.pairs.items():
        for ta, tb in zip(a[i].output, b[j].output, strict=False):
            if ta and tb:
                m.tensors.setdefault(ta, tb)
    return m
