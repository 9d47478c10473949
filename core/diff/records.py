"""What Diff takes and gives: two ONNX models; the nodes added, removed and changed, the weights' changes as
statistics, and what differs in the model around its nodes (inputs, outputs, initializers, opsets, metadata)."""

from __future__ import annotations

from dataclasses import dataclass, field

from core.access import ReadPath
from core.i18n import N_
from core.notes import Note

__all__ = [
    "CHANGE_WORDS",
    "KIND_WORDS",
    "Change",
    "DiffReport",
    "DiffRequest",
    "ModelChange",
    "NodeDiff",
    "WeightChange",
]

# the words for a Change's ``what`` and a ModelChange's ``kind`` (kept in English in the report, translated where
# shown: the CLI's lines and the Compare page)
CHANGE_WORDS = {"op_type": N_("op"), "domain": N_("domain"), "output": N_("outputs")}
KIND_WORDS = {
    "input": N_("graph input"),
    "output": N_("graph output"),
    "initializer": N_("initializer"),
    "opset": N_("opset"),
    "metadata": N_("metadata"),
}


@dataclass(frozen=True, kw_only=True)
class DiffRequest:
    """Diff the ONNX model at ``path_b`` against the one at ``path_a`` (A is the before, B the after)."""

    path_a: ReadPath
    path_b: ReadPath


@dataclass(frozen=True, kw_only=True)
class WeightChange:
    """How a weight's values changed between A and B. ``note`` says why no statistics were taken (a dtype or
    shape that differs); else ``differing`` elements of ``elements`` changed, by at most ``max_abs``."""

    tensor: str  # its name in B
    tensor_a: str  # its name in A
    shape: str  # "64×3×3×3"
    elements: int
    differing: int
    max_abs: float = 0.0  # the largest |b − a|
    mean_abs: float = 0.0  # the mean |b − a| over every element
    relative: float | None = None  # ‖b − a‖ / ‖a‖ (L2); None when A's values are all zero
    # why no statistics were taken, a note said where shown ("float32 → int8": compared by type and shape only); str:
    # what an earlier version kept
    note: Note | str = ""
    dequantized: str = ""  # "int8": B stores it quantized; the statistics compare its dequantized values with A's


@dataclass(frozen=True, kw_only=True)
class Change:
    """One thing that changed on a matched node: its op, an attribute, an input, an output, or its body."""

    what: str  # "op_type", "domain", "attribute", "input", "output", "body"
    detail: str  # the attribute's name, the input's slot, the body's attribute
    before: str
    after: str


@dataclass(frozen=True, kw_only=True)
class NodeDiff:
    """A node added (in B only), removed (in A only), or matched and changed; ``graph`` is the path of the
    graph holding it ("main", or "main / if_0 (If).then_branch" for a body)."""

    node: str  # its name in B (in A for a removed one)
    graph: str
    op_type: str
    index: int  # its place in its graph's node list (B's; A's for a removed one)
    node_a: str = ""  # its name in A, when matched under another name
    matched_by: str = ""  # "name", "quantizer's name" or "position"
    changes: list[Change] = field(default_factory=list)
    weights: list[WeightChange] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class ModelChange:
    """Something around the nodes that differs: a graph input or output, an initializer no node pairs, an
    opset, or a metadata field. ``before`` is "" for one added, ``after`` "" for one removed."""

    kind: str  # "input", "output", "initializer", "opset", "metadata"
    name: str
    before: str
    after: str
    graph: str = "main"


@dataclass(kw_only=True)
class DiffReport:
    """The structural diff of B against A."""

    model_a: str  # the file names
    model_b: str
    nodes_a: int  # nodes in every graph, bodies and local functions included
    nodes_b: int
    added: list[NodeDiff] = field(default_factory=list)
    removed: list[NodeDiff] = field(default_factory=list)
    changed: list[NodeDiff] = field(default_factory=list)
    renamed: list[NodeDiff] = field(default_factory=list)  # matched under another name, nothing else changed
    unchanged: int = 0  # matched nodes with nothing changed (renamed ones included)
    model: list[ModelChange] = field(default_factory=list)
    weights_compared: int = 0  # weight pairs whose values were read
    constant_weights: list[int] = field(default_factory=lambda: [0, 0])  # A's and B's, diffed as initializers
    seconds: float = 0.0

    @property
    def same(self) -> bool:
        return not (self.added or self.removed or self.changed or self.model)
