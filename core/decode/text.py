"""The model as text (onnx.printer, large weights left out) and how much of it shape inference can type."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from core.model.checks import SHAPES_FAILED
from core.model.proto import attribute_subgraphs, tensor_elements, walk_graphs
from core.notes import Note, warning

if TYPE_CHECKING:
    import onnx

__all__ = ["SMALL_TENSOR", "shape_coverage", "text_form"]

SMALL_TENSOR = 16  # tensors up to this many elements keep their values in the text form
_VALUE_FIELDS = (
    "raw_data",
    "float_data",
    "int32_data",
    "int64_data",
    "double_data",
    "uint64_data",
    "string_data",
    "external_data",
)


def text_form(model: onnx.ModelProto) -> str:
    """onnx.printer's text, with large weight values left out (they would be megabytes of digits)."""
    import onnx
    import onnx.printer

    light = onnx.ModelProto()
    light.CopyFrom(model)
    # every node list that can hold tensors: the graphs at any depth, and function bodies with their subgraphs
    holders: list[Any] = [visit.graph for visit in walk_graphs(light)]
    for function in light.functions:
        holders.append(function)
        holders.extend(
            visit.graph for node in function.node for _, sub in attribute_subgraphs(node) for visit in walk_graphs(sub)
        )
    for holder in holders:
        tensors = list(getattr(holder, "initializer", [])) + [
            attr.t for node in holder.node for attr in node.attribute if attr.type == onnx.AttributeProto.TENSOR
        ]
        for tensor in tensors:
            if tensor_elements(tensor) > SMALL_TENSOR or tensor.data_location == onnx.TensorProto.EXTERNAL:
                for name in _VALUE_FIELDS:
                    tensor.ClearField(name)
                tensor.data_location = onnx.TensorProto.DEFAULT
    try:
        text = onnx.printer.to_text(light)
    except Exception as exc:
        return f"# the text form could not be printed: {exc}"
    text = text.replace("=  {}", "= {…}")
    return re.sub(r"(\w) \{\}(?=[>,\s])", r"\1 {…}", text)


def shape_coverage(model: onnx.ModelProto) -> tuple[int, int, Note | None]:
    """How many intermediate tensors of the main graph get a known shape from ONNX shape inference, and why none
    when inference fails."""
    import onnx

    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception as exc:
        return 0, 0, warning(SHAPES_FAILED, error=str(exc).strip().splitlines()[0][:300])
    known_values = {v.name: v for v in list(inferred.graph.value_info) + list(inferred.graph.output)}
    outputs = [o for node in model.graph.node for o in node.output if o]
    known = 0
    for name in outputs:
        value = known_values.get(name)
        if value is not None and value.type.HasField("tensor_type") and value.type.tensor_type.HasField("shape"):
            known += 1
    return known, len(outputs), None
