"""Which of the model's own nodes an ONNX Runtime node stands for, which PyTorch module each came from, and the
layer-by-layer rows that put eager and ONNX Runtime side by side.

ONNX Runtime's optimizer fuses and renames: at EXTENDED a Conv fused with its Relu keeps the Conv's name and
writes the Relu's output; at ALL the NCHWc layout renames it after that output ("relu_nchwc") and inserts
Reorder nodes. So an optimized node is traced back by its name, its outputs, and its name without the layout
suffix, then up the chain of single producers to the op it is named for. The module comes from what the
exporter wrote: the dynamo exporter's ``pkg.torch.onnx.name_scopes`` metadata, or the legacy exporter's node
names ("/layer1/conv/Conv").
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.model.proto import module_of
from core.notes import Note, note
from core.profile.records import EagerModule, LayerRow, NodeTime
from core.profile.words import FUSED_WITH, IN_SCOPE, INSERTED, NO_MODULE, NO_NODE, UNMATCHED

if TYPE_CHECKING:
    import onnx

__all__ = ["Lineage", "layer_rows", "lineage", "module_of"]

_INSERTED = {"ReorderInput", "ReorderOutput", "MemcpyToHost", "MemcpyFromHost"}
_SUFFIXES = ("_nchwc",)


@dataclass(kw_only=True)
class Lineage:
    """The original graph's nodes by name, with their op types, modules and producers."""

    ops: dict[str, str]
    modules: dict[str, str]
    producer: dict[str, str]  # tensor -> the node that writes it
    first_input: dict[str, str]  # node -> its first input tensor
    order: dict[str, int]

    def originals(self, node: onnx.NodeProto) -> tuple[list[str], Note | None]:
        """The original nodes an optimized node stands for, and a note on what ONNX Runtime did to them."""
        if node.op_type in _INSERTED:
            return [], note(INSERTED)
        found: list[str] = []
        names = [node.name, *(node.name[: -len(s)] for s in _SUFFIXES if node.name.endswith(s))]
        for name in names:
            if name in self.ops:
                found.append(name)
            elif name in self.producer:
                found.append(self.producer[name])
        found += [self.producer[t] for t in node.output if t in self.producer]
        found = sorted(set(found), key=lambda n: self.order[n])
        if not found:
            return [], None
        wanted = node.op_type.removeprefix("Fused")
        current = found[0]
        for _ in range(4):  # up the chain to the op the node is named for (a Conv fused with the Relu after it)
            if self.ops[current] == wanted or any(self.ops[n] == wanted for n in found):
                break
            tensor = self.first_input.get(current)
            if tensor not in self.producer:
                break
            current = self.producer[tensor]
            found.insert(0, current)
        found = sorted(set(found), key=lambda n: self.order[n])
        others = [self.ops[n] for n in found if self.ops[n] != wanted]
        return found, note(FUSED_WITH, ops=", ".join(others)) if others and len(found) > 1 else None


def lineage(graph: onnx.GraphProto) -> Lineage:
    ops, modules, producer, first_input, order = {}, {}, {}, {}, {}
    for position, node in enumerate(graph.node):
        name = node.name or f"{node.op_type}_{position}"
        ops[name], modules[name], order[name] = node.op_type, module_of(node), position
        if node.input:
            first_input[name] = node.input[0]
        for tensor in node.output:
            producer[tensor] = name
    return Lineage(ops=ops, modules=modules, producer=producer, first_input=first_input, order=order)


def _leaf_of(scope: str, leaves: set[str]) -> str:
    """The eager leaf module an exporter's scope names: the legacy exporter calls a module's second use
    "relu_1"."""
    if scope in leaves or not scope:
        return scope
    stripped = re.sub(r"_\d+$", "", scope)
    return stripped if stripped in leaves else scope


def layer_rows(modules: list[EagerModule], nodes: Iterable[NodeTime]) -> tuple[list[LayerRow], list[Note]]:
    """Eager leaf modules in the order they ran, each with the ONNX Runtime nodes that came from it. Modules that
    share a node share a row (a Conv fused with its Relu); a module with no node of its own joins the row before
    it when it is a normalization (folded into the Conv before it), else the next row (the dynamo exporter names
    a Conv with a folded BatchNorm after the BatchNorm). Nodes from no leaf module get rows of their own. Also
    the notes on what could not be matched."""
    leaves = {m.name for m in modules}
    nodes = list(nodes)
    by_module: dict[str, list[NodeTime]] = {}
    for node in nodes:
        for scope in node.modules or [node.module]:
            by_module.setdefault(_leaf_of(scope, leaves), []).append(node)
    groups: list[tuple[list[EagerModule], list[NodeTime]]] = []
    used: set[str] = set()
    pending: list[EagerModule] = []
    for module in modules:
        found = [n for n in by_module.get(module.name, []) if n.name not in used]
        shared = groups and {n.name for n in by_module.get(module.name, [])} & {n.name for n in groups[-1][1]}
        if (shared and not found) or (not found and groups and not pending and "Norm" in module.kind):
            groups[-1][0].append(module)
        elif not found:
            pending.append(module)
        else:
            groups.append(([*pending, module], found))
            used.update(n.name for n in found)
            pending = []
    rows = [_row(group, found) for group, found in groups] + [_row([m], []) for m in pending]
    rest: dict[str, list[NodeTime]] = {}
    for node in nodes:
        if node.name not in used:
            rest.setdefault(_leaf_of(node.module, leaves), []).append(node)
    for scope, found in sorted(rest.items(), key=lambda kv: -sum(n.mean_ms for n in kv[1])):
        what = note(IN_SCOPE, scope=scope) if scope else note(NO_MODULE)
        rows.append(
            LayerRow(
                modules=[],
                kinds=[],
                eager_ms=None,
                ort_ms=sum(n.mean_ms for n in found),
                nodes=[n.name for n in found],
                note=[what],
            )
        )
    notes: list[Note] = []
    unmatched = [r for r in rows if r.ort_ms is None]
    if unmatched:
        layers = ", ".join(m for r in unmatched[:8] for m in r.modules)
        notes.append(note(UNMATCHED, count=len(unmatched), layers=layers))
    return rows, notes


def _row(modules: list[EagerModule], nodes: list[NodeTime]) -> LayerRow:
    notes: list[Note] = []
    for node in nodes:  # each once, in the order of the nodes
        if node.note is not None and node.note not in notes:
            notes.append(node.note)
    return LayerRow(
        modules=[m.name for m in modules],
        kinds=[m.kind for m in modules],
        eager_ms=sum(m.mean_ms for m in modules),
        ort_ms=sum(n.mean_ms for n in nodes) if nodes else None,
        nodes=[n.name for n in nodes],
        note=notes if nodes else [note(NO_NODE)],
    )
