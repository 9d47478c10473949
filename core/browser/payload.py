"""What the browser is sent: the model's bytes, the inputs made here from the plan's seed (core.model.inputs, as
Benchmark makes them) and the server's ONNX Runtime outputs on them, to compare with the browser's. Runs as a job
(core.jobs.BROWSER): the model runs in the sandboxed worker, never in the page's process."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.access import ReadPath
from core.errors import BrowserBenchError
from core.model.inputs import make_inputs, plan_summary
from core.model.measured import MeasuredModel

__all__ = ["RUNTIME_DIR", "BrowserPayload", "BrowserRequest", "RuntimeFiles", "browser_payload", "runtime_files"]

# ONNX Runtime Web's files and the runner, built by `make browser-bundle` (ui/browser_component) and committed
RUNTIME_DIR = Path(__file__).resolve().parents[2] / "ui" / "browser_component" / "dist"


@dataclass(frozen=True, kw_only=True)
class BrowserRequest:
    """The model and plan to send, with the seed of its inputs and the largest model a browser is sent."""

    model: MeasuredModel
    seed: int = 0
    limit_mb: int = 200


@dataclass(frozen=True, kw_only=True)
class Tensor:
    """One input (its own dtype) or reference output (float32), as raw little-endian bytes."""

    name: str
    dtype: str
    shape: list[int]
    data: bytes


@dataclass(frozen=True, kw_only=True)
class BrowserPayload:
    """Everything the browser needs but the runtime."""

    model: bytes
    inputs: list[Tensor]
    reference: list[Tensor]  # the server's outputs, float32; outputs that are not numeric tensors are left out
    plan_inputs: dict[str, dict[str, Any]]  # plan_summary: what a saved run records of its inputs
    seed: int
    ort_version: str  # the server's, which made the reference


@dataclass(frozen=True, kw_only=True)
class RuntimeFiles:
    """The runner and ONNX Runtime Web's builds: the ES module bundle's text and its gzipped .wasm each."""

    runner: str
    wasm_code: bytes
    wasm_binary: bytes
    webgpu_code: bytes
    webgpu_binary: bytes


def runtime_files() -> RuntimeFiles:
    """The committed bundle (ui/browser_component/dist); a clear error when it is missing."""
    names = ("bench.js", "ort.wasm.mjs", "ort.wasm.wasm.gz", "ort.webgpu.mjs", "ort.webgpu.wasm.gz")
    missing = [n for n in names if not (RUNTIME_DIR / n).is_file()]
    if missing:
        raise BrowserBenchError(
            f"ONNX Runtime Web's files {', '.join(missing)} are missing from {RUNTIME_DIR}; rebuild them with "
            "`make browser-bundle`."
        )
    return RuntimeFiles(
        runner=(RUNTIME_DIR / "bench.js").read_text(encoding="utf-8"),
        wasm_code=(RUNTIME_DIR / "ort.wasm.mjs").read_bytes(),
        wasm_binary=(RUNTIME_DIR / "ort.wasm.wasm.gz").read_bytes(),
        webgpu_code=(RUNTIME_DIR / "ort.webgpu.mjs").read_bytes(),
        webgpu_binary=(RUNTIME_DIR / "ort.webgpu.wasm.gz").read_bytes(),
    )


def refuse_large(path: ReadPath, limit_mb: int) -> None:
    """Refuse, before anything is read or sent, a model (with its external data) larger than ``limit_mb``."""
    folder = Path(path).parent
    size = os.path.getsize(path)
    data = [p for p in folder.iterdir() if p.is_file() and p != Path(path) and p.suffix in (".data", ".bin")]
    size += sum(p.stat().st_size for p in data)
    if size > limit_mb * 1024 * 1024:
        raise BrowserBenchError(
            f"The model is {size / 1024 / 1024:,.0f} MB; a browser is sent models up to {limit_mb} MB (the setting "
            "browser_model_mb), so nothing was sent. Benchmark it on the server, or quantize it to make it smaller."
        )


def _model_bytes(path: str) -> bytes:
    """The model as one file: its own bytes, or with its external data taken in (a browser gets one buffer)."""
    import onnx

    model = onnx.load(path, load_external_data=False)
    if not any(t.data_location == onnx.TensorProto.EXTERNAL for t in model.graph.initializer):
        return Path(path).read_bytes()
    from core.model.onnx_file import read_external_data

    return read_external_data(model, Path(path).parent).SerializeToString()


def _reference(path: str, feeds: dict[str, object]) -> list[Tensor]:
    import numpy as np
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    outputs = session.run(None, feeds)
    out = []
    for meta, value in zip(session.get_outputs(), outputs, strict=True):
        if isinstance(value, np.ndarray) and (value.dtype.kind in "biuf"):
            array = np.ascontiguousarray(value, dtype="<f4")
            out.append(Tensor(name=meta.name, dtype="float32", shape=list(array.shape), data=array.tobytes()))
    return out


def browser_payload(request: BrowserRequest) -> BrowserPayload:
    """The model's bytes, its inputs at batch 1 from the plan's seed, and the server's outputs on them."""
    import onnxruntime as ort

    measured = request.model
    refuse_large(measured.path, request.limit_mb)
    feeds = make_inputs(measured.inputs, 1, request.seed)
    inputs = [
        Tensor(
            name=name,
            dtype=str(array.dtype),
            shape=list(array.shape),
            data=array.astype(array.dtype.newbyteorder("<")).tobytes(),
        )
        for name, array in feeds.items()
    ]
    return BrowserPayload(
        model=_model_bytes(measured.path),
        inputs=inputs,
        reference=_reference(measured.path, feeds),
        plan_inputs=plan_summary(measured.inputs),
        seed=request.seed,
        ort_version=ort.__version__,
    )
