"""The model record: what every page knows about the current model."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from core.access import ReadPath
from core.i18n import N_
from core.model.generative import GenerativeLayout
from core.model.metadata import ModelMetadata
from core.notes import Note

__all__ = [
    "FORMAT_LABELS",
    "PYTORCH_FORMATS",
    "ArchitectureMatch",
    "FamilyMember",
    "ModelRecord",
    "TensorSpec",
    "UserCode",
    "format_shape",
    "shape_dim",
]

# format id -> what the user reads (marked for the catalog: translated where shown, core.i18n)
FORMAT_LABELS: dict[str, str] = {
    "onnx": N_("ONNX model"),
    "sample": N_("PyTorch sample (built in code)"),
    "state_dict": N_("PyTorch state_dict"),
    "safetensors": N_("safetensors weights"),
    "torchscript": N_("TorchScript archive"),
    "pt2": N_("torch.export program (.pt2)"),
    "code": N_("PyTorch code with its weights"),
    "hf": N_("Hugging Face folder (config.json and weights)"),
}
PYTORCH_FORMATS = frozenset({"sample", "state_dict", "safetensors", "torchscript", "pt2", "code", "hf"})


@dataclass(kw_only=True)
class TensorSpec:
    """A graph input or output: dims are ints, symbolic names, or "?" when unknown."""

    name: str
    dtype: str
    shape: list[int | str] | None = None  # None: rank unknown
    dynamic_axes: dict[str, str] = field(default_factory=dict)  # axis index -> name (PyTorch models)
    vocabulary: int | None = None  # an integer input that indexes a table (an embedding): the table's rows
    # what the graph does with it (core.model.graph_uses): "waveform" (a strided 1-D Conv opens on it), "trip_count"
    # (a Loop's), "condition" (it chooses an If's branch), "one_hot" (its ids are compared with 0…vocabulary-1)
    use: str = ""
    loop_axis: int | None = None  # the axis a Loop or Scan iterates over: a trip count, not a batch


@dataclass(kw_only=True)
class ArchitectureMatch:
    """How well a state_dict fits one architecture of the sample zoo."""

    architecture: str
    matches: bool
    missing_keys: list[str] = field(default_factory=list)
    unexpected_keys: list[str] = field(default_factory=list)
    shape_mismatches: list[str] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class UserCode:
    """A model's own code and how to build it: what every later worker needs to rebuild it the same way."""

    root: ReadPath  # the .py file, or the folder of the unpacked package: modules are imported from its folder

    @property
    def folder(self) -> str:
        """The folder the code's modules are imported from."""
        path = Path(self.root)
        return str(path.parent if path.suffix == ".py" else path)

    module: str  # the dotted module that defines the class ("model", "mypkg.net")
    class_name: str
    args: str = "{}"  # the constructor's keyword arguments, a JSON object
    package: str = ""  # the package the root folder itself is (a zip with __init__.py at its top), else ""


@dataclass(frozen=True, kw_only=True)
class FamilyMember:
    """One ONNX file of a Hugging Face folder's family (``onnx/model_q4.onnx``): the same model, another precision."""

    key: str  # the file's stem, unique in the folder: "model_q4", "decoder_model_merged_fp16"
    component: str  # "model", or "decoder_model_merged", "encoder_model"... for a model of several graphs
    variant: str  # transformers.js's dtype name: "fp32" (model.onnx), "fp16", "q4", "q4f16", "int8", "quantized"...
    file: str  # its path inside the folder: "onnx/model_q4.onnx"
    path: ReadPath  # where it is
    size_bytes: int  # the file and its external data together
    data_files: list[str] = field(default_factory=list)  # its external data, beside it ("model_q4.onnx_data")


@dataclass(kw_only=True)
class ModelRecord:
    """The model card: identity, format, size and signature of one model."""

    id: str  # sha256 of the model's bytes (main file, then data files in name order)
    name: str
    format: str  # a key of FORMAT_LABELS
    size_bytes: int
    path: str  # main file in the workspace; "" for built-in samples
    files: list[str] = field(default_factory=list)  # every file that belongs to the model
    inputs: list[TensorSpec] = field(default_factory=list)
    outputs: list[TensorSpec] = field(default_factory=list)
    parameter_count: int | None = None
    opset: int | None = None
    ir_version: int | None = None
    producer: str = ""
    node_count: int | None = None  # the main graph's, as written
    # every graph's and function's, as ONNX Runtime runs them (local functions inlined): what a job on the whole
    # model costs; None where not counted (a record an earlier version kept)
    runtime_nodes: int | None = None
    architecture: str = ""  # zoo architecture (samples and state_dicts)
    architecture_matches: list[ArchitectureMatch] = field(default_factory=list)
    external_data: list[str] = field(default_factory=list)
    notes: list[Note | str] = field(default_factory=list)  # str: a sentence an earlier version kept, shown as it is
    metadata: ModelMetadata = field(default_factory=ModelMetadata)  # what the exporter wrote (ONNX metadata_props)
    code: UserCode | None = None  # a model built from its own code (format "code")
    suppresses_boxes: bool = False  # a NonMaxSuppression in its graph or a subgraph: a detector, post-processing kept
    # a Hugging Face folder's (core.model.hf_folder): where it is, and its ONNX files, one family of precisions
    folder: str = ""
    family: list[FamilyMember] = field(default_factory=list)
    generative: GenerativeLayout | None = None  # a language model's cache, found in its graph (core.model.recognise)

    @property
    def format_label(self) -> str:
        return FORMAT_LABELS.get(self.format, self.format)

    @property
    def is_pytorch(self) -> bool:
        return self.format in PYTORCH_FORMATS


def format_shape(shape: list[int | str] | None) -> str:
    """1×3×112×112, with symbolic dims by name; "unknown" when the rank is not known."""
    if shape is None:
        return "unknown"
    if not shape:
        return "scalar"
    return "×".join(shape_dim(d) for d in shape)


_OPERATORS = re.compile(r"[+*/%]|\s-\s|\w-\d")  # a sum, a product, a difference (a name keeps its hyphen)


def shape_dim(dim: int | str) -> str:
    """A dim as a shape writes it: an expression in parentheses (batch×(past + seq)×32, never batch×past + seq×32)."""
    text = str(dim)
    return f"({text})" if isinstance(dim, str) and _OPERATORS.search(text) else text
