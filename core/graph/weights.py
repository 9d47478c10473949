"""Statistics of a weight or Constant value for the graph view's node details: min, max, mean, standard
deviation, the share of zeros, and values that are not finite. Read from the tensor's own bytes, or from its
external-data file in the model's folder once core.model.onnx_file.check_external_data has passed the model.
Large tensors are sampled and the model's total is bounded, so a 2 GB model costs seconds, not minutes."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import onnx

__all__ = ["SAMPLE_ELEMENTS", "TOTAL_ELEMENTS", "WeightBudget", "weight_stats"]

SAMPLE_ELEMENTS = 4_000_000  # a larger tensor is read as an evenly spaced sample of about this many values
TOTAL_ELEMENTS = 200_000_000  # values read for one model; the weights past it get no statistics
_SMALL = 256  # values: at most this many are summed up in Python, not numpy (its cost is per call)


class WeightBudget:
    """How many values are left to read for one model."""

    def __init__(self, total: int = TOTAL_ELEMENTS) -> None:
        self.left = total
        self.skipped = 0
        self.no_external = "its data is in an external file"  # why external data is not read, without a folder

    def take(self, count: int) -> bool:
        if count > self.left:
            self.skipped += 1
            return False
        self.left -= count
        return True


def _parts(low: float, high: float, mean: float, std: float) -> list[str]:
    return [f"min {_number(low)}", f"max {_number(high)}", f"mean {_number(mean)}", f"std {_number(std)}"]


def _small_stats(values: list[Any], floating: bool) -> str:
    """The statistics of a few values, in Python: a graph of 10,000 small weights (a norm's scale, a bias) took
    seconds in numpy's per-call cost, for the same line."""
    finite = [v for v in values if math.isfinite(v)] if floating else values
    parts = []
    if finite:
        mean = math.fsum(finite) / len(finite)
        std = math.sqrt(math.fsum((v - mean) ** 2 for v in finite) / len(finite))
        parts = _parts(float(min(finite)), float(max(finite)), mean, std)
    zeros = sum(1 for v in values if v == 0)
    parts.append(f"{zeros / len(values):.1%} zeros")
    if len(finite) < len(values):
        parts.append(f"{len(values) - len(finite):,} not finite (NaN or ∞)")
    return " · ".join(parts)


def _number(value: float) -> str:
    if value != value:  # NaN
        return "nan"
    if value == 0 or 1e-3 <= abs(value) < 1e5:
        return f"{value:.4g}".replace("-", "−")
    return f"{value:.2e}".replace("-", "−")


def _external_array(tensor: onnx.TensorProto, folder: Path) -> Any:
    """The tensor's values from its external-data file in ``folder``, whose location, offset and length
    check_external_data has passed (a regular file inside the folder, reached without links, long enough)."""
    import numpy as np
    from onnx import helper

    from core.model.proto import external_entries, tensor_elements

    entries = external_entries(tensor)
    offset, length = int(entries.get("offset", 0) or 0), int(entries.get("length", 0) or 0)
    dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.data_type))
    count = tensor_elements(tensor)
    if length and length < count * dtype.itemsize:
        raise ValueError("its external data is shorter than its shape says")
    return np.memmap(folder / entries["location"], dtype=dtype, mode="r", offset=offset, shape=(count,))


def _plain(data_type: int) -> Any:
    """The little-endian numpy dtype of an ONNX element type that is stored as is in raw_data, else None."""
    import numpy as np
    from onnx import helper

    try:
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(data_type))
    except (KeyError, TypeError, ValueError):
        return None
    return dtype.newbyteorder("<") if dtype.kind in "fiu" and dtype.itemsize in (1, 2, 4, 8) else None


def weight_stats(tensor: onnx.TensorProto, folder: Path | None, budget: WeightBudget) -> str:
    """One line of statistics for an ONNX TensorProto, or why there are none."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    from core.model.proto import tensor_elements

    count = tensor_elements(tensor)
    if tensor.data_type in (onnx.TensorProto.STRING, onnx.TensorProto.UNDEFINED) or count == 0:
        return ""
    if not budget.take(min(count, SAMPLE_ELEMENTS)):
        return ""
    try:
        if tensor.data_location == onnx.TensorProto.EXTERNAL:
            if folder is None:
                return f"statistics not read: {budget.no_external[:200]}"
            values = _external_array(tensor, folder)
        elif tensor.raw_data and count > SAMPLE_ELEMENTS and _plain(tensor.data_type):
            values = np.frombuffer(tensor.raw_data, dtype=_plain(tensor.data_type), count=count)  # no copy
        else:
            values = numpy_helper.to_array(tensor).reshape(-1)
    except (ValueError, OSError, TypeError) as exc:
        return f"statistics not read: {str(exc)[:120]}"
    sampled = values.size > SAMPLE_ELEMENTS
    if sampled:
        values = values[:: values.size // SAMPLE_ELEMENTS + 1]
    values = np.asarray(values)
    if values.dtype.kind not in "biuf":
        return ""
    if values.dtype.kind == "b":
        return f"{np.count_nonzero(values) / values.size:.1%} true"
    if values.size <= 8 and not sampled:  # a shape, an axis list, a scale: the values themselves
        return "value " + ", ".join(
            _number(float(v)) if values.dtype.kind == "f" else str(int(v)).replace("-", "−") for v in values
        )
    if values.size <= _SMALL and not sampled:
        return _small_stats(values.tolist(), values.dtype.kind == "f")
    finite = values
    bad = 0
    if values.dtype.kind == "f":
        mask = np.isfinite(values)
        bad = int(values.size - np.count_nonzero(mask))
        finite = values[mask] if bad else values
    parts = []
    if finite.size:
        low, high = float(finite.min()), float(finite.max())
        mean, std = float(finite.mean(dtype=np.float64)), float(finite.std(dtype=np.float64))
        parts = _parts(low, high, mean, std)
    zeros = int(values.size - np.count_nonzero(values))
    parts.append(f"{zeros / values.size:.1%} zeros")
    if bad:
        parts.append(f"{bad:,} not finite (NaN or ∞)")
    if sampled:
        parts.append(f"from {values.size:,} sampled values")
    return " · ".join(parts)
