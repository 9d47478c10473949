"""How much a weight changed: its values in A and B read tensor by tensor (inline bytes without a copy, external
data read from its file, or mapped when large, once core.model.onnx_file.check_external_data has passed the model),
their bytes compared first, and their values a block at a time, so memory stays bounded by the largest tensor read
whole (64 MB) and a block, not by the model."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from core.diff.records import WeightChange
from core.i18n import N_
from core.model.proto import dtype_name, external_entries, itemsize, tensor_elements
from core.notes import note

if TYPE_CHECKING:
    import onnx

__all__ = ["TensorReader", "compare_dequantized", "compare_tensors", "shape_text"]

# why a weight's values were not compared, said where shown (core.notes)
RETYPED = "{before} → {after}"  # another dtype or shape: compared by type and shape only (no words to translate)
NOT_READ = N_("not read: {error}")
TEXT_DIFFERS = N_("text values differ")

BLOCK = 1 << 20  # elements compared at a time (8 MB of float64 per side)


def shape_text(tensor: onnx.TensorProto) -> str:
    return "×".join(str(d) for d in tensor.dims) or "scalar"


WHOLE = 64 << 20  # an external tensor up to this size is read at once (its bytes compared before any value)


class TensorReader:
    """Reads tensors of one model: inline ones from their bytes, external ones from their data files (checked by
    core.model.onnx_file.check_external_data), each file opened once."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._files: dict[str, BinaryIO] = {}

    def close(self) -> None:
        for fh in self._files.values():
            fh.close()
        self._files.clear()

    def raw(self, tensor: onnx.TensorProto) -> bytes | None:
        """The tensor's bytes as stored (little-endian), or None: typed fields, or external data past WHOLE."""
        import onnx

        if tensor.data_location != onnx.TensorProto.EXTERNAL:
            return tensor.raw_data or None
        entries = external_entries(tensor)
        length = int(entries.get("length", 0) or 0) or tensor_elements(tensor) * itemsize(tensor.data_type)
        if length > WHOLE or tensor.data_type in (onnx.TensorProto.STRING,):
            return None
        location = entries["location"]
        if location not in self._files:
            self._files[location] = (self.folder / location).open("rb")
        fh = self._files[location]
        fh.seek(int(entries.get("offset", 0) or 0))
        return fh.read(length)

    def values(self, tensor: onnx.TensorProto, raw: bytes | None) -> Any:
        """The tensor's values as a flat array: a view of ``raw``, a map of its external file, or a copy."""
        import numpy as np
        import onnx
        from onnx import helper, numpy_helper

        count = tensor_elements(tensor)
        kind = tensor.data_type not in (onnx.TensorProto.STRING, onnx.TensorProto.BFLOAT16)
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.data_type)).newbyteorder("<") if kind else None
        if raw is not None and dtype is not None and dtype.kind in "fiub" and dtype.itemsize * count == len(raw):
            return np.frombuffer(raw, dtype=dtype, count=count)
        if tensor.data_location == onnx.TensorProto.EXTERNAL and dtype is not None:
            entries = external_entries(tensor)
            offset = int(entries.get("offset", 0) or 0)
            path = self.folder / entries["location"]
            return np.memmap(path, dtype=dtype, mode="r", offset=offset, shape=(count,))
        return numpy_helper.to_array(tensor).reshape(-1)


def _plain_equal(ta: onnx.TensorProto, tb: onnx.TensorProto) -> bool:
    """Tensors whose values are in typed fields (not raw bytes) with the same values."""
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


def compare_tensors(
    ta: onnx.TensorProto, tb: onnx.TensorProto, reader_a: TensorReader, reader_b: TensorReader
) -> WeightChange | None:
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
        return change(count, note=note(RETYPED, before=before, after=after))
    try:
        raw_a, raw_b = reader_a.raw(ta), reader_b.raw(tb)
        if raw_a is not None and raw_b is not None and raw_a == raw_b:
            return None  # the common case, settled without reading a value
        if raw_a is None and raw_b is None and not _is_external(ta) and not _is_external(tb) and _plain_equal(ta, tb):
            return None
        a, b = reader_a.values(ta, raw_a), reader_b.values(tb, raw_b)
    except (ValueError, OSError, TypeError) as exc:
        return change(count, note=note(NOT_READ, error=str(exc)[:120]))
    if a.dtype.kind not in "fiub":
        same = bool(np.array_equal(a, b))
        return None if same else change(int(np.count_nonzero(a != b)), note=note(TEXT_DIFFERS))
    differing, most, total, square, base = _accumulate(a, b)
    if not differing:
        return None
    relative = float(np.sqrt(square / base)) if base > 0 else None
    return change(differing, max_abs=most, mean_abs=total / max(count, 1), relative=relative)


def _is_external(tensor: onnx.TensorProto) -> bool:
    return bool(tensor.data_location == 1)  # TensorProto.EXTERNAL


def compare_dequantized(
    ta: onnx.TensorProto, quantized: tuple[Any, Any, Any, int], reader_a: TensorReader, reader_b: TensorReader
) -> WeightChange | None:
    """How the float weight ``ta`` of A differs from B's quantized one, (q − zero point) × scale: ``quantized`` is
    B's (q, scale, zero point or None, axis) tensors; None when the tensors do not fit together."""
    import numpy as np

    q, scale, zero, axis = quantized
    if list(ta.dims) != list(q.dims) or not list(q.dims):
        return None
    try:
        a = reader_a.values(ta, reader_a.raw(ta))
        values = reader_b.values(q, reader_b.raw(q)).astype(np.float32).reshape(list(q.dims))
        s = np.asarray(reader_b.values(scale, reader_b.raw(scale)), dtype=np.float32)
        z = np.asarray(reader_b.values(zero, reader_b.raw(zero)), dtype=np.float32) if zero is not None else 0.0
    except (ValueError, OSError, TypeError):
        return None
    if a.dtype.kind != "f" or (s.size > 1 and s.size != values.shape[axis % values.ndim]):
        return None
    if s.size > 1:  # one scale per channel along ``axis``
        shape = [1] * values.ndim
        shape[axis % values.ndim] = -1
        s = s.reshape(shape)
        z = z.reshape(shape) if isinstance(z, np.ndarray) and z.size > 1 else z
    dequantized = ((values - z) * s).reshape(-1)
    differing, most, total, square, base = _accumulate(a, dequantized)
    return WeightChange(
        tensor=q.name,
        tensor_a=ta.name,
        shape=shape_text(q),
        elements=int(dequantized.size),
        differing=differing,
        max_abs=most,
        mean_abs=total / max(dequantized.size, 1),
        relative=float(np.sqrt(square / base)) if base > 0 else None,
        dequantized=dtype_name(q.data_type),
    )
