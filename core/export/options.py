"""What Export takes and gives: the exporters, the request (with the options a user chooses, core.model's
ExportOptions, which the notebook writes out too), and the verification report."""

from __future__ import annotations

from dataclasses import dataclass, field

from core.access import WritePath
from core.errors import ExportError
from core.i18n import N_
from core.model.export_options import DEFAULT_OPSET, ExportOptions
from core.model.inputs import SCALAR_TYPES, scalar_default, value_kind
from core.model.records import ModelRecord, TensorSpec
from core.model.torchload import ExampleValues, TorchSource
from core.model.values import value_kind_of
from core.notes import Check, Note
from core.runtime.outputs import OutputDiff

__all__ = [
    "DEFAULT_OPSET",
    "EXPORTERS",
    "Check",
    "ExportOptions",
    "ExportReport",
    "ExportRequest",
    "GreedyCheck",
    "ShapeTrial",
    "choose_exporter",
    "default_options",
    "example_values",
    "names_of_tensors",
    "offered_axes",
]

# exporter -> (opsets it can be asked for, opsets it really produces as asked, one-line description)
EXPORTERS: dict[str, tuple[range, range, str]] = {
    "dynamo": (
        range(9, 26),
        range(17, 26),
        N_("torch.export-based (dynamo=True): PyTorch's default, captures the graph with torch.export"),
    ),
    "legacy": (range(9, 21), range(9, 21), N_("TorchScript-based (dynamo=False): traces the model; deprecated")),
}


@dataclass(frozen=True, kw_only=True)
class ExportRequest:
    """Export ``source`` with ``options`` into ``out_dir`` as ``file_name``, and verify it."""

    source: TorchSource
    options: ExportOptions
    out_dir: WritePath
    file_name: str = "model.onnx"


@dataclass(kw_only=True)
class ShapeTrial:
    """One run of PyTorch and ONNX Runtime side by side at one set of input shapes."""

    label: str  # "export shape" or e.g. "seq = 21"
    input_shapes: dict[str, list[int]]
    ok: bool
    axis: Note | None = None  # the dynamic axis this trial varies, e.g. "tokens axis 1 (seq)"
    error: Note | None = None
    diffs: list[OutputDiff] = field(default_factory=list)
    # why outputs that matched test nothing (all zero, constant or NaN on both sides); such a trial is not ok
    proves_nothing: Note | None = None
    # why this axis could not be checked: PyTorch itself refuses every size tried (a program's own guards forbid
    # them); such a trial is not ok, and not a failure of the export
    unchecked: Note | None = None


@dataclass(kw_only=True)
class GreedyCheck:
    """A language model's export, verified on one prompt: the greedy tokens PyTorch eager and ONNX Runtime generate
    from it, each per sequence, and each step's largest difference of the last logits (core.export.causal_lm)."""

    label: str  # "input_ids 1×5 +8": the prompt's shape, and how many tokens were generated from it
    prompt: list[list[int]]
    eager: list[list[int]]
    onnx: list[list[int]]
    first_divergent: int | None  # the first step whose tokens differ (0: the first generated token), None: none
    logit_diff: list[float]  # per step, while both had seen the same tokens (up to the first divergent step)


@dataclass(kw_only=True)
class ExportReport:
    ok: bool
    exporter: str
    exporter_reason: Note
    opset_requested: int
    opset_produced: int | None
    opset_note: Note | None  # the opset produced is not the one asked for (a warning)
    onnx_path: str
    files: list[str]
    checks: list[Check]  # what was checked (core.export.verify)
    trials: list[ShapeTrial]
    torch_ops: dict[str, int]
    onnx_ops: dict[str, int]
    changes: list[Note]  # what the export changed, in a learner's words (core.export.verify)
    warnings: list[Note]  # the exporter's, in plain words (core.export.messages), and the app's own
    code: str
    seconds: float
    record: ModelRecord | None = None
    traced_shapes: dict[str, list[int]] = field(default_factory=dict)  # what the exporter saw, when it differs
    reused: bool = False  # a copy of an earlier export of the same sample with the same settings (core.export.reuse)
    greedy: list[GreedyCheck] = field(default_factory=list)  # a language model's: generated with both, per prompt

    @property
    def usable(self) -> bool:
        """Nothing failed, though a comparison may have proved nothing: the model is valid and can be used."""
        return (
            all(c.ok for c in self.checks)
            and bool(self.trials)
            and all(t.ok or t.proves_nothing is not None or t.unchecked is not None for t in self.trials)
        )


def choose_exporter(kind: str, requested: str) -> tuple[str, str]:
    """The exporter that can handle this kind of model, and why it was picked."""
    if kind == "torchscript":
        return "legacy", N_(
            "A TorchScript archive can only be exported by the legacy exporter: torch.export cannot take a "
            "ScriptModule."
        )
    if kind == "pt2":
        return "dynamo", N_("A .pt2 file is already a torch.export program, which only the dynamo exporter takes.")
    if requested not in EXPORTERS:
        raise ExportError(f"Unknown exporter {requested!r}; the exporters are: {', '.join(EXPORTERS)}.")
    if requested == "dynamo":
        return "dynamo", N_("You chose the torch.export-based exporter, PyTorch's default.")
    return "legacy", N_("You chose the legacy TorchScript exporter (deprecated in PyTorch, still widely used).")


def default_options(record: ModelRecord, exporter: str = "dynamo") -> ExportOptions:
    """Export settings from the model itself: its example shapes, dtypes, natural dynamic axes and names."""
    shapes: dict[str, list[int]] = {}
    for spec in record.inputs:
        if spec.shape is None:
            why = "TorchScript keeps no shapes" if record.format == "torchscript" else "a model's own code says none"
            raise ExportError(
                f"The model does not say the shape of its input '{spec.name}' ({why}). Give it, e.g. --input "
                "NAME=1,3,224,224 on the command line or in the shape box on the Export page."
            )
        shapes[spec.name] = [d if isinstance(d, int) and d > 0 else 1 for d in spec.shape]
    return ExportOptions(
        input_shapes=shapes,
        input_dtypes={s.name: s.dtype for s in record.inputs if s.dtype in _TORCH_DTYPES | SCALAR_TYPES},
        input_values={s.name: scalar_default(s.name, s.dtype) for s in record.inputs if s.dtype in SCALAR_TYPES},
        dynamic_axes=offered_axes(record, shapes),
        input_kinds={s.name: kind for s in record.inputs if (kind := example_values(s)) is not None},
        output_names=[s.name for s in record.outputs] if record.format != "torchscript" else [],
        exporter=choose_exporter(record.format, exporter)[0] if record.format in ("torchscript", "pt2") else exporter,
    )


def offered_axes(record: ModelRecord, shapes: dict[str, list[int]] | None = None) -> dict[str, dict[str, str]]:
    """The dynamic axes the Export page and the command line start from: the model's own (a sample's, a program's
    dims), or those the first layer of a model's own code leaves free; within each shape's rank where one is known."""
    offered = {}
    for spec in record.inputs:
        rank = len(shapes[spec.name]) if shapes and spec.name in shapes else None
        axes = {a: label for a, label in spec.dynamic_axes.items() if rank is None or int(a) < rank}
        if axes:
            offered[spec.name] = axes
    return offered


def example_values(spec: TensorSpec) -> ExampleValues | None:
    """An integer or boolean input's example values as the input plan makes them: a mask all on, one segment,
    token ids within the vocabulary it indexes (None for other inputs: floats are drawn from a normal)."""
    if spec.dtype in SCALAR_TYPES or not spec.dtype.startswith(("int", "uint", "bool")):
        return None
    kind, low, high, why = value_kind(spec, spec.dtype, spec.vocabulary)
    if value_kind_of(kind).torch_example is None:  # core.model.values: a kind an export's example cannot take
        return None
    return ExampleValues(kind=kind, low=low, high=high, why=why.english() if why is not None else "")


def names_of_tensors(options: ExportOptions) -> list[str]:
    """The arguments that are tensors (graph inputs), in order; Python scalars are traced as constants."""
    return [n for n in options.input_shapes if options.input_dtypes.get(n) not in SCALAR_TYPES]


_TORCH_DTYPES = {"float32", "float16", "bfloat16", "float64", "int64", "int32", "int8", "uint8", "bool"}
