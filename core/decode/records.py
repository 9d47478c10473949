"""What the Decode page shows, as dataclasses: header fields, tensors, nodes, layers, subgraphs, functions."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from core.access import ReadPath, WritePath
from core.model.records import TensorSpec
from core.notes import Note
from core.tables import RowFile

__all__ = [
    "DecodeRequest",
    "DecodedModel",
    "FunctionInfo",
    "HeaderField",
    "LayerGroup",
    "LayerWeight",
    "NodeInfo",
    "SubgraphInfo",
    "TensorInfo",
]

NOT_WEIGHTS = {"int64", "int32"}  # shapes, axes and indices


@dataclass(frozen=True, kw_only=True)
class DecodeRequest:
    """Decode the ONNX file at ``path`` without loading its external data. With ``out_dir`` the node table goes
    to a file there (``node_rows``), read a page at a time, instead of into the result."""

    path: ReadPath
    with_text: bool = True  # the text form too (costly on large models)
    out_dir: WritePath = ""
    header_only: bool = False  # only the top-level fields, read without parsing (a file intake refused)


@dataclass(kw_only=True)
class HeaderField:
    """One top-level field of the file, as protoc --decode_raw would show it, with what ONNX calls it."""

    offset: int
    length: int  # tag + length prefix + payload, as far as it lies in the file
    hex: str  # the field's first bytes
    number: int
    wire_type: str
    field: str  # ModelProto field name, or "unknown"
    value: str | Note  # as read (a number, a quoted string), or what the field holds in words
    explanation: Note  # how to read its bytes (core.decode.sentences)


@dataclass(slots=True, kw_only=True)  # one per node: tens of thousands in a large model
class TensorInfo:
    name: str
    dtype: str
    shape: list[int]
    elements: int
    bytes: int
    storage: Note  # "inline", "external: file @ offset", or "constant node" (core.decode.sentences)
    graph: str

    @property
    def is_weight(self) -> bool:
        """Integer index and shape tensors (int64, int32) are not learned weights, nor a scalar (an epsilon, a
        0.5): the Model page's card counts Constant-held weights the same way."""
        return self.dtype not in NOT_WEIGHTS and self.elements > 1


@dataclass(slots=True, kw_only=True)  # one per node: tens of thousands in a large model
class NodeInfo:
    index: int
    graph: str  # "main" or a subgraph path
    name: str
    op_type: str
    domain: str
    inputs: list[str]
    outputs: list[str]
    attributes: dict[str, str]
    subgraphs: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        # the same few texts on every node: one copy each, not one per node
        self.graph, self.op_type, self.domain = (
            sys.intern(self.graph),
            sys.intern(self.op_type),
            sys.intern(self.domain),
        )


@dataclass(slots=True, kw_only=True)  # one per node: tens of thousands in a large model
class LayerWeight:
    node: str
    op_type: str
    graph: str
    parameters: int
    bytes: int
    tensors: list[str]


@dataclass(kw_only=True)
class LayerGroup:
    """One repeated block of the main graph (a language model's decoder layer), by its nodes' names."""

    name: str  # with the scopes above it, dotted: "model.layers.3", "transformer.h.3"
    index: int  # its number: 3
    nodes: int = 0
    parameters: int = 0  # the weights its nodes hold
    bytes: int = 0
    ops: dict[str, int] = field(default_factory=dict)  # op type -> nodes, the most frequent first
    contrib_ops: list[str] = field(default_factory=list)  # com.microsoft's ops in it (GroupQueryAttention...)


@dataclass(kw_only=True)
class SubgraphInfo:
    path: str  # e.g. "main / if (If) . then_branch"
    owner: str  # the node that holds it
    owner_op: str
    attribute: str
    node_count: int
    depth: int


@dataclass(kw_only=True)
class FunctionInfo:
    domain: str
    name: str
    inputs: list[str]
    outputs: list[str]
    node_count: int
    op_counts: dict[str, int]


@dataclass(kw_only=True)
class DecodedModel:
    path: str
    size_bytes: int
    header_hex: str
    header: list[HeaderField]
    ir_version: int | None = None
    producer_name: str = ""
    producer_version: str = ""
    domain: str = ""
    model_version: int | None = None
    doc_string: str = ""
    graph_name: str = ""
    opsets: dict[str, int] = field(default_factory=dict)
    metadata: dict[str, str] = field(default_factory=dict)
    inputs: list[TensorSpec] = field(default_factory=list)
    outputs: list[TensorSpec] = field(default_factory=list)
    node_count: int = 0  # main graph
    total_node_count: int = 0  # every graph and function
    op_counts: dict[str, int] = field(default_factory=dict)  # main graph
    initializers: list[TensorInfo] = field(default_factory=list)
    initializer_count: int = 0
    initializer_bytes: int = 0
    parameter_count: int = 0
    external_files: list[str] = field(default_factory=list)
    value_info_count: int = 0
    functions: list[FunctionInfo] = field(default_factory=list)
    subgraphs: list[SubgraphInfo] = field(default_factory=list)
    nodes: list[NodeInfo] = field(default_factory=list)  # empty when they were written to ``node_rows``
    node_rows: RowFile | None = None  # every node, in the job's folder (when it was given one)
    op_types: list[str] = field(default_factory=list)  # of every graph and function
    layers: list[LayerWeight] = field(default_factory=list)
    layer_groups: list[LayerGroup] = field(default_factory=list)  # the main graph's repeated blocks, by name
    text: str = ""
    checker_ok: bool | None = None
    checker_message: Note | None = None  # what onnx.checker said (its own words when it fails)
    shapes_known: int = 0
    shapes_total: int = 0
    problems: list[Note] = field(default_factory=list)  # warnings (core.decode.sentences), said where shown

    @property
    def subgraph_count(self) -> int:
        return len(self.subgraphs)
