"""How the generated server writes an answer's outputs, shipped beside its app.py as ``answers.py``: an ``.npz`` of
the arrays, or strict JSON (a NaN or an infinity, which JSON cannot write, as null, counted). Standalone: it
imports numpy and msgspec only, never core."""

from __future__ import annotations

import io
import zipfile
from typing import Any

import msgspec
import numpy as np

__all__ = ["json_answer", "npz"]

_VALUES = 16_384  # an output is written as JSON this many values at a time (~2 ms; see _json_array)


def npz(arrays: dict[str, np.ndarray]) -> bytes:
    """The arrays as an .npz file, by name (written entry by entry: ``np.savez(**arrays)`` fails on an output
    named ``file`` or ``allow_pickle``)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, value in arrays.items():
            with archive.open(f"{name}.npy", "w") as entry:
                np.lib.format.write_array(entry, np.asarray(value), allow_pickle=False)
    return buffer.getvalue()


def _json_array(value: np.ndarray) -> bytes:
    """``value`` as a JSON nested list, written _VALUES values at a time (the encoder holds the GIL while it runs)."""
    if value.ndim == 0 or value.size <= _VALUES:
        return msgspec.json.encode(value.tolist())
    rows = _VALUES * len(value) // value.size  # of the first axis, in a piece
    if rows < 1:  # a row is larger than a piece: written a piece at a time itself
        return b"[" + b",".join(_json_array(row) for row in value) + b"]"
    pieces = (msgspec.json.encode(value[at : at + rows].tolist())[1:-1] for at in range(0, len(value), rows))
    return b"[" + b",".join(pieces) + b"]"


def json_answer(arrays: dict[str, np.ndarray]) -> bytes:
    """The arrays as strict JSON: a NaN or an infinity, which JSON cannot write, is null, and counted by output in
    ``"non_finite"`` (an .npz answer holds them as they are)."""
    outputs, odd = {}, {}
    for name, output in arrays.items():
        value = np.asarray(output)
        if value.dtype.kind == "f":
            finite = np.isfinite(value)
            if not finite.all():
                odd[name] = int(value.size - np.count_nonzero(finite))
                value = value.astype(object)
                value[~finite] = None
        outputs[name] = msgspec.Raw(_json_array(value))
    answer: dict[str, Any] = {"outputs": outputs}
    if odd:
        answer["non_finite"] = odd
        answer["note"] = (
            "JSON has no NaN or Infinity: the values non_finite counts are null; send Accept: application/x-npz "
            "to get them as they are"
        )
    return msgspec.json.encode(answer)
