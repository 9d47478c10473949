"""Hostile calibration files (.npz) for static quantization: each refused by name before anything is loaded."""

from __future__ import annotations

import io
import time
from pathlib import Path

import numpy as np
import pytest

from core.errors import QuantizeError
from core.model.inputs import BenchInput
from core.quantize import CalibrationRequest, check_calibration


@pytest.mark.parametrize(
    ("what", "words"),
    [
        ("pickle", "not an array"),
        ("object", "Python objects"),
        ("huge", "GB in memory"),
        ("many", "holds 300 arrays"),
    ],
)
def test_a_hostile_calibration_file_is_refused_before_it_is_loaded(tmp_path: Path, what: str, words: str) -> None:
    import pickle
    import zipfile

    npz = tmp_path / "c.npz"
    spec = [BenchInput(name="input", dtype="float32", shape=[1, 768], batch_axis=0)]
    if what == "pickle":
        with zipfile.ZipFile(npz, "w") as archive:
            archive.writestr("input", pickle.dumps({"not": "an array"}))
    elif what == "object":
        np.savez(npz, input=np.array([{"a": 1}], dtype=object))
    elif what == "huge":  # a header that promises 8 GiB, with almost no data behind it
        buffer = io.BytesIO()
        np.lib.format.write_array_header_1_0(buffer, {"descr": "<f4", "fortran_order": False, "shape": (1 << 31, 1)})
        with zipfile.ZipFile(npz, "w") as archive:
            archive.writestr("input.npy", buffer.getvalue())
    else:
        np.savez(npz, **{f"input{i}": np.zeros(1, np.float32) for i in range(300)})
    started = time.monotonic()
    with pytest.raises(QuantizeError, match=words) as caught:
        check_calibration(CalibrationRequest(path=str(npz), inputs=spec))
    assert time.monotonic() - started < 5 and len(str(caught.value)) < 600
