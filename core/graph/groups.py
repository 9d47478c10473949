"""Groups for the graph view: node-name scopes, torch's name-scope metadata, and runs of identical siblings."""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from typing import TYPE_CHECKING

from core.graph.records import ViewGroup, ViewNode

if TYPE_CHECKING:
    import onnx

__all__ = ["GroupTable", "finish_groups", "scope_parts"]

TORCH_SCOPES = "pkg.torch.onnx.name_scopes"  # what torch.onnx's dynamo exporter writes on every node
_MAX_META = 4_000  # a longer metadata value is not a scope list: it is ignored, never parsed
_NUMBERED = re.compile(r"^(.*?)(\d+)$")


def _torch_scopes(node: onnx.NodeProto) -> list[str] | None:
    """The module path from torch's metadata, ["encoder", "layer.0", "attn"], or None when it is absent."""
    for prop in node.metadata_props:
        if prop.key != TORCH_SCOPES or len(prop.value) > _MAX_META:
            continue
        try:
            scopes = ast.literal_eval(prop.value)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return None
        if not isinstance(scopes, list) or not all(isinstance(s, str) for s in scopes):
            return None
        parts, previous = [], ""
        for scope in scopes[:-1]:  # the last one is the node's own name
            if not scope:
                continue
            # each entry is a full dotted path ("encoder.layer.0"): keep what it adds to the one before
            parts.append(scope[len(previous) + 1 :] if previous and scope.startswith(previous + ".") else scope)
            previous = scope
        return parts
    return None


def scope_parts(node: onnx.NodeProto) -> list[str]:
    """The scopes a node sits in: torch's metadata when present, else its name's folders
    ('/encoder/layer.0/attn/MatMul' -> encoder, layer.0, attn)."""
    found = _torch_scopes(node)
    if found is not None:
        return found
    name = node.name if isinstance(node.name, str) else ""
    if "/" not in name:
        return []
    return [part for part in name.split("/")[:-1] if part][:32]


class GroupTable:
    """The groups met so far, found by their parent and name (built while the nodes are read)."""

    def __init__(self) -> None:
        self.groups: list[ViewGroup] = []
        self._index: dict[tuple[int, str, str], int] = {}

    def child(self, parent: int, name: str, kind: str = "scope") -> int:
        key = (parent, kind, name)
        found = self._index.get(key)
        if found is None:
            found = len(self.groups)
            path = f"{self.groups[parent].path}/{name}" if parent >= 0 else name
            self.groups.append(ViewGroup(id=found, name=name, path=path, parent=parent, kind=kind))
            self._index[key] = found
        return found

    def nested(self, base: int, parts: list[str]) -> int:
        for part in parts:
            base = self.child(base, part)
        return base

    def new(self, parent: int, name: str, kind: str) -> int:
        """A group that is never shared (a subgraph, a function call), even with the same name."""
        index = len(self.groups)
        path = f"{self.groups[parent].path}/{name}" if parent >= 0 else name
        self.groups.append(ViewGroup(id=index, name=name, path=path, parent=parent, kind=kind))
        return index


def _counts_and_signatures(groups: list[ViewGroup], nodes: list[ViewNode]) -> list[list[str]]:
    """Fill each group's node count (at any depth); return each group's op sequence."""
    ops: list[list[str]] = [[] for _ in groups]
    for node in nodes:
        group = node.group
        if node.op in ("Input", "Output"):
            continue
        while group >= 0:
            groups[group].count += 1
            ops[group].append(node.op)
            group = groups[group].parent
    return ops


def _prune(groups: list[ViewGroup], nodes: list[ViewNode]) -> list[int]:
    """Drop scope groups that hold a single node and no group (`/attn/q/MatMul` needs no box for 'q'): their
    node moves to the parent. Renumbers the rest; returns each kept group's old index."""
    has_child = [False] * len(groups)
    dropped = [False] * len(groups)
    for candidate in reversed(groups):  # children come after their parents: decide them first
        dropped[candidate.id] = candidate.kind == "scope" and candidate.count <= 1 and not has_child[candidate.id]
        if not dropped[candidate.id] and candidate.parent >= 0:
            has_child[candidate.parent] = True
    kept = [g.id for g in groups if not dropped[g.id]]
    new_index = {old: new for new, old in enumerate(kept)}
    for node in nodes:
        group = node.group
        while group >= 0 and group not in new_index:
            group = groups[group].parent
        node.group = new_index.get(group, -1)
    return kept


def finish_groups(groups: list[ViewGroup], nodes: list[ViewNode]) -> list[ViewGroup]:
    """Count each group's nodes, drop single-node scopes, and mark runs of numbered siblings with the same op
    sequence ("layer.0 … layer.11, 12 alike"). Returns the groups kept, renumbered."""
    ops = _counts_and_signatures(groups, nodes)
    kept = _prune(groups, nodes)
    new_index = {old: new for new, old in enumerate(kept)}
    runs: dict[tuple[int, str, int], list[tuple[int, int]]] = defaultdict(list)
    for old in kept:
        group = groups[old]
        match = _NUMBERED.match(group.name)
        if match and group.count and group.kind == "scope":
            runs[(group.parent, match.group(1), hash(tuple(ops[old])))].append((int(match.group(2)), old))
    for members in runs.values():
        if len(members) < 2:
            continue
        members.sort()
        first, last = groups[members[0][1]].name, groups[members[-1][1]].name
        text = f"{first} … {last}, {len(members)} alike"
        for _, index in members:
            groups[index].repeat = text
    result = []
    for new, old in enumerate(kept):
        group = groups[old]
        group.id, group.parent = new, new_index.get(group.parent, -1)
        result.append(group)
    return result
