"""What Compare is asked and what it answers: two models run on one input plan, every tensor they share
measured, and the node that first leaves the tolerance."""

from __future__ import annotations

from dataclasses import dataclass, field

from core.access import ReadPath
from core.i18n import N_
from core.model.generative import PROMPT_LENGTH
from core.model.inputs import BenchInput
from core.model.torchload import TorchSource
from core.notes import Note

__all__ = [
    "EXACT_NODES",
    "TOLERANCE_RULE",
    "CompareReport",
    "CompareRequest",
    "CompareSide",
    "Divergence",
    "LayerError",
    "NodeError",
    "StepPlan",
    "StepReport",
    "TensorError",
    "TopToken",
    "Uncompared",
]

EXACT_NODES = N_("{count} other node(s) agree exactly (zero error) and are not listed.")  # said where shown
TOLERANCE_RULE = N_("max |a − b| ≤ {atol} + {rtol} × max |a|, with no infinity or NaN where a has none")


@dataclass(frozen=True, kw_only=True)
class CompareSide:
    """One of the two models: an ONNX file run by ONNX Runtime at ``level`` on ``provider``, or (with
    ``torch_source``) the PyTorch model that ``path`` was exported from, run eagerly module by module."""

    path: ReadPath  # the ONNX file (for a PyTorch side: its export, whose node scopes name the modules)
    label: str = ""  # as the report names it; else the file's name
    level: str = "disable"  # a key of core.runtime.ort.LEVELS
    provider: str = "CPUExecutionProvider"
    torch_source: TorchSource | None = None


@dataclass(frozen=True, kw_only=True)
class StepPlan:
    """Two language models compared at one step of one prompt: ``step`` 0 is the prefill (the prompt at once),
    ``step`` k ≥ 1 the k-th decode step, after the first model's greedy choices of the k tokens before it. The prompt:
    its ids, a text for the tokenizer.json beside the first model (or ``tokenizer``), or ids drawn with ``seed``."""

    step: int = 0
    prompt_ids: list[int] = field(default_factory=list)
    prompt_text: str = ""
    prompt_length: int = PROMPT_LENGTH  # the drawn prompt's tokens (when neither ids nor a text are given)
    seed: int = 0
    tokenizer: ReadPath = ""  # a tokenizer.json when none lies beside the first model (a Hugging Face folder's top)


@dataclass(frozen=True, kw_only=True)
class CompareRequest:
    """Run ``a`` (the reference) and ``b`` on the same inputs and measure every tensor they share: within the
    tolerance when its max absolute error ≤ ``atol`` + ``rtol`` × the reference's largest magnitude."""

    a: CompareSide
    b: CompareSide
    inputs: list[BenchInput]
    seed: int = 0
    rtol: float = 1e-3
    atol: float = 1e-5
    group_mb: int = 32  # the most the tensors of one side held at once take, in MiB (memory stays bounded)
    step: StepPlan | None = None  # two language models at a step of a prompt (``inputs`` then unused)


@dataclass(frozen=True, kw_only=True)
class TensorError:
    """One tensor of both models, measured (the errors of ``b`` against ``a``, in float64)."""

    name: str
    shape: list[int]
    max_abs: float
    mean_abs: float
    relative: float  # max_abs against the reference's largest magnitude
    cosine: float
    within: bool
    nonfinite: int = 0  # values of b that are inf or NaN where a's are finite
    reference_max: float = 0.0  # the reference's largest magnitude


@dataclass(frozen=True, kw_only=True)
class NodeError:
    """A node of ``a`` whose output(s) were compared: its worst output's errors."""

    node: str
    op_type: str
    module: str  # the PyTorch module it came from ("" when the exporter did not say)
    index: int  # its position in a's graph (topological)
    outputs: list[str]
    max_abs: float
    mean_abs: float
    relative: float
    cosine: float
    within: bool
    b_op_type: str = ""  # what ran in b for the same output, when it is another op (fused, quantized, swapped)


@dataclass(frozen=True, kw_only=True)
class Divergence:
    """The earliest node whose output leaves the tolerance while its inputs are within it."""

    node: str
    op_type: str
    module: str
    index: int
    inputs: list[TensorError]  # its inputs' errors (those compared; graph inputs and weights are the same)
    outputs: list[TensorError]
    # the likely causes, most likely first, said where shown (core.notes.say); str: a sentence a result kept by an
    # earlier version holds, shown as it is
    why: list[Note | str]
    cause: str  # "fp16-range", "weight", "op", "fused", "quantized", "int4", "rounding", "past"
    path: list[str]  # the nodes from an input of the model to it, in order
    uncompared_inputs: list[str] = field(default_factory=list)  # inputs fused away: the cause may lie before it


@dataclass(frozen=True, kw_only=True)
class Uncompared:
    """Tensors of ``a`` that could not be compared, and why (fused away at the level compared, renamed...)."""

    reason: str
    count: int
    examples: list[str]


@dataclass(frozen=True, kw_only=True)
class TopToken:
    """One of a model's likeliest next tokens at the step compared."""

    id: int
    logit: float
    text: str = ""  # with a tokenizer


@dataclass(frozen=True, kw_only=True)
class LayerError:
    """One layer (a repeated block: core.model.blocks) of the first model, by its worst compared node."""

    name: str  # "model.layers.3"
    index: int
    nodes: int  # its compared nodes
    max_abs: float
    relative: float  # its worst node's
    within: bool  # every compared node within the tolerance
    first_out: str = ""  # its first node out of the tolerance


@dataclass(kw_only=True)
class StepReport:
    """What two language models did at one step of one prompt, both driven by the same tokens; each fed the past
    it built itself from them (its own dtype), so that the step is compared, not the drift before it."""

    step: int  # 0: the prefill
    prompt_ids: list[int]
    prompt_text: str  # with a tokenizer
    tokens: list[int]  # the first model's greedy tokens before the step (the last one is the step's input)
    past_length: int  # positions in the past each model was fed
    kv_dtype_a: str
    kv_dtype_b: str
    greedy_a: int  # each model's greedy token at the step
    greedy_b: int
    top5_a: list[TopToken]
    top5_b: list[TopToken]
    past: list[TensorError]  # each past input: the second model's own against the first's (empty at the prefill)
    layers: list[LayerError]  # every layer of the first model with a compared node, in order
    divergence_layer: str = ""  # the layer of the first divergence ("" outside any layer, or none)
    tokens_text: str = ""  # ``tokens`` as text, decoded whole (a character split over byte tokens reads right)

    @property
    def same_greedy(self) -> bool:
        return self.greedy_a == self.greedy_b


@dataclass(kw_only=True)
class CompareReport:
    a: str  # the two sides' labels
    b: str
    a_level: str
    b_level: str
    tolerance: Note | str  # the rule (TOLERANCE_RULE), said where shown; str: an earlier version's sentence
    rtol: float
    atol: float
    inputs: dict[str, str]  # input -> "float32 [1, 3, 8, 8], normal"
    outputs: list[TensorError]  # the model outputs, by name (else by position)
    nodes: list[NodeError]  # every node of a with a compared output, in graph order
    matched: int  # tensors compared
    uncompared: list[Uncompared]
    first_divergence: Divergence | None
    b_kind: str  # "fp16", "int8", "int4" or "" (what b is, for the advice)
    # fp16: the nodes to keep in float32; int8 and int4: the nodes to exclude from quantization (or, int4, to quantize
    # with smaller blocks)
    keep_float32: list[str]
    groups: int  # how many runs each side took (the tensors held at once are bounded by group_mb)
    peak_group_mb: float  # the most one group of one side held
    seconds: float
    seconds_to_divergence: float | None  # when the first divergence was known
    notes: list[str] = field(default_factory=list)
    b_path: str = ""  # B's file, for the structural diff beside the comparison
    # why the comparison shows nothing (core.compare.engine's NOTHING_COMPARED or NO_OUTPUT, in English: said in the
    # reader's language where shown), "" when outputs were compared: no verdict stands on it
    proves_nothing: str = ""
    lm: StepReport | None = None  # two language models at a step of a prompt

    @property
    def ranked_nodes(self) -> list[NodeError]:
        """The nodes that differ at all, worst first (those outside the tolerance, then by relative error): a node
        that agrees exactly (an Identity, a Reshape, a Cast) is no lead, and listing it only pads the list."""
        differing = [n for n in self.nodes if not n.within or n.max_abs != 0]  # NaN differs too
        return sorted(differing, key=lambda n: (n.within, -n.relative, n.index))

    @property
    def exact_nodes(self) -> int:
        """How many compared nodes agree exactly (zero error): left out of the ranked list."""
        return len(self.nodes) - len(self.ranked_nodes)
