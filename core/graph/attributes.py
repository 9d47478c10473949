"""A node's key attributes in a few characters ("k=3×3 s=2 p=1,1,1,1"), and its colour key by dtype."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import onnx

__all__ = ["attributes_text", "dtype_key"]

# attribute -> how it is written; lists joined by "×" (sizes) or "," (everything else)
_KEYS = {
    "kernel_shape": ("k", "×"),
    "strides": ("s", "×"),
    "pads": ("p", ","),
    "dilations": ("d", "×"),
    "group": ("g", ","),
    "perm": ("perm", ","),
    "axis": ("axis", ","),
    "axes": ("axes", ","),
    "epsilon": ("eps", ","),
    "to": ("to", ","),
    "mode": ("mode", ","),
    "transB": ("transB", ","),
    "keepdims": ("keepdims", ","),
}
_ORDER = {name: i for i, name in enumerate(_KEYS)}
_MAX_TEXT = 80
_QDQ = {"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear"}
_INTEGER_OPS = {"MatMulInteger", "ConvInteger", "MatMulIntegerToFloat", "DynamicQuantizeMatMul"}
_SHORT = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float64": "fp64"}


def _value_text(name: str, value: Any, joiner: str) -> str:
    if name == "to" and isinstance(value, int):
        from core.model.proto import dtype_name

        return dtype_name(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")[:20]
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, list):
        return joiner.join(f"{v:g}" if isinstance(v, float) else str(v) for v in value[:8]) + (
            "…" if len(value) > 8 else ""
        )
    return str(value)


def attributes_text(node: onnx.NodeProto) -> str:
    """The attributes that say what a node does, short: 'k=3×3 s=2 p=1,1,1,1 g=32'."""
    from onnx import helper

    parts: list[tuple[int, str]] = []
    for attr in node.attribute:
        key = _KEYS.get(attr.name)
        if key is None:
            continue
        try:
            value = helper.get_attribute_value(attr)
        except Exception:
            continue
        parts.append((_ORDER[attr.name], f"{key[0]}={_value_text(attr.name, value, key[1])}"))
    text = " ".join(part for _, part in sorted(parts))  # in the table's order: kernel, strides, pads…
    return text if len(text) <= _MAX_TEXT else text[: _MAX_TEXT - 1] + "…"


def dtype_key(op_type: str, type_label: str) -> str:
    """The colour key of a node by type: 'qdq' for (de)quantize ops, 'int8' for integer kernels, else the
    element type of its output (or input) shortened ('fp32', 'fp16', 'int64'), '?' when unknown."""
    if op_type in _QDQ:
        return "qdq"
    if op_type in _INTEGER_OPS or op_type.startswith("QLinear"):
        return "int8"
    dtype = type_label.split(" ", 1)[0] if type_label else ""
    return _SHORT.get(dtype, dtype) or "?"
