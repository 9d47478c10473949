"""A server for one ONNX model, written by ONNX Workbench (``python -m core deploy``): ``uvicorn app:app``.

This file is the same for every model: what it serves is read from the JSON files beside it (``signature.json``:
the model's file and its inputs' and outputs' names, dtypes and shapes; ``session.json``: the ONNX Runtime
session options), never written into the code. The session is made once, when the server starts.

``POST /predict`` takes
  * ``Content-Type: application/json``: ``{"inputs": {name: nested list, ...}}``;
  * ``Content-Type: application/x-npy``: one ``.npy`` file (``numpy.save``), for a model with one input;
  * ``Content-Type: application/x-npz``: one ``.npz`` file (``numpy.savez``) holding an array per input name.
It answers ``{"outputs": {name: nested list, ...}}``, or an ``.npz`` of the outputs when the request says
``Accept: application/x-npz``. Wrong names, dtypes or shapes are answered 422 with what the model takes; a body
that is not what its Content-Type says, 400; another Content-Type, 415; a body over the limit, 413.
``GET /health`` answers ``{"status": "ok", ...}`` with the model's inputs, outputs and providers.

A call to the model runs in a worker thread, so that the server goes on reading other requests while ONNX Runtime
works; a model whose recent calls took less than handing a call to a thread costs (0.1-0.2 ms) is run on the event
loop instead. Serve it with uvicorn's fast parts (``uvloop`` and ``httptools``, in requirements.txt: uvicorn uses
them when they are installed), which take a third off what HTTP costs a small request (1.25 -> 0.80 ms).
"""

from __future__ import annotations

import io
import json
import time
import zipfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

__all__ = ["app"]

HERE = Path(__file__).resolve().parent
SIGNATURE: dict[str, Any] = json.loads((HERE / "signature.json").read_text(encoding="utf-8"))
SESSION: dict[str, Any] = json.loads((HERE / "session.json").read_text(encoding="utf-8"))
MAX_BODY = int(SIGNATURE.get("max_body_bytes", 64 << 20))
LEVELS = {"disable": 0, "basic": 1, "extended": 2, "layout": 3, "all": 99}
NPY, NPZ, JSON = "application/x-npy", "application/x-npz", "application/json"
INLINE_BELOW_S = 0.0005  # a call this short runs on the event loop: a thread would cost it a third or more

state: dict[str, Any] = {}


def make_session() -> ort.InferenceSession:
    """The session, with the options of session.json (the ones Tune chose, or ONNX Runtime's defaults)."""
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel(LEVELS[SESSION.get("level", "all")])
    options.intra_op_num_threads = int(SESSION.get("intra_op_threads", 0))
    options.inter_op_num_threads = int(SESSION.get("inter_op_threads", 0))
    parallel = SESSION.get("execution_mode") == "parallel"
    options.execution_mode = ort.ExecutionMode.ORT_PARALLEL if parallel else ort.ExecutionMode.ORT_SEQUENTIAL
    # the threads spin while a call runs and stop when it returns, as ONNX Runtime's default does not: as Tune
    # measured it, and no core is kept busy between requests
    options.add_session_config_entry("session.force_spinning_stop", "1")
    available = ort.get_available_providers()
    wanted = [p for p in SESSION.get("providers", []) if p in available]
    providers = list(dict.fromkeys([*wanted, "CPUExecutionProvider"]))
    return ort.InferenceSession(str(HERE / SIGNATURE["model_file"]), options, providers=providers)


@asynccontextmanager
async def lifespan(_: FastAPI) -> AsyncIterator[None]:
    state["session"] = make_session()
    yield
    state.clear()


app = FastAPI(title=f"{SIGNATURE['name']} (ONNX Runtime)", lifespan=lifespan)


def _shape_text(shape: list[int | None]) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


def _refuse(message: str, status: int = 422) -> HTTPException:
    return HTTPException(status_code=status, detail=message)


def _checked(spec: dict[str, Any], value: np.ndarray) -> np.ndarray:
    """``value`` as the input ``spec`` takes it, or a 422 that says what it takes."""
    name, dtype, shape = spec["name"], np.dtype(spec["dtype"]), spec["shape"]
    if value.dtype.kind in "OUSV":
        raise _refuse(f"input {name!r} must be numbers in nested lists of equal lengths ({spec['dtype']})")
    if dtype.kind == "b" and value.dtype.kind != "b":
        raise _refuse(f"input {name!r} takes booleans (true/false), not {value.dtype}")
    fractions = dtype.kind in "iu" and value.dtype.kind == "f"
    if fractions and not (np.all(np.isfinite(value)) and np.all(value == np.round(value))):
        raise _refuse(f"input {name!r} takes whole numbers ({spec['dtype']}); it was sent fractions")
    if dtype.kind in "iu" and value.size and value.dtype.kind in "iuf":
        info = np.iinfo(dtype)
        if value.min() < info.min or value.max() > info.max:
            raise _refuse(f"input {name!r} takes {spec['dtype']}; a value is outside {info.min}..{info.max}")
    if shape is not None:
        fits = value.ndim == len(shape) and all(d is None or d == s for d, s in zip(shape, value.shape, strict=True))
        if not fits:
            raise _refuse(
                f"input {name!r} has shape {list(value.shape)}; the model takes {_shape_text(shape)} (? is any size)"
            )
    return value.astype(dtype, copy=False)


def _exact(spec: dict[str, Any], value: np.ndarray) -> np.ndarray:
    """An array sent as .npy/.npz keeps its dtype: it must be the input's own."""
    if value.dtype != np.dtype(spec["dtype"]):
        raise _refuse(
            f"input {spec['name']!r} takes {spec['dtype']}, not {value.dtype}: save it with .astype({spec['dtype']!r})"
        )
    return _checked(spec, value)


def _named(arrays: dict[str, Any]) -> dict[str, Any]:
    """The inputs by name, refusing a name the model does not have or one it lacks."""
    names = [spec["name"] for spec in SIGNATURE["inputs"]]
    unknown = sorted(set(arrays) - set(names))
    missing = [n for n in names if n not in arrays]
    if unknown or missing:
        said = "; ".join(
            filter(None, [f"unknown {unknown}" if unknown else "", f"missing {missing}" if missing else ""])
        )
        raise _refuse(f"inputs {said}: the model takes {names}")
    return arrays


def _from_json(body: bytes) -> dict[str, np.ndarray]:
    try:
        data = json.loads(body)
    except ValueError as exc:
        raise _refuse(f"the body is not JSON: {exc}", 400) from exc
    if not isinstance(data, dict) or not isinstance(data.get("inputs"), dict):
        raise _refuse('the body must be a JSON object {"inputs": {name: nested list}}')
    given = _named(data["inputs"])
    feeds = {}
    for spec in SIGNATURE["inputs"]:
        value = given[spec["name"]]
        try:
            array = np.asarray(value)
        except ValueError as exc:  # ragged lists
            raise _refuse(f"input {spec['name']!r} must be nested lists of equal lengths: {exc}") from exc
        feeds[spec["name"]] = _checked(spec, array)
    return feeds


def _from_numpy(body: bytes, kind: str) -> dict[str, np.ndarray]:
    specs = SIGNATURE["inputs"]
    if kind == NPY and len(specs) != 1:
        names = [s["name"] for s in specs]
        raise _refuse(f"an .npy body is for a model with one input; this one takes {names}: send an .npz", 415)
    try:
        loaded = np.load(io.BytesIO(body), allow_pickle=False)
        arrays = {specs[0]["name"]: loaded} if kind == NPY else {k: loaded[k] for k in loaded.files}
    except (ValueError, OSError, EOFError) as exc:
        raise _refuse(f"the body is not an {kind.split('-')[-1]} file: {exc}", 400) from exc
    _named(arrays)
    return {spec["name"]: _exact(spec, arrays[spec["name"]]) for spec in specs}


def _run(feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    session: ort.InferenceSession = state["session"]
    start = time.perf_counter()
    if not SESSION.get("io_binding"):
        outputs = list(session.run(None, feeds))
    else:
        binding = session.io_binding()
        for name, value in feeds.items():
            binding.bind_cpu_input(name, value)
        for output in session.get_outputs():
            binding.bind_output(output.name)
        session.run_with_iobinding(binding)
        outputs = list(binding.copy_outputs_to_cpu())
    took = time.perf_counter() - start
    state["typical_s"] = took if "typical_s" not in state else 0.8 * state["typical_s"] + 0.2 * took
    return outputs


async def _infer(feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """The model's outputs: on the event loop while its calls are shorter than a thread's hand-over (a larger
    input makes the average grow and the next calls go to a thread again), else in a worker thread."""
    if state.get("typical_s", 1.0) < INLINE_BELOW_S:
        return _run(feeds)
    return await run_in_threadpool(_run, feeds)


def _npz(arrays: dict[str, np.ndarray]) -> bytes:
    """The arrays as an .npz file, by name (written entry by entry: ``np.savez(**arrays)`` fails on an output
    named ``file`` or ``allow_pickle``)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, value in arrays.items():
            with archive.open(f"{name}.npy", "w") as entry:
                np.lib.format.write_array(entry, np.asarray(value), allow_pickle=False)
    return buffer.getvalue()


@app.get("/health")
def health() -> dict[str, Any]:
    session = state.get("session")
    return {
        "status": "ok" if session is not None else "starting",
        "model": SIGNATURE["name"],
        "inputs": SIGNATURE["inputs"],
        "outputs": SIGNATURE["outputs"],
        "providers": session.get_providers() if session is not None else [],
    }


@app.post("/predict")
async def predict(request: Request) -> Response:
    kind = request.headers.get("content-type", JSON).split(";")[0].strip().lower()
    if kind not in (JSON, NPY, NPZ):
        raise _refuse(f"Content-Type {kind!r} is not served: send {JSON}, {NPY} or {NPZ}", 415)
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY:
        raise _refuse(f"the body is over {MAX_BODY} bytes", 413)
    chunks, size = [], 0
    async for chunk in request.stream():  # read up to the limit, never the whole of a body sent without a length
        size += len(chunk)
        if size > MAX_BODY:
            raise _refuse(f"the body is over {MAX_BODY} bytes", 413)
        chunks.append(chunk)
    body = b"".join(chunks)
    feeds = _from_json(body) if kind == JSON else _from_numpy(body, kind)
    try:
        outputs = await _infer(feeds)
    except (ort.capi.onnxruntime_pybind11_state.InvalidArgument, ort.capi.onnxruntime_pybind11_state.Fail) as exc:
        raise _refuse(f"the model could not run on these inputs: {exc}") from exc
    names = [o["name"] for o in SIGNATURE["outputs"]]
    if NPZ in request.headers.get("accept", ""):
        return Response(_npz(dict(zip(names, outputs, strict=True))), media_type=NPZ)
    answer = {"outputs": {n: np.asarray(v).tolist() for n, v in zip(names, outputs, strict=True)}}
    return Response(json.dumps(answer), media_type=JSON)
