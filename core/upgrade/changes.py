"""What the version converter changed, in a learner's words: nodes replaced by another op, nodes added or removed,
and nodes kept with a newer version of their op (with the attributes and inputs that changed, and why).

onnx's converter keeps the name of every value it does not remove, so each node of the original is found in the
new version by the value it computes.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from core.model.proto import walk_graphs
from core.notes import Note, clauses, note
from core.upgrade import sentences as say
from core.upgrade.records import OpChange

if TYPE_CHECKING:
    import onnx

__all__ = ["describe_changes"]

_WHY_DROPPED = say.WHY_DROPPED  # attributes the standard dropped on the way, and why
# a node's changes, each a clause of its own, joined the reader's way (not a sentence of its own: nothing to translate)
_CLAUSES = "{changes}"


def _since(op: str, opset: int, domain: str) -> int | None:
    import onnx

    try:
        return int(onnx.defs.get_schema(op, opset, domain).since_version)
    except onnx.defs.SchemaError:
        return None


def _nodes(model: onnx.ModelProto) -> list[onnx.NodeProto]:
    return [node for visit in walk_graphs(model) for node in visit.graph.node]


def _version_change(before: onnx.NodeProto, after: onnx.NodeProto, opsets: tuple[int, int]) -> Note | None:
    """How a node kept under the same op changed (None when it did not): its version, attributes and inputs."""
    domain = "" if before.domain == "ai.onnx" else before.domain
    old = _since(before.op_type, opsets[0], domain) if domain == "" else None
    new = _since(after.op_type, opsets[1], domain) if domain == "" else None
    dropped = sorted({a.name for a in before.attribute} - {a.name for a in after.attribute})
    gained = sorted({a.name for a in after.attribute} - {a.name for a in before.attribute})
    parts = []
    if old is not None and new is not None and old != new:
        parts.append(note(say.VERSION, old=old, new=new))
    if dropped:
        reasons = sorted({_WHY_DROPPED[name] for name in dropped if name in _WHY_DROPPED})
        if reasons:
            said = say.ATTRIBUTES_DROPPED_WHY if len(dropped) > 1 else say.ATTRIBUTE_DROPPED_WHY
        else:
            said = say.ATTRIBUTES_DROPPED if len(dropped) > 1 else say.ATTRIBUTE_DROPPED
        parts.append(note(said, names=", ".join(dropped), why=clauses(note(reason) for reason in reasons)))
    if gained:
        said = say.ATTRIBUTES_ADDED if len(gained) > 1 else say.ATTRIBUTE_ADDED
        parts.append(note(said, names=", ".join(gained)))
    inputs = len(after.input) - len(before.input)
    if inputs:
        parts.append(note(say.INPUTS_ADDED if inputs > 0 else say.INPUTS_REMOVED, count=abs(inputs)))
    if len(parts) > 1:
        return note(_CLAUSES, changes=clauses(parts))
    return parts[0] if parts else None


def describe_changes(
    original: onnx.ModelProto, converted: onnx.ModelProto, opsets: tuple[int, int]
) -> tuple[list[OpChange], int]:
    """The changes from ``original`` (at ``opsets[0]``) to ``converted`` (at ``opsets[1]``), grouped by op and
    kind, and how many nodes stayed as they were."""
    made: dict[str, onnx.NodeProto] = {}
    for node in _nodes(converted):
        for output in node.output:
            if output:
                made.setdefault(output, node)
    matched: set[int] = set()
    grouped: Counter[tuple[str, str, str]] = Counter()  # (kind, op, the note as its key and values) -> nodes
    said: dict[tuple[str, str, str], Note] = {}

    def count(kind: str, op: str, text: Note) -> None:
        key = (kind, op, repr(text))
        said.setdefault(key, text)
        grouped[key] += 1

    unchanged = 0
    for node in _nodes(original):
        twin = next((made[o] for o in node.output if o in made), None)
        if twin is None:
            count("removed", node.op_type, note(say.REMOVED))
            continue
        matched.add(id(twin))
        if twin.op_type != node.op_type:
            op = f"{node.op_type} → {twin.op_type}"
            count("replaced", op, note(say.REPLACED_BY, old=node.op_type, new=twin.op_type))
            continue
        change = _version_change(node, twin, opsets)
        if change is not None:
            count("version", node.op_type, change)
        else:
            unchanged += 1
    for node in _nodes(converted):
        if id(node) not in matched:
            count("added", node.op_type, note(say.ADDED_BY_CONVERTER))
    order = {"replaced": 0, "version": 1, "added": 2, "removed": 3}
    changes = [
        OpChange(kind=key[0], op=key[1], nodes=nodes, text=said[key])
        for key, nodes in sorted(grouped.items(), key=lambda item: (order[item[0][0]], item[0][1]))
    ]
    return changes, unchanged
