"""Models that hold too many of one thing, written as protobuf bytes directly: a million TensorProtos through
onnx.helper take tens of seconds to build, a million copies of one 15-byte template a fraction of one.

Each entry is the same bytes but for a seven-digit serial in its name, so every entry has the same length.
Appending fields to a message's bytes adds them to it (repeated fields grow), which is how the node, graph and
model below receive theirs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from onnx import helper

from tests.adversarial.hostile import _field, _number, _varint, _vi

__all__ = ["COUNT_CASES", "CountCase", "count_model", "empty_initializers"]


def _entries(number: int, template: bytes, count: int) -> bytes:
    """``count`` length-delimited fields ``number``, each ``template`` with a 7-digit serial where it says %07d."""
    head = _varint(number << 3 | 2) + _varint(len(template % 0))
    return b"".join([head + template % i for i in range(count)])


def count_model(graph: bytes = b"", node: bytes = b"", model: bytes = b"") -> bytes:
    """x → Relu → y, with ``graph``, ``node`` and ``model`` bytes added to the graph, the node and the model."""
    relu = helper.make_node("Relu", ["x"], ["y"], name="relu").SerializeToString() + node
    body = _field(1, relu) + _field(2, b"g") + graph
    body += _field(11, _vi("x").SerializeToString()) + _field(12, _vi("y").SerializeToString())
    return _number(1, 8) + _field(8, _field(1, b"") + _number(2, 17)) + model + _field(7, body)


# TensorProto: dims [0], FLOAT, a seven-digit name: no data, and none promised (15 bytes with its tag)
_EMPTY_TENSOR = b"\x08\x00\x10\x01\x42\x07%07d"


def empty_initializers(folder: Path, count: int = 1_000_000) -> list[Path]:
    """``count`` empty initializers (a million: a 15 MB file), unused by the model's one node."""
    path = folder / "empty_initializers.onnx"
    path.write_bytes(count_model(graph=_entries(5, _EMPTY_TENSOR, count)))
    return [path]


@dataclass(frozen=True)
class CountCase:
    """A model with ``count`` of one thing; ``limit``: the IntakeLimits field that refuses it when set to 100 ("" for
    a fixed cap); ``refused``: the words the refusal must hold."""

    name: str
    data: bytes
    refused: str
    limit: str = ""


_SPARSE = b"\x0a\x0d" + _EMPTY_TENSOR + _field(2, b"\x08\x00\x10\x07") + b"\x18\x00"  # values, indices, dims [0]
_ATTRIBUTE = b"\x0a\x08a%07d\x18\x01\xa0\x01\x02"  # AttributeProto: a name, i = 1, type INT
_NODE = b"\x0a\x01x\x12\x08n%07d\x22\x04Relu"  # NodeProto: x → Relu → a name of its own
_FUNCTION = b"\x0a\x08f%07d\x52\x01d"  # FunctionProto: a name, domain "d", no body
_METADATA = b"\x0a\x08k%07d\x12\x00"  # StringStringEntryProto: a key, an empty value
_OPSET = b"\x0a\x08d%07d\x10\x01"  # OperatorSetIdProto: a domain, version 1
_TRAINING = b"\x0a\x0a\x12\x08t%07d"  # TrainingInfoProto: an initialization graph with a name, no nodes
_ANNOTATION = b"\x0a\x08q%07d"  # TensorAnnotation: a tensor name

_VALUE_INFO = b"\x0a\x08v%07d"  # ValueInfoProto: a name
# every list of a graph that counts as its value infos (with the model's own input and output: 302)
_VALUE_INFO_LISTS = (
    ("value_infos", 13, _VALUE_INFO),
    ("graph_inputs", 11, _VALUE_INFO),
    ("graph_outputs", 12, _VALUE_INFO),
    ("quantization_annotations", 14, _ANNOTATION),
)

COUNT_CASES = [
    CountCase("nodes", count_model(graph=_entries(1, _NODE, 300)), "301 nodes", "max_nodes"),
    CountCase(
        "initializers", count_model(graph=_entries(5, _EMPTY_TENSOR, 300)), "300 initializers", "max_initializers"
    ),
    CountCase(
        "sparse_initializers", count_model(graph=_entries(15, _SPARSE, 300)), "300 initializers", "max_initializers"
    ),
    *(
        CountCase(name, count_model(graph=_entries(field, entry, 300)), "302 value infos", "max_value_infos")
        for name, field, entry in _VALUE_INFO_LISTS
    ),
    CountCase(
        "node_attributes", count_model(node=_entries(5, _ATTRIBUTE, 300)), "300 node attributes", "max_attributes"
    ),
    CountCase("attributes_on_one_node", count_model(node=_entries(5, _ATTRIBUTE, 1_001)), "1,001 attributes on one"),
    CountCase("local_functions", count_model(model=_entries(25, _FUNCTION, 10_001)), "10,001 local functions"),
    CountCase("metadata_entries", count_model(model=_entries(14, _METADATA, 10_001)), "10,001 metadata entries"),
    CountCase("node_metadata", count_model(node=_entries(9, _METADATA, 10_001)), "10,001 metadata entries"),
    CountCase("graph_metadata", count_model(graph=_entries(16, _METADATA, 10_001)), "10,001 metadata entries"),
    CountCase(
        "training_graph_nodes",
        count_model(model=_field(20, _field(2, _entries(1, _NODE, 300)))),
        "301 nodes",
        "max_nodes",
    ),
    CountCase("training_infos", count_model(model=_entries(20, _TRAINING, 101)), "101 training infos"),
    CountCase("opset_imports", count_model(model=_entries(8, _OPSET, 1_001)), "1,002 opset imports"),
]
