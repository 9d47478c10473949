"""How a PyTorch model is exported to ONNX: the options the Export page, ``python -m core export`` and a notebook's
export cell all write the same ``torch.onnx.export`` call from, with their defaults."""

from __future__ import annotations

from dataclasses import dataclass, field

from core.model.torchload import ExampleValues

__all__ = ["DEFAULT_EXPORTER", "DEFAULT_OPSET", "ExportOptions"]

DEFAULT_OPSET = 18
DEFAULT_EXPORTER = "dynamo"  # torch.export-based, PyTorch's default; "legacy" is the TorchScript-based one


@dataclass(kw_only=True)
class ExportOptions:
    """What the user chose on the Export page (or its defaults, core.export.default_options), JSON-able so it can
    travel to the worker, and written out as the same call in a notebook."""

    input_shapes: dict[str, list[int]]  # ONNX input name -> shape, in the model's argument order
    input_dtypes: dict[str, str] = field(default_factory=dict)  # "int", "float" or "bool": a Python scalar
    input_values: dict[str, float] = field(default_factory=dict)  # the value of each Python scalar argument
    dynamic_axes: dict[str, dict[str, str]] = field(default_factory=dict)  # input -> {axis: label}
    input_kinds: dict[str, ExampleValues] = field(default_factory=dict)  # integer and boolean inputs' values
    output_names: list[str] = field(default_factory=list)
    exporter: str = DEFAULT_EXPORTER  # "dynamo" or "legacy" (core.export.EXPORTERS)
    opset: int = DEFAULT_OPSET
    optimize: bool = True  # dynamo: optimize=True; legacy: do_constant_folding=True
    external_data: bool = False
