"""Deploy: a folder that serves the model (a FastAPI app, its model and session options, pinned requirements, a
Dockerfile, a README) and a Triton model repository beside it; a job, since it opens the model.

The app is fixed code (core/deploy/served_app.py copied as app.py, with the modules it loads beside it: SHIPPED);
what it serves travels as JSON data (signature.json, session.json, providers.json), so nothing a model names is
ever written into code. Names go into Triton's config.pbtxt as escaped protobuf text strings.

A language model (a cache recognised in its graph, core.model.recognise) gets ``POST /generate`` too (signature.json's
``generate``: the cache's inputs and outputs and the limits; its tokenizer.json packaged when one lies beside it).
Deployed for a runtime (the job runs in that runtime's worker), the requirements name its build of ONNX Runtime
(``onnxruntime-openvino``, ``onnxruntime-gpu`` and the libraries requirements-NAME.txt pins with it) and
providers.json its providers with their options (core.runtime.provider_options).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import shutil
import tempfile
import zipfile
from importlib import metadata
from pathlib import Path
from typing import Any

from core.deploy.records import DeployReport, DeployRequest
from core.deploy.served_spec import generate_spec, readme_extra, runtime_providers, runtime_requirements
from core.errors import DeployError
from core.i18n import _
from core.model.onnx_file import check_external_data
from core.runtime.session_config import SessionConfig

__all__ = ["PINNED", "SHIPPED", "generate_server", "pbtxt_string", "triton_config"]

PINNED = ("fastapi", "uvicorn", "onnxruntime", "numpy", "msgspec")  # the server's requirements, as installed here
# uvicorn's fast parts, pinned when installed here (the server works without them, slower): with the marker they need
FAST = {"uvloop": '; sys_platform != "win32"', "httptools": ""}
MAX_BODY = 64 << 20  # bytes the generated server reads of one request
MAX_JSON = 16 << 20  # of a JSON one: parsed, JSON takes up to ~13 bytes of memory a byte
MAX_ARRAYS = MAX_BODY  # bytes an .npy/.npz request's arrays may inflate to (checked from their headers)
_DTYPES = {
    "tensor(float)": "float32", "tensor(double)": "float64", "tensor(float16)": "float16",
    "tensor(int64)": "int64", "tensor(int32)": "int32", "tensor(int16)": "int16", "tensor(int8)": "int8",
    "tensor(uint8)": "uint8", "tensor(uint16)": "uint16", "tensor(uint32)": "uint32", "tensor(uint64)": "uint64",
    "tensor(bool)": "bool",
}  # fmt: skip
_TRITON_TYPES = {
    "float32": "TYPE_FP32", "float64": "TYPE_FP64", "float16": "TYPE_FP16", "int64": "TYPE_INT64",
    "int32": "TYPE_INT32", "int16": "TYPE_INT16", "int8": "TYPE_INT8", "uint8": "TYPE_UINT8",
    "uint16": "TYPE_UINT16", "uint32": "TYPE_UINT32", "uint64": "TYPE_UINT64", "bool": "TYPE_BOOL",
}  # fmt: skip
# Triton's onnxruntime backend: optimization { graph { level } } is 0 for ALL (its default), -1 BASIC, 1 EXTENDED,
# 2 DISABLE_ALL; it has no LAYOUT level, so LAYOUT is served at ALL (the level above it)
_TRITON_LEVELS = {"all": 0, "layout": 0, "basic": -1, "extended": 1, "disable": 2}
_TEMPLATE = Path(__file__).with_name("served_app.py")
# the modules app.py loads from beside it, as the package names them
SHIPPED = {"answers.py": "served_answers.py", "generation.py": "served_generation.py", "graph.py": "served_graph.py"}


def _tensors(items: list[Any], what: str) -> list[dict[str, Any]]:
    """name, dtype and shape (None for an axis of any size) of each of the session's inputs or outputs."""
    found = []
    for item in items:
        dtype = _DTYPES.get(item.type)
        if dtype is None:
            raise DeployError(
                _(
                    "The model's {what} '{name}' is a {type}; the generated server sends and takes numeric tensors "
                    "only ({types})."
                ).format(what=what, name=item.name[:80], type=item.type, types=", ".join(sorted(_DTYPES.values())))
            )
        shape = None if item.shape is None else [d if isinstance(d, int) and d >= 0 else None for d in item.shape]
        found.append({"name": item.name, "dtype": dtype, "shape": shape})
    return found


def pbtxt_string(text: str) -> str:
    """``text`` as a protobuf text-format string literal: quoted, with quotes, backslashes and every byte outside
    printable ASCII escaped (octal), so a name cannot end the string or the line."""
    out = []
    for byte in text.encode("utf-8"):
        char = chr(byte)
        if char in '"\\':
            out.append("\\" + char)
        elif 32 <= byte < 127:
            out.append(char)
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


def _triton_tensor(spec: dict[str, Any]) -> str:
    dims = ", ".join("-1" if d is None else str(d) for d in spec["shape"] or [-1])
    return (
        f"  {{\n    name: {pbtxt_string(spec['name'])}\n    data_type: {_TRITON_TYPES[spec['dtype']]}\n"
        f"    dims: [ {dims} ]\n  }}"
    )


def triton_config(
    name: str, inputs: list[dict[str, Any]], outputs: list[dict[str, Any]], session: SessionConfig
) -> str:
    """config.pbtxt for Triton's onnxruntime backend with the session options (no batching by Triton: the
    dims are the model's own, its batch axis included)."""

    def parameter(key: str, value: object) -> str:
        return f'parameters {{ key: "{key}" value: {{ string_value: "{value}" }} }}'

    lines = [
        f"name: {pbtxt_string(name)}",
        'backend: "onnxruntime"',
        "max_batch_size: 0",
        "input [\n" + ",\n".join(_triton_tensor(s) for s in inputs) + "\n]",
        "output [\n" + ",\n".join(_triton_tensor(s) for s in outputs) + "\n]",
        f"optimization {{ graph {{ level: {_TRITON_LEVELS[session.level]} }} }}",
        parameter("intra_op_thread_count", session.intra_op_threads),
        parameter("inter_op_thread_count", session.inter_op_threads),
        parameter("execution_mode", 1 if session.execution_mode == "parallel" else 0),
    ]
    kind = (
        "KIND_GPU"
        if any(p in session.providers for p in ("CUDAExecutionProvider", "TensorrtExecutionProvider"))
        else "KIND_CPU"
    )
    lines.append(f"instance_group [ {{ count: 1 kind: {kind} }} ]")
    return "\n".join(lines) + "\n"


def _requirements(runtime: str, tokenizer: bool) -> str:
    lines = []
    for package in (*PINNED, "tokenizers") if tokenizer else PINNED:
        if package == "onnxruntime":  # the runtime's build, and the libraries it needs
            lines += runtime_requirements(runtime)
            continue
        try:
            lines.append(f"{package}=={metadata.version(package)}")
        except metadata.PackageNotFoundError:  # not installed here: the server cannot be tested either
            raise DeployError(
                _("{package} is not installed here, so the server cannot be pinned to a tested version.").format(
                    package=package
                )
            ) from None
    for package, marker in FAST.items():
        with contextlib.suppress(metadata.PackageNotFoundError):
            lines.append(f"{package}=={metadata.version(package)}{marker}")
    return "\n".join(lines) + "\n"


_DOCKERFILE = """FROM python:3.11-slim
WORKDIR /srv
COPY requirements.txt .
RUN pip install --no-cache-dir -r requirements.txt
COPY . .
EXPOSE 8000
CMD ["uvicorn", "app:app", "--host", "0.0.0.0", "--port", "8000"]
"""


def _fence(text: str) -> str:
    """A Markdown code fence longer than any run of backticks in ``text`` (a name cannot close it)."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def _served(session: SessionConfig, made_from: str) -> str:
    """What the README says of the model served and of the batch Tune chose."""
    from core.quantize.records import VARIANTS

    said = []
    variant = session.variant
    if variant != "fp32":
        label = VARIANTS[variant].label if variant in VARIANTS else variant
        origin = f", made again from `{_plain(made_from)}` with Quantize's tools as Tune made it" if made_from else ""
        said.append(
            f"`model.onnx` is the {label} variant Tune chose (it passed Quantize's accuracy gate there){origin}."
        )
    if session.batch > 1:
        said.append(
            f"Tune measured the lowest latency per sample at batch {session.batch}: send {session.batch} samples "
            "per request (along the batch axis) where you can; the server runs whatever batch a request holds."
        )
    return ("\n" + "\n\n".join(said) + "\n") if said else ""


def _plain(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9 ._-]", "_", text)[:120]


def _variant(source: Path, key: str, request: DeployRequest, out: Path) -> Path:
    """Variant ``key`` of ``source``, made as Tune makes it (core.tune.sessions), into the job's folder."""
    from core.notes import Note
    from core.quantize.records import VARIANTS
    from core.quantize.variants import is_large, make_variant, range_inputs, stage_source, unstage_source

    if key not in VARIANTS or VARIANTS[key].mode == "static":
        raise DeployError(
            _(
                "The tuned configuration names the variant {variant}, which Tune does not make; serve a variant's file "
                "as the model instead."
            ).format(variant=repr(key)[:60])
        )
    if not request.inputs:
        raise DeployError(_("Making the {variant} variant needs the model's input plan.").format(variant=key))
    notes: list[Note | str] = []
    staged = stage_source(source, out, notes)
    try:
        return make_variant(key, staged, None, out, range_inputs(request.inputs, request.seed), is_large(source))
    finally:
        unstage_source(out)


def _readme(name: str, signature: dict[str, Any], session: SessionConfig, triton: str, made_from: str = "") -> str:
    listing = json.dumps({"inputs": signature["inputs"], "outputs": signature["outputs"]}, indent=2)
    options = json.dumps(session.to_data(), indent=2)
    fence, fence2 = _fence(listing), _fence(options)
    served = _served(session, made_from) + readme_extra(signature.get("generate"), session.runtime)
    return f"""# A server for {_plain(name)}

Written by ONNX Workbench (`python -m core deploy`). Run it with

    pip install -r requirements.txt
    uvicorn app:app --host 127.0.0.1 --port 8000

or with Docker: `docker build -t model-server . && docker run -p 8000:8000 model-server`.

## The API

- `GET /health`: `{{"status": "ok", ...}}` with the inputs, outputs and providers in use.
- `POST /predict` with `Content-Type: application/json`: `{{"inputs": {{name: nested list}}}}`; the answer is
  `{{"outputs": {{name: nested list}}}}`.
- Large tensors: `Content-Type: application/x-npy` with one `.npy` file (`numpy.save`) for a model with one
  input, or `application/x-npz` with an `.npz` (`numpy.savez`, one array per input name); arrays sent so must
  have the input's own dtype. Send `Accept: application/x-npz` to get the outputs as an `.npz`.
- JSON is strict both ways: `NaN`, `Infinity` and lists nested deeper than a tensor's are refused (400); an
  output's NaN or infinity is `null` in the answer, counted by output in `"non_finite"` (an `.npz` answer holds
  them as they are).
- Wrong names, dtypes or shapes are answered 422 with what the model takes; a body that is not JSON (or not
  .npy/.npz), 400; another Content-Type, 415; a JSON body over {MAX_JSON >> 20} MiB, an .npy/.npz body over
  {MAX_BODY >> 20} MiB or arrays that inflate past {MAX_ARRAYS >> 20} MiB, 413 (the limits are `max_json_bytes`,
  `max_body_bytes` and `max_array_bytes` in `signature.json`).

The model's inputs and outputs (`null` in a shape is an axis of any size):

{fence}json
{listing}
{fence}

## Session options

`session.json`, as Tune chose them (or ONNX Runtime's defaults); the session is made once, at start:

{fence2}json
{options}
{fence2}
{served}
## Triton

`triton/` is a model repository for Triton Inference Server's onnxruntime backend with the same options
(`tritonserver --model-repository=triton`); the model is `{triton}`.
"""


def _copy_model(source: Path, folder: Path, name: str) -> None:
    """The model as ``name`` in ``folder``, with its external data files (checked to stay in its own folder)."""
    import onnx

    model = onnx.load(str(source), load_external_data=False)
    folder.mkdir(parents=True, exist_ok=True)
    for data in check_external_data(model, source.parent):
        target = folder / data.relative_to(source.parent)  # as check_external_data reached it (a job sees links)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(data, target)
    shutil.copyfile(source, folder / name)


def _provider_options(session: SessionConfig, scratch: Path) -> list[Any]:
    """The session's providers with the options the app gives each (core.runtime.provider_options), as JSON: a
    folder of its own (TensorRT's engine cache) is written as ``{here}``, the server's folder."""
    from core.runtime.provider_options import session_providers

    listed = session_providers(
        session.session_providers(), str(scratch), threads=session.intra_op_threads, cuda_graph=session.cuda_graph
    )
    return [
        [name, {k: str(v).replace(str(scratch), "{here}") for k, v in options.items()}]
        for name, options in (item if isinstance(item, tuple) else (item, {}) for item in listed)
    ]


def _triton_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "_", name.removesuffix(".onnx")).strip("_")[:64] or "model"


def generate_server(request: DeployRequest) -> DeployReport:
    """The job: write the server (and zip it when asked); see the module's docstring."""
    with tempfile.TemporaryDirectory(prefix="workbench-deploy-") as scratch:  # a variant made first lies here
        return _generate(request, Path(scratch))


def _generate(request: DeployRequest, scratch: Path) -> DeployReport:
    import onnxruntime as ort

    source = Path(request.model)
    session = request.tuned or SessionConfig()  # None: ONNX Runtime's defaults
    runtime = request.runtime or session.runtime
    session = dataclasses.replace(session, runtime=runtime, providers=runtime_providers(runtime, request, session))
    made_from = ""
    if request.remake_variant and session.variant != "fp32":
        made_from, source = source.name, _variant(source, session.variant, request, scratch)
    try:
        probe = ort.InferenceSession(str(source), providers=["CPUExecutionProvider"])
    except Exception as exc:
        raise DeployError(
            _("ONNX Runtime cannot open the model, so no server can serve it: {error}").format(error=str(exc)[:300])
        ) from exc
    inputs, outputs = _tensors(probe.get_inputs(), _("input")), _tensors(probe.get_outputs(), _("output"))
    name = request.name or source.name
    root = Path(request.out_dir)
    out = root / "server" if request.zip else root
    if out.exists() and any(out.iterdir()):
        raise DeployError(
            _("The folder {folder} is not empty; give an empty or new folder for the server.").format(folder=out)
        )
    signature: dict[str, Any] = {"name": name, "model_file": "model.onnx", "inputs": inputs, "outputs": outputs}
    signature.update(max_body_bytes=MAX_BODY, max_json_bytes=MAX_JSON, max_array_bytes=MAX_ARRAYS)
    given = Path(request.tokenizer) if request.tokenizer else None
    generate, tokenizer = generate_spec(source, Path(request.model).parent, given)  # None: no cache, no /generate
    if generate is not None:
        signature["generate"] = generate
    triton = _triton_name(name)
    _copy_model(source, out, "model.onnx")
    _copy_model(source, out / "triton" / triton / "1", "model.onnx")
    (out / "app.py").write_text(_TEMPLATE.read_text(encoding="utf-8"), encoding="utf-8")
    for shipped, template in SHIPPED.items():
        (out / shipped).write_text(_TEMPLATE.with_name(template).read_text(encoding="utf-8"), encoding="utf-8")
    if tokenizer is not None:
        shutil.copyfile(tokenizer, out / "tokenizer.json")
    (out / "signature.json").write_text(json.dumps(signature, indent=2), encoding="utf-8")
    # the generated server is standalone (it cannot import core): it reads the configuration as plain JSON
    (out / "session.json").write_text(json.dumps(session.to_data(), indent=2, sort_keys=True), encoding="utf-8")
    (out / "providers.json").write_text(json.dumps(_provider_options(session, scratch), indent=2), encoding="utf-8")
    (out / "requirements.txt").write_text(_requirements(runtime, tokenizer is not None), encoding="utf-8")
    (out / "Dockerfile").write_text(_DOCKERFILE, encoding="utf-8")
    (out / "README.md").write_text(_readme(name, signature, session, triton, made_from), encoding="utf-8")
    (out / "triton" / triton / "config.pbtxt").write_text(triton_config(triton, inputs, outputs, session))
    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    zip_path = ""
    if request.zip:
        zip_path = str(root / "server.zip")
        with zipfile.ZipFile(zip_path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            for member in files:
                zf.write(out / member, f"server/{member}")
    return DeployReport(
        out_dir=str(out), files=files, zip_path=zip_path, inputs=inputs, outputs=outputs, session=session,
        triton_name=triton, generate=generate is not None,
    )  # fmt: skip
