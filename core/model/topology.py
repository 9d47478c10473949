"""The shape of a graph's wiring: whether it has a cycle, and the connected pieces of a set of nodes."""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import onnx

__all__ = ["connected_groups", "has_cycle"]


def has_cycle(graph: onnx.GraphProto) -> bool:
    """Whether the nodes of one GraphProto feed each other in a circle (Kahn's algorithm: iterative, so deep
    or cyclic graphs cannot blow the stack). ONNX graphs must be acyclic; no runtime runs one that is not."""
    producers: dict[str, int] = {}
    for index, node in enumerate(graph.node):
        producers.update({output: index for output in node.output if output})
    successors: dict[int, list[int]] = defaultdict(list)
    indegree = [0] * len(graph.node)
    for index, node in enumerate(graph.node):
        for source in {producers[t] for t in node.input if t in producers} - {index}:
            successors[source].append(index)
            indegree[index] += 1
        if any(producers.get(t) == index for t in node.input):  # a node that feeds itself
            return True
    queue = deque(i for i, d in enumerate(indegree) if d == 0)
    seen = 0
    while queue:
        index = queue.popleft()
        seen += 1
        for after in successors[index]:
            indegree[after] -= 1
            if indegree[after] == 0:
                queue.append(after)
    return seen < len(graph.node)


def connected_groups(members: Iterable[int], links: Iterable[tuple[int, int]]) -> list[list[int]]:
    """The connected components of ``members`` joined by ``links`` (union-find), each sorted, in order of
    their smallest member. Links that touch a non-member are ignored."""
    parent = {m: m for m in members}

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for a, b in links:
        if a in parent and b in parent:
            parent[find(a)] = find(b)
    groups: dict[int, list[int]] = defaultdict(list)
    for m in parent:
        groups[find(m)].append(m)
    return sorted((sorted(g) for g in groups.values()), key=lambda g: g[0])
