"""A server for one ONNX model, written by ONNX Workbench (``python -m core deploy``): ``uvicorn app:app``.

This file is the same for every model: what it serves is read from the JSON files beside it (``signature.json``:
the model's file and its inputs' and outputs' names, dtypes and shapes; ``session.json``: the ONNX Runtime
session options; ``providers.json``: the providers with their options), never written into the code. The session
is made once, when the server starts. A language model's server also has ``POST /generate`` (generation.py, shipped
beside this file, when signature.json has ``generate``), streaming greedy tokens as NDJSON. With session.json's
``cuda_graph`` the model's calls are captured as a CUDA graph at the first request and replayed after (graph.py).

``POST /predict`` takes
  * ``Content-Type: application/json``: ``{"inputs": {name: nested list, ...}}``;
  * ``Content-Type: application/x-npy``: one ``.npy`` file (``numpy.save``), for a model with one input;
  * ``Content-Type: application/x-npz``: one ``.npz`` file (``numpy.savez``) holding an array per input name.
It answers ``{"outputs": {name: nested list, ...}}``, or an ``.npz`` of the outputs when the request says
``Accept: application/x-npz``. Wrong names, dtypes or shapes are answered 422 with what the model takes (naming at
most five offenders); a body that is not what its Content-Type says, 400; another Content-Type, 415; a body over its
limit, 413. ``GET /health`` answers ``{"status": "ok", ...}`` with the model's inputs, outputs and providers.

JSON is strict both ways (no NaN or Infinity in, ``null`` for them out, counted in ``"non_finite"``), at most
``max_json_bytes`` (16 MiB), and parsed ~64 KiB at a time: the parser holds Python's GIL while it runs, and between
pieces the event loop serves other requests. An ``.npy``/``.npz`` body is at most ``max_body_bytes`` (64 MiB), its
arrays ``max_array_bytes`` (64 MiB) inflated, checked from the zip's listing and each ``.npy`` header (name, dtype,
shape, size) before anything is inflated. A body over 4 KiB is parsed, an answer of 200 values or more written, in
a worker thread.

A call to the model runs in a worker thread, so that the server goes on reading other requests while ONNX Runtime
works; a model whose recent calls took less than handing a call to a thread costs (0.1-0.2 ms) is run on the event
loop instead. Serve it with uvicorn's fast parts (``uvloop`` and ``httptools``, in requirements.txt: uvicorn uses
them when they are installed), which take a third off what HTTP costs a small request (1.25 -> 0.80 ms).
"""

from __future__ import annotations

import html
import importlib.util
import io
import json
import math
import re
import struct
import sys
import time
import zipfile
import zlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import onnxruntime as ort
from fastapi import FastAPI, HTTPException, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse, Response
from starlette.concurrency import run_in_threadpool

__all__ = ["app"]

HERE = Path(__file__).resolve().parent
SIGNATURE: dict[str, Any] = json.loads((HERE / "signature.json").read_text(encoding="utf-8"))
SESSION: dict[str, Any] = json.loads((HERE / "session.json").read_text(encoding="utf-8"))
MAX_BODY = int(SIGNATURE.get("max_body_bytes", 64 << 20))
MAX_JSON = int(SIGNATURE.get("max_json_bytes", 16 << 20))  # parsed, a JSON byte costs up to ~13 bytes of memory
MAX_ARRAYS = int(SIGNATURE.get("max_array_bytes", MAX_BODY))  # what an .npy/.npz body's arrays may inflate to
LEVELS = {"disable": 0, "basic": 1, "extended": 2, "layout": 3, "all": 99}
NPY, NPZ, JSON = "application/x-npy", "application/x-npz", "application/json"
INLINE_BELOW_S = 0.0005  # a call this short runs on the event loop: a thread would cost it a third or more
INLINE_BELOW_BYTES = 4096  # a body this small is parsed on the event loop, a larger one in a thread: 4 KiB of JSON
# take about as long to parse (0.14 ms) as handing them to a thread (0.12 ms)
INLINE_BELOW_VALUES = 200  # an answer of fewer values is written on the event loop (~1 us a value as JSON)
NAMED = 5  # an error names at most this many offenders (and how many more)
_NPY_HEAD = 16 + 10_000  # bytes read of an .npy before its header is known: numpy's own cap on a header's length
_NPZ_LISTING = 1024  # bytes of an .npz's listing per member, past its name (46 of header; extra fields, comment)

state: dict[str, Any] = {}


def _shipped(name: str) -> Any:
    """A module shipped beside this file (``answers.py``, ``generation.py``), loaded by its path: the folder is no
    package (uvicorn imports app.py alone), and two servers loaded in one process keep their own."""
    spec = importlib.util.spec_from_file_location(f"{__name__}_{name}", HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


ANSWERS = _shipped("answers")
GRAPHS = _shipped("graph")


def _providers() -> list[Any]:
    """The providers to open the session with, CPU last: providers.json's (each with the options Deploy wrote for its
    runtime, e.g. OpenVINO's device and threads), else session.json's by name; those this build lacks are left out
    (/health says which run)."""
    path = HERE / "providers.json"
    listed: list[Any] = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else SESSION.get("providers", [])
    available = ort.get_available_providers()
    chosen = []
    for item in listed:
        name, options = (item, {}) if isinstance(item, str) else (item[0], dict(item[1]))
        if name in available and name != "CPUExecutionProvider":
            for key, value in options.items():  # a cache folder (TensorRT's engines) lies in this folder
                options[key] = str(value).replace("{here}", str(HERE))
            chosen.append((name, options))
    gpu = any(name in ("CUDAExecutionProvider", "TensorrtExecutionProvider") for name, _ in chosen)
    if gpu and hasattr(ort, "preload_dlls"):  # CUDA's and cuDNN's libraries, from the nvidia-* packages pinned beside
        ort.preload_dlls(cuda=True, cudnn=True, msvc=False)
    return [*chosen, "CPUExecutionProvider"]


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
    providers = GRAPHS.providers(_providers(), SIGNATURE)  # a language model's: without CUDA graphs
    return ort.InferenceSession(str(HERE / SIGNATURE["model_file"]), options, providers=providers)


@asynccontextmanager
async def lifespan(_: FastAPI) -> AsyncIterator[None]:
    state["session"] = make_session()
    state["graphs"] = GRAPHS.Graphs(state["session"], SESSION, SIGNATURE, ort)
    yield
    state.clear()


app = FastAPI(title=f"{SIGNATURE['name']} (ONNX Runtime)", lifespan=lifespan, docs_url=None, redoc_url=None)
GENERATE = (
    _shipped("generation").Generate(app, state, SIGNATURE["generate"], HERE, int(SESSION.get("intra_op_threads", 0)))
    if "generate" in SIGNATURE
    else None
)


def _openapi_url(request: Request) -> str:
    return str(request.scope.get("root_path", "")).rstrip("/") + str(app.openapi_url)


# FastAPI's own /docs and /redoc pages, but for the title: FastAPI writes it into <title> as it is, and the title
# holds the model's name (the OpenAPI schema keeps it as it is: JSON, shown as text)
@app.get("/docs", include_in_schema=False)
async def docs(request: Request) -> HTMLResponse:
    return get_swagger_ui_html(openapi_url=_openapi_url(request), title=f"{html.escape(app.title)} - Swagger UI")


@app.get("/redoc", include_in_schema=False)
async def redoc(request: Request) -> HTMLResponse:
    return get_redoc_html(openapi_url=_openapi_url(request), title=f"{html.escape(app.title)} - ReDoc")


def _shape_text(shape: list[int | None]) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


def _dims(shape: tuple[int, ...] | list[int]) -> str:
    """A shape a body declares, cut short past 8 dimensions."""
    return str(list(shape)) if len(shape) <= 8 else str(list(shape[:8]))[:-1] + f", … {len(shape)} dimensions]"


def _refuse(message: str, status: int = 422) -> HTTPException:
    return HTTPException(status_code=status, detail=message)


def _some(names: list[str]) -> str:
    """At most NAMED of ``names``, each cut short, and how many more: an error never echoes a body back."""
    shown = [n if len(n) <= 60 else n[:60] + "…" for n in names[:NAMED]]
    more = len(names) - len(shown)
    return f"{shown}" + (f" and {more:,} more" if more else "")


def _fits(spec: dict[str, Any], shape: tuple[int, ...]) -> bool:
    wanted = spec["shape"]
    return wanted is None or (
        len(shape) == len(wanted) and all(d is None or d == s for d, s in zip(wanted, shape, strict=True))
    )


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
    if dtype.kind in "iu" and value.size and value.dtype.kind in "iuf" and value.dtype != dtype:
        info = np.iinfo(dtype)
        if value.min() < info.min or value.max() > info.max:
            raise _refuse(f"input {name!r} takes {spec['dtype']}; a value is outside {info.min}..{info.max}")
    if not _fits(spec, value.shape):
        raise _refuse(
            f"input {name!r} has shape {list(value.shape)}; the model takes {_shape_text(shape)} (? is any size)"
        )
    return value.astype(dtype, copy=False)


def _named(arrays: dict[str, Any]) -> dict[str, Any]:
    """The inputs by name, refusing a name the model does not have or one it lacks."""
    names = [spec["name"] for spec in SIGNATURE["inputs"]]
    known = set(names)
    unknown = [n for n in arrays if n not in known]
    missing = [n for n in names if n not in arrays]
    if unknown or missing:
        said = ([f"unknown {_some(unknown)}"] if unknown else []) + ([f"missing {_some(missing)}"] if missing else [])
        raise _refuse(f"inputs {'; '.join(said)}: the model takes {_some(names)}")
    return arrays


_JSON = msgspec.json.Decoder()  # strict JSON (RFC 8259): no NaN or Infinity, no number past a double's range
_OBJECT = msgspec.json.Decoder(dict[str, msgspec.Raw])  # an object's members, each left unparsed
_ITEMS = msgspec.json.Decoder(list[msgspec.Raw])  # a list's items, each left unparsed
_CONSTANT = re.compile(rb'(?<![\w".])(-?(?:NaN|Infinity))(?![\w"])')  # to say which, when one is refused
_PIECE = 64 << 10  # a nested list is parsed this much at a time (see _nested)


def _parsed(decoder: msgspec.json.Decoder, data: bytes | msgspec.Raw) -> Any:
    try:
        return decoder.decode(data)
    except RecursionError:  # the parser's depth is Python's recursion limit (~1,000): a tensor has at most 64
        raise _refuse("the body is nested too deeply: an input is nested lists, one level a dimension", 400) from None
    except msgspec.ValidationError as exc:  # of _OBJECT: not an object; of _JSON: a number past a double's range
        if decoder is _OBJECT:
            raise _refuse('the body must be a JSON object {"inputs": {name: nested list}}') from None
        raise _refuse(f"the body is not JSON this server reads: {str(exc)[:200]}", 400) from None
    except msgspec.DecodeError as exc:
        if found := _CONSTANT.search(bytes(data)):
            raise _refuse(f"the body is not JSON: {found[1].decode()} is not JSON (send numbers)", 400) from None
        raise _refuse(f"the body is not JSON: {str(exc)[:200]}", 400) from None


def _nested(spec: dict[str, Any], raw: msgspec.Raw, depth: int = 0) -> np.ndarray:
    """The array of a nested list, parsed a piece of at most ~64 KiB at a time: the parser holds Python's GIL while
    it runs (16 MiB at once: ~1 s in which the server serves nobody else), and lets go of it between pieces."""
    if len(raw) <= _PIECE:
        return np.asarray(_parsed(_JSON, raw))
    rank = 64 if spec["shape"] is None else len(spec["shape"])
    if depth >= rank:  # (a chain of lists would be read once a level)
        raise _refuse(f"input {spec['name']!r} is nested deeper than the {rank} dimensions it takes")
    try:
        items = _ITEMS.decode(raw)
    except (msgspec.DecodeError, RecursionError):  # not a list (a long string, an object), or not JSON
        return np.asarray(_parsed(_JSON, raw))
    parts: list[np.ndarray] = []
    group: list[msgspec.Raw] = []
    size = 0

    def flush() -> None:
        nonlocal group, size
        if group:
            parts.append(np.asarray(_parsed(_JSON, b"[" + b",".join(group) + b"]")))
            group, size = [], 0

    for item in items:
        if len(item) > _PIECE:  # an item as large as a piece: parsed a piece at a time itself
            flush()
            parts.append(_nested(spec, item, depth + 1)[None])
        else:
            group.append(item)
            size += len(item)
            if size >= _PIECE:
                flush()
    flush()
    return np.concatenate(parts)


def _in_range(spec: dict[str, Any], value: np.ndarray) -> np.ndarray:
    """``value``, unless a number in it is past what the input's float dtype holds: a double past 1.8e308 reads as
    infinity, 1e39 becomes float32's infinity (JSON has neither)."""
    dtype = np.dtype(spec["dtype"])
    if dtype.kind == "f" and value.size and value.dtype.kind in "iuf":
        top = float(np.finfo(dtype).max)
        if not (value.max() <= top and value.min() >= -top):
            raise _refuse(f"input {spec['name']!r} takes {dtype}; a value is outside {dtype}'s range (±{top:.4g})")
    return value


def _from_json(body: bytes) -> dict[str, np.ndarray]:
    top = _parsed(_OBJECT, body)
    if "inputs" not in top:
        raise _refuse('the body must be a JSON object {"inputs": {name: nested list}}')
    given = _named(_parsed(_OBJECT, top["inputs"]))
    feeds = {}
    for spec in SIGNATURE["inputs"]:
        try:
            array = _nested(spec, given[spec["name"]])
        except (ValueError, TypeError) as exc:  # ragged lists, more dimensions than numpy's 64, text among numbers
            raise _refuse(f"input {spec['name']!r} must be nested lists of equal lengths: {str(exc)[:200]}") from None
        feeds[spec["name"]] = _checked(spec, _in_range(spec, array))
    return feeds


def _npy_header(head: bytes, what: str) -> tuple[tuple[int, ...], bool, np.dtype, int]:
    """The shape, order and dtype an .npy file declares, and where its data starts, read from its first bytes."""
    stream = io.BytesIO(head)
    try:
        version = np.lib.format.read_magic(stream)
        read = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}[version]
        shape, fortran, dtype = read(stream)
    except (ValueError, KeyError, TypeError, SyntaxError, RecursionError) as exc:
        raise _refuse(f"{what} is not an .npy file: {str(exc)[:200]}", 400) from None
    return shape, fortran, dtype, stream.tell()


def _declared(spec: dict[str, Any], header: tuple[tuple[int, ...], bool, np.dtype, int], held: int, what: str) -> int:
    """How many elements an .npy's header declares, after checking its dtype and shape against the input's and
    its size against the bytes it holds and the limit."""
    shape, _fortran, dtype, _at = header
    if dtype != np.dtype(spec["dtype"]):
        raise _refuse(
            f"{what} holds {dtype}; input {spec['name']!r} takes {spec['dtype']}: "
            f"save it with .astype({spec['dtype']!r})"
        )
    if not _fits(spec, shape):
        raise _refuse(f"{what} has shape {_dims(shape)}; the model takes {_shape_text(spec['shape'])} (? is any size)")
    count = math.prod(shape)
    size = count * dtype.itemsize
    if min(shape, default=0) < 0 or size > held:
        raise _refuse(f"{what} declares shape {_dims(shape)} ({size:,} bytes) but holds {held:,}", 400)
    if size > MAX_ARRAYS:
        raise _refuse(f"{what} declares {size:,} bytes of {dtype}; the server takes at most {MAX_ARRAYS:,}", 413)
    return count


def _from_npy(body: bytes) -> dict[str, np.ndarray]:
    """The one input, from an .npy body: its header checked, its data read in place (nothing is copied)."""
    spec = SIGNATURE["inputs"][0]
    header = _npy_header(body[:_NPY_HEAD], "the .npy body")
    shape, fortran, dtype, at = header
    count = _declared(spec, header, len(body) - at, "the .npy body")
    array = np.frombuffer(body, dtype=dtype, count=count, offset=at)
    return {spec["name"]: array.reshape(shape[::-1]).T if fortran else array.reshape(shape)}


def _zip_end(body: bytes) -> tuple[int, int]:
    """How many members a zip's end records declare and how many bytes their listing takes (the zip64 record's
    too, where zipfile looks for it), read before zipfile reads the listing: it reads it whole, whatever the count.
    (core/model/archives.py's zip_entry_count does the same for uploads; this file is standalone.)"""
    at = body.rfind(b"PK\x05\x06", max(0, len(body) - (1 << 16) - 22))
    if at < 0 or len(body) - at < 22:
        raise _refuse("the body is not an .npz file: it has no zip end record", 400)
    count, listing = struct.unpack_from("<HI", body, at + 10)
    if at >= 20 and body[at - 20 : at - 16] == b"PK\x06\x07":  # zip64
        offset = struct.unpack_from("<Q", body, at - 12)[0]
        for start in {at - 76, offset}:  # zipfile reads the one before the locator; the locator names one
            record = body[start : start + 56] if start >= 0 else b""
            if len(record) == 56 and record[:4] == b"PK\x06\x06":
                more, size = struct.unpack_from("<QQ", record, 32)
                count, listing = max(count, more), max(listing, size)
    return count, listing


def _from_npz(body: bytes) -> dict[str, np.ndarray]:
    """The inputs, from an .npz body: its listing and every member's header checked before a member is inflated."""
    specs = {spec["name"]: spec for spec in SIGNATURE["inputs"]}
    count, listing = _zip_end(body)
    if count > len(specs):
        plural = "" if len(specs) == 1 else "s"
        raise _refuse(f"the .npz holds {count:,} arrays; the model takes {len(specs)} input{plural}: {_some([*specs])}")
    if listing > sum(len(name.encode()) + 4 + _NPZ_LISTING for name in specs):
        raise _refuse(f"the .npz's listing takes {listing:,} bytes, more than {len(specs)} arrays' need", 400)
    try:
        archive = zipfile.ZipFile(io.BytesIO(body))
    except (zipfile.BadZipFile, ValueError, OSError, struct.error) as exc:
        raise _refuse(f"the body is not an .npz file: {str(exc)[:200]}", 400) from None
    infos = archive.infolist()
    names = [info.filename.removesuffix(".npy") for info in infos]
    if len(set(names)) != len(names) or len(names) > len(specs):
        raise _refuse(f"the .npz holds {_some([i.filename for i in infos])}: one array per input, each once", 400)
    _named(dict.fromkeys(names))
    for info in infos:
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):  # np.savez's and _compressed's
            raise _refuse(f"the .npz member {info.filename!r} is compressed otherwise than numpy.savez does", 400)
        if info.file_size > MAX_ARRAYS:
            said = f"inflates to {info.file_size:,} bytes; the server takes at most {MAX_ARRAYS:,} bytes of arrays"
            raise _refuse(f"the .npz member {info.filename!r} {said} a request", 413)
    if (total := sum(info.file_size for info in infos)) > MAX_ARRAYS:
        raise _refuse(f"the .npz's members inflate to {total:,} bytes; the server takes at most {MAX_ARRAYS:,}", 413)
    feeds = {}
    for info, name in zip(infos, names, strict=True):
        what = f"the .npz member {info.filename!r}"
        try:
            with archive.open(info) as member:  # deflate is inflated a bounded piece at a time
                header = _npy_header(member.read(_NPY_HEAD), what)
            _declared(specs[name], header, info.file_size - header[3], what)
            with archive.open(info) as member:
                feeds[name] = np.lib.format.read_array(member, allow_pickle=False)
        except (zipfile.BadZipFile, zlib.error, ValueError, OSError, EOFError, RuntimeError) as exc:
            raise _refuse(f"{what} cannot be read: {str(exc)[:200]}", 400) from None
    return feeds


def _decode(body: bytes, kind: str) -> dict[str, np.ndarray]:
    """The model's inputs from a body of ``kind``, checked against its signature."""
    if kind == JSON:
        return _from_json(body)
    if kind == NPY:
        if len(SIGNATURE["inputs"]) != 1:
            names = [s["name"] for s in SIGNATURE["inputs"]]
            raise _refuse(
                f"an .npy body is for a model with one input; this one takes {_some(names)}: send an .npz", 415
            )
        return _from_npy(body)
    return _from_npz(body)


def _run(feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    session: ort.InferenceSession = state["session"]
    start = time.perf_counter()
    if (graphs := state.get("graphs")) is not None and graphs.on:  # captured at the first call, replayed after
        outputs = graphs.run(feeds)
    elif not SESSION.get("io_binding"):
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


def _encode(names: list[str], outputs: list[np.ndarray], npz: bool) -> bytes:
    arrays = dict(zip(names, outputs, strict=True))
    return ANSWERS.npz(arrays) if npz else ANSWERS.json_answer(arrays)


@app.get("/health")
def health() -> dict[str, Any]:
    session = state.get("session")
    return {
        "status": "ok" if session is not None else "starting",
        "model": SIGNATURE["name"],
        "inputs": SIGNATURE["inputs"],
        "outputs": SIGNATURE["outputs"],
        "providers": session.get_providers() if session is not None else [],
        **({"generate": GENERATE.health()} if GENERATE is not None else {}),
        **(state["graphs"].health() if "graphs" in state else {}),
    }


def _over(limit: int, kind: str) -> HTTPException:
    json_only = kind == JSON and limit < MAX_BODY
    way_out = f": send the arrays as .npy or .npz (up to {MAX_BODY:,} bytes)" if json_only else ""
    return _refuse(f"the body is over {limit:,} bytes{way_out}", 413)


@app.post("/predict")
async def predict(request: Request) -> Response:
    kind = request.headers.get("content-type", JSON).split(";")[0].strip().lower()
    if kind not in (JSON, NPY, NPZ):
        raise _refuse(f"Content-Type {kind!r} is not served: send {JSON}, {NPY} or {NPZ}", 415)
    limit = min(MAX_JSON, MAX_BODY) if kind == JSON else MAX_BODY
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise _over(limit, kind)
    chunks, size = [], 0
    async for chunk in request.stream():  # read up to the limit, never the whole of a body sent without a length
        size += len(chunk)
        if size > limit:
            raise _over(limit, kind)
        chunks.append(chunk)
    body = b"".join(chunks)
    del chunks
    # parsing a large body on the event loop held every other request (50 MB of JSON: 19 s)
    feeds = _decode(body, kind) if size < INLINE_BELOW_BYTES else await run_in_threadpool(_decode, body, kind)
    del body
    try:
        outputs = await _infer(feeds)
    except (ort.capi.onnxruntime_pybind11_state.InvalidArgument, ort.capi.onnxruntime_pybind11_state.Fail) as exc:
        raise _refuse(f"the model could not run on these inputs: {str(exc)[:1000]}") from exc
    names = [o["name"] for o in SIGNATURE["outputs"]]
    npz = NPZ in request.headers.get("accept", "")
    small = sum(np.asarray(o).size for o in outputs) < INLINE_BELOW_VALUES
    answer = _encode(names, outputs, npz) if small else await run_in_threadpool(_encode, names, outputs, npz)
    return Response(answer, media_type=NPZ if npz else JSON)
