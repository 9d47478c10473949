"""How much a weight changed: its values in A and B read tensor by tensor (inline bytes without a copy, external
data mapped from its file once core.model.onnx_file.check_external_data has passed the model) and compared a
block at a time, so memory stays bounded by the largest block, not the model."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.diff.records import WeightChange
from core.i18n import _
from core.model.proto import dtype_name, external_entries, tensor_elements

if TYPE_CHECKING:
    import onnx

__all__ = ["compare_tensors", "shape_text"]

BLOCK = 1 << 20  # elements compared at a time (8 MB of float64 per side)


def shape_text(tensor: onnx.TensorProto) -> str:
    return "×".join(str(d) for d in tensor.dims) or "scalar"


def _values(tensor: onnx.TensorProto, folder: Path) -> Any:
    """The tensor's values as a flat array: a view of its bytes, a map of its external file, or a copy."""
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    count = tensor_elements(tensor)
    if tensor.data_location == onnx.TensorProto.EXTERNAL:
        entries = external_entries(tensor)
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.data_type)).newbyteorder("<")
        if count == 0:
            return np.zeros(0, dtype=dtype)
        offset = int(entries.get("offset", 0) or 0)
        return np.memmap(folder / entries["location"], dtype=dtype, mode="r", offset=offset, shape=(count,))
    if tensor.raw_data and tensor.data_type not in (onnx.TensorProto.STRING, onnx.TensorProto.BFLOAT16):
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.data_type)).newbyteorder("<")
        if dtype.itemsize * count == len(tensor.raw_data) and dtype.kind in "fiub":
            return np.frombuffer(tensor.raw_data, dtype=dtype, count=count)
    return numpy_helper.to_array(tensor).reshape(-1)


def _same_bytes(ta: onnx.TensorProto, tb: onnx.TensorProto) -> bool:
    """Inline tensors with the same bytes (the common case, settled without reading values)."""
    import onnx

    if ta.data_location == onnx.TensorProto.EXTERNAL or tb.data_location == onnx.TensorProto.EXTERNAL:
        return False
    if ta.raw_data or tb.raw_data:
        return ta.raw_data == tb.raw_data
    return ta.SerializeToString() == tb.SerializeToString() if ta.name == tb.name else _plain_equal(ta, tb)


def _plain_equal(ta: onnx.TensorProto, tb: onnx.TensorProto) -> bool:
    fields = ("float_data", "int32_data", "int64_data", "double_data", "uint64_data", "string_data")
    return all(list(getattr(ta, f)) == list(getattr(tb, f)) for f in fields)


def _accumulate(a: Any, b: Any) -> tuple[int, float, float, float, float]:
    """(differing, max |b − a|, sum |b − a|, sum (b − a)², sum a²) over every element, a block at a time."""
    import numpy as np

    differing, most, total, square, base = 0, 0.0, 0.0, 0.0, 0.0
    for start in range(0, a.size, BLOCK):
        x = np.asarray(a[start : start + BLOCK], dtype=np.float64)
        y = np.asarray(b[start : start + BLOCK], dtype=np.float64)
        same = (x == y) | (np.isnan(x) & np.isnan(y))
        differing += int(same.size - np.count_nonzero(same))
        d = np.abs(y - x)
        d = d[np.isfinite(d)]
        if d.size:
            most = max(most, float(d.max()))
            total += float(d.sum())
            square += float(np.dot(d, d))
        finite = x[np.isfinite(x)]
        base += float(np.dot(finite, finite))
    return differing, most, total, square, base


def compare_tensors(ta: onnx.TensorProto, tb: onnx.TensorProto, folder_a: Path, folder_b: Path) -> WeightChange | None:
    """How ``tb`` differs from ``ta``; None when their values are the same."""
    import numpy as np

    count = tensor_elements(tb)
    shape_a, shape_b = shape_text(ta), shape_text(tb)

    def change(differing: int, **stats: Any) -> WeightChange:
        return WeightChange(
            tensor=tb.name, tensor_a=ta.name, shape=shape_b, elements=count, differing=differing, **stats
        )

    if ta.data_type != tb.data_type or list(ta.dims) != list(tb.dims):
        before, after = f"{dtype_name(ta.data_type)} {shape_a}", f"{dtype_name(tb.data_type)} {shape_b}"
        return change(count, note=f"{before} → {after}")
    if _same_bytes(ta, tb):
        return None
    try:
        a, b = _values(ta, folder_a), _values(tb, folder_b)
    except (ValueError, OSError, TypeError) as exc:
        return change(count, note=_("not read: {error}").format(error=str(exc)[:120]))
    if a.dtype.kind not in "fiub":
        same = bool(np.array_equal(a, b))
        return None if same else change(int(np.count_nonzero(a != b)), note=_("text values differ"))
    differing, most, total, square, base = _accumulate(a, b)
    if not differing:
        return None
    relative = float(np.sqrt(square / base)) if base > 0 else None
    return change(differing, max_abs=most, mean_abs=total / max(count, 1), relative=relative)
