"""The inputs a model is run on: one concrete shape and dtype per input, and seeded values for them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.errors import BenchmarkError
from core.model.records import ModelRecord

__all__ = ["BenchInput", "default_inputs", "make_inputs"]


@dataclass
class BenchInput:
    name: str
    dtype: str  # numpy dtype name: float32, int64, bool...
    shape: list[int]  # concrete, at batch 1 (or the model's fixed batch)
    batch_axis: int | None = None  # the axis the batch sweep changes; None when the batch is fixed


def default_inputs(onnx_record: ModelRecord, torch_record: ModelRecord | None = None) -> list[BenchInput]:
    """Concrete benchmark inputs from the model's signature: symbolic dims take the PyTorch example's size
    (same position) when there is one, else 1; a symbolic first axis is the batch axis."""
    inputs = []
    torch_inputs = torch_record.inputs if torch_record is not None else []
    for position, spec in enumerate(onnx_record.inputs):
        example = torch_inputs[position].shape if position < len(torch_inputs) else None
        shape, batch_axis = [], None
        for axis, dim in enumerate(spec.shape or []):
            if isinstance(dim, int) and dim > 0:
                shape.append(dim)
                continue
            if axis == 0:
                batch_axis = 0
            known = example[axis] if example is not None and axis < len(example) else None
            shape.append(int(known) if isinstance(known, int) and known > 0 else 1)
        if batch_axis is not None:
            shape[0] = 1
        inputs.append(BenchInput(spec.name, _numpy_dtype(spec.dtype), shape, batch_axis))
    return inputs


def _numpy_dtype(dtype: str) -> str:
    return {"bfloat16": "float32", "string": "str"}.get(dtype, dtype)


def make_inputs(specs: list[BenchInput], batch: int, seed: int = 0) -> dict[str, Any]:
    """Seeded inputs: floats from a normal distribution, integers in 0..9 (valid ids and indices), bools half."""
    import numpy as np

    rng = np.random.default_rng(seed)
    arrays = {}
    for spec in specs:
        shape = list(spec.shape)
        if spec.batch_axis is not None:
            shape[spec.batch_axis] = batch
        dtype = np.dtype(spec.dtype)
        if dtype.kind == "f":
            arrays[spec.name] = np.asarray(rng.standard_normal(shape), dtype=dtype)
        elif dtype.kind == "b":
            arrays[spec.name] = np.asarray(rng.random(shape) > 0.5)  # an array even for a 0-d shape
        elif dtype.kind in "iu":
            arrays[spec.name] = np.asarray(rng.integers(0, 10, shape), dtype=dtype)
        else:
            raise BenchmarkError(f"Input '{spec.name}' has dtype {spec.dtype}, which the benchmark cannot generate.")
    return arrays
