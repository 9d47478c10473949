"""Recognise uploaded model files by their content and open them safely (in the worker, never the app).

``describe_files`` is the job the Model page and ``python -m core info`` run: given the files of one
upload, it finds the format from the bytes, refuses what is unsafe or too large with a message that says
what to do instead, and returns the model's record.
"""

from __future__ import annotations

import hashlib
import io
import os
import pickletools
import stat
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from core import zoo
from core.errors import (
    IntakeError,
    LimitExceededError,
    NoMatchingArchitectureError,
    UnsafeModelError,
    UnsupportedFormatError,
)
from core.model import ArchitectureMatch, ModelRecord, TensorSpec
from core.protowire import looks_like_onnx

if TYPE_CHECKING:
    import onnx

__all__ = ["WHOLE_MODULE_ADVICE", "describe_files", "detect_format", "sha256_files"]

HEAD_BYTES = 4096
ZIP_MAGIC = b"PK\x03\x04"
LEGACY_TORCH_MAGIC = bytes.fromhex("8a0a6cfc9c46f9206aa85019")  # torch.save's magic number, pickled as LONG1
MAX_ZIP_ENTRIES = 10_000
MAX_ZIP_RATIO = 200  # a member that expands more than this is treated as a zip bomb

WHOLE_MODULE_ADVICE = (
    "Save the weights instead, which opens without running code: torch.save(model.state_dict(), 'model.pt') "
    "(for a sample architecture); or save the model as code you allow: torch.jit.save(torch.jit.script(model), "
    "'model.pt') or torch.export.save(torch.export.export(model, example_inputs), 'model.pt2'); or export it "
    "to ONNX with torch.onnx.export(model, example_inputs, 'model.onnx')."
)


# --------------------------------------------------------------------------------------------------------
# Recognising formats from the bytes
# --------------------------------------------------------------------------------------------------------
def _read_head(path: Path) -> bytes:
    with path.open("rb") as fh:
        return fh.read(HEAD_BYTES)


def _zip_names(path: Path) -> list[str]:
    try:
        with zipfile.ZipFile(path) as zf:
            return zf.namelist()
    except (zipfile.BadZipFile, OSError) as exc:
        raise UnsupportedFormatError(
            f"'{path.name}' starts like a zip archive but cannot be read as one ({exc}). It may be truncated: "
            "upload it again."
        ) from None


def _looks_like_safetensors(head: bytes, size: int) -> bool:
    if len(head) < 10:
        return False
    header_len = int.from_bytes(head[:8], "little")
    return 2 <= header_len <= size - 8 and head[8:9] == b"{"


def detect_format(path: str | os.PathLike[str]) -> str:
    """The format of one file, from its content: onnx, onnx-damaged, onnx-bundle, state_dict-zip,
    torchscript, pt2, safetensors, legacy-torch, pickle, zip, empty or unknown."""
    path = Path(path)
    size = path.stat().st_size
    if size == 0:
        return "empty"
    head = _read_head(path)
    if head.startswith(ZIP_MAGIC):
        names = _zip_names(path)
        if any(n.endswith("/data.pkl") or n == "data.pkl" for n in names):
            if any("/code/" in n or n.endswith("constants.pkl") for n in names):
                return "torchscript"
            return "state_dict-zip"
        if any(n.endswith("/archive_format") or "/data/weights/" in n or "/models/" in n for n in names):
            return "pt2"
        if any(n.lower().endswith(".onnx") for n in names):
            return "onnx-bundle"
        return "zip"
    if head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        return "legacy-torch" if head[2:14] == LEGACY_TORCH_MAGIC else "pickle"
    if _looks_like_safetensors(head, size):
        return "safetensors"
    evidence = looks_like_onnx(head, size)
    if evidence == "onnx":
        return "onnx"
    if evidence == "damaged":
        return "onnx-damaged"
    return "unknown"


# --------------------------------------------------------------------------------------------------------
# Pickles are read as opcodes, never executed: which globals would they import?
# --------------------------------------------------------------------------------------------------------
def pickle_globals(data: bytes, limit: int = 200) -> list[str]:
    """The ``module.name`` globals a pickle would import, read from its opcodes without running it."""
    found: list[str] = []
    strings: list[str] = []
    try:
        for opcode, arg, _ in pickletools.genops(io.BytesIO(data)):
            if opcode.name in ("GLOBAL", "INST") and isinstance(arg, str):
                found.append(arg.replace(" ", "."))
            elif opcode.name == "STACK_GLOBAL" and len(strings) >= 2:
                found.append(f"{strings[-2]}.{strings[-1]}")
            elif isinstance(arg, str):
                strings.append(arg)
            if len(found) >= limit:
                break
    except Exception:  # a damaged pickle: report what was read up to the damage
        pass
    return list(dict.fromkeys(found))


_SAFE_GLOBAL_PREFIXES = ("torch.", "numpy.", "__main__.")
_SAFE_GLOBALS = {
    f"{module}.{name}"
    for module in ("builtins", "__builtin__")
    for name in (
        "set",
        "frozenset",
        "dict",
        "list",
        "tuple",
        "slice",
        "bytearray",
        "complex",
        "int",
        "float",
        "bool",
        "str",
        "bytes",
        "object",
        "range",
    )
} | {"collections.OrderedDict", "_codecs.encode"}
_MODULE_HINTS = ("torch.nn.modules.", "__main__.", "torch.nn.parameter.Parameter")


def _refuse_pickle(globals_: list[str], filename: str) -> None:
    """Refuse a pickle that names globals beyond tensors and containers, before anything unpickles it."""
    dangerous = [g for g in globals_ if g not in _SAFE_GLOBALS and not g.startswith(_SAFE_GLOBAL_PREFIXES)]
    if dangerous:
        raise UnsafeModelError(
            f"'{filename}' is a pickle that would import {', '.join(dangerous[:5])} when opened: opening it "
            "could run any code on this machine, so it was not opened. Upload an ONNX file or a state_dict."
        )
    if any(g.startswith(_MODULE_HINTS) for g in globals_):
        classes = [g for g in globals_ if g.startswith(_MODULE_HINTS)][:3]
        raise UnsafeModelError(
            f"'{filename}' is a whole pickled model ({', '.join(classes)}). Opening it means running code from "
            f"the file and needs its Python classes, so it was not opened. {WHOLE_MODULE_ADVICE}"
        )


# --------------------------------------------------------------------------------------------------------
# Identity
# --------------------------------------------------------------------------------------------------------
def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def sha256_files(main: Path, data_files: list[Path]) -> str:
    """The model's id: the main file's sha256, or with data files, the sha256 of every file's name and hash."""
    if not data_files:
        return _file_sha256(main)
    digest = hashlib.sha256(_file_sha256(main).encode())
    for path in sorted(data_files, key=lambda p: p.name):
        digest.update(f"{path.name}:{_file_sha256(path)}".encode())
    return digest.hexdigest()


# --------------------------------------------------------------------------------------------------------
# ONNX
# --------------------------------------------------------------------------------------------------------
def _dtype_name(elem_type: int) -> str:
    import onnx
    from onnx import helper

    try:
        return str(helper.tensor_dtype_to_np_dtype(elem_type).name).replace("str", "string")
    except Exception:
        try:
            return onnx.TensorProto.DataType.Name(elem_type).lower()
        except ValueError:
            return f"unknown type {elem_type}"


def _type_spec(type_proto: onnx.TypeProto) -> tuple[str, list[int | str] | None]:
    kind = type_proto.WhichOneof("value")
    if kind == "tensor_type" or kind == "sparse_tensor_type":
        tensor = getattr(type_proto, kind)
        dtype = _dtype_name(tensor.elem_type)
        if not tensor.HasField("shape"):
            return dtype, None
        shape: list[int | str] = []
        for dim in tensor.shape.dim:
            if dim.HasField("dim_value"):
                shape.append(int(dim.dim_value))
            elif dim.dim_param:
                shape.append(dim.dim_param)
            else:
                shape.append("?")
        return dtype, shape
    if kind == "sequence_type":
        inner, _ = _type_spec(type_proto.sequence_type.elem_type)
        return f"sequence<{inner}>", None
    if kind == "optional_type":
        inner, inner_shape = _type_spec(type_proto.optional_type.elem_type)
        return f"optional<{inner}>", inner_shape
    if kind == "map_type":
        value, _ = _type_spec(type_proto.map_type.value_type)
        return f"map<{_dtype_name(type_proto.map_type.key_type)}, {value}>", None
    return "unknown", None


def type_text(type_proto: onnx.TypeProto) -> str:
    """'float32 [batch×3×224×224]', for showing one value's type."""
    from core.model import format_shape

    dtype, shape = _type_spec(type_proto)
    return f"{dtype} [{format_shape(shape)}]"


def value_specs(values: Any, skip: set[str] = frozenset()) -> list[TensorSpec]:  # type: ignore[assignment]
    specs = []
    for value in values:
        if value.name in skip:
            continue
        dtype, shape = _type_spec(value.type)
        dynamic = {str(i): str(d) for i, d in enumerate(shape or []) if isinstance(d, str)}
        specs.append(TensorSpec(value.name, dtype, shape, dynamic))
    return specs


def attribute_subgraphs(node: onnx.NodeProto) -> Iterator[tuple[str, onnx.GraphProto]]:
    """(label, graph) for every graph a node's attributes hold: "then_branch", or "branches[1]" in a list."""
    import onnx

    for attr in node.attribute:
        if attr.type == onnx.AttributeProto.GRAPH:
            yield attr.name, attr.g
        elif attr.type == onnx.AttributeProto.GRAPHS:
            for i, graph in enumerate(attr.graphs):
                yield (f"{attr.name}[{i}]" if len(attr.graphs) > 1 else attr.name), graph


def iter_graphs(model: onnx.ModelProto) -> Iterator[onnx.GraphProto]:
    """The main graph, every subgraph of If/Loop/Scan (at any depth), and every local function's body as
    a pseudo-graph of nodes; iterative, so a deeply nested model cannot exhaust the stack."""
    import onnx

    stack: list[Any] = [model.graph]
    for function in model.functions:
        stack.append(onnx.helper.make_graph(list(function.node), function.name, [], []))
    while stack:
        graph = stack.pop()
        yield graph
        for node in graph.node:
            stack.extend(graph for _, graph in attribute_subgraphs(node))


def iter_tensors(model: onnx.ModelProto) -> Iterator[tuple[str, onnx.TensorProto]]:
    """Every weight tensor with where it lives: initializers, sparse initializers, Constant node values."""
    import onnx

    for graph in iter_graphs(model):
        for tensor in graph.initializer:
            yield "initializer", tensor
        for sparse in graph.sparse_initializer:
            yield "sparse initializer", sparse.values
        for node in graph.node:
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.TENSOR:
                    yield "constant", attr.t
                elif attr.type == onnx.AttributeProto.SPARSE_TENSOR:
                    yield "constant", attr.sparse_tensor.values


def tensor_elements(tensor: onnx.TensorProto) -> int:
    """How many elements a tensor's dims promise (negative dims count as 0)."""
    count = 1
    for d in tensor.dims:
        count *= max(int(d), 0)
    return count


def tensor_nbytes(tensor: onnx.TensorProto) -> int:
    """The bytes a tensor's dims and dtype promise (strings count as 0)."""
    from onnx import helper

    count = tensor_elements(tensor)
    try:
        itemsize = helper.tensor_dtype_to_np_dtype(tensor.data_type).itemsize
    except Exception:
        itemsize = 0
    if tensor.data_type in (16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26):  # bf16 / 8-bit / 4-bit / 2-bit floats
        itemsize = max(itemsize, 1)
    return count * itemsize


_TYPED_FIELDS = {  # TensorProto data type -> (field holding the values when raw_data is empty, values per element)
    1: ("float_data", 1), 14: ("float_data", 2), 2: ("int32_data", 1), 3: ("int32_data", 1), 4: ("int32_data", 1),
    5: ("int32_data", 1), 6: ("int32_data", 1), 9: ("int32_data", 1), 10: ("int32_data", 1), 16: ("int32_data", 1),
    7: ("int64_data", 1), 11: ("double_data", 1), 15: ("double_data", 2), 12: ("uint64_data", 1),
    13: ("uint64_data", 1),
}  # fmt: skip


def check_tensor_data(label: str, tensor: onnx.TensorProto) -> None:
    """Refuse a tensor whose dims promise other than the data it holds (inline data only)."""
    import onnx

    if tensor.data_location == onnx.TensorProto.EXTERNAL or tensor.data_type not in _TYPED_FIELDS:
        return
    promised = tensor_elements(tensor)
    if tensor.raw_data:
        held, expected, unit = len(tensor.raw_data), tensor_nbytes(tensor), "bytes"
    else:
        field_name, per_element = _TYPED_FIELDS[tensor.data_type]
        held, expected, unit = len(getattr(tensor, field_name)), promised * per_element, "values"
    if held != expected:
        dims = "×".join(str(int(d)) for d in tensor.dims) or "a scalar"
        raise IntakeError(
            f"The {label} '{tensor.name}' has dims {dims} ({promised:,} elements, {expected:,} {unit}) but holds "
            f"{held:,} {unit} of data. The file is damaged, or made to promise more than it holds; it was not loaded."
        )


def external_entries(tensor: onnx.TensorProto) -> dict[str, str]:
    return {entry.key: entry.value for entry in tensor.external_data}


def check_external_data(model: onnx.ModelProto, folder: Path) -> list[Path]:
    """Every external-data location must name a regular file inside ``folder``, reached without links,
    with offset and length inside that file. Returns the data files; raises before any of them is opened."""
    import onnx

    folder_real = folder.resolve()
    files: dict[str, Path] = {}
    for where, tensor in iter_tensors(model):
        if tensor.data_location != onnx.TensorProto.EXTERNAL:
            continue
        entries = external_entries(tensor)
        location = entries.get("location", "")
        label = f"{where} '{tensor.name}'"
        if not location:
            raise UnsafeModelError(f"The {label} says its data is in an external file but names none.")
        posix = location.replace("\\", "/")
        parts = PurePosixPath(posix).parts
        if posix.startswith("/") or (len(posix) > 1 and posix[1] == ":"):
            raise UnsafeModelError(
                f"The {label} keeps its data at the absolute path '{location}'. External data must sit in the "
                "model's own folder; save the model with a relative location (onnx.save(..., location='x.data'))."
            )
        if ".." in parts:
            raise UnsafeModelError(
                f"The {label} keeps its data at '{location}', outside the model's folder. External data must "
                "sit in the model's own folder, so this file was not opened."
            )
        current = folder
        for part in parts:
            current = current / part
            try:
                mode = os.lstat(current).st_mode
            except FileNotFoundError:
                raise IntakeError(
                    f"The model keeps the data of {label} in '{location}', which was not uploaded. Select the "
                    ".onnx and its data file(s) together, or upload a .zip of the model's folder."
                ) from None
            if stat.S_ISLNK(mode):
                raise UnsafeModelError(
                    f"The data file '{location}' of {label} is a link. Links could point anywhere on this "
                    "machine, so they are not followed; copy the real file next to the model."
                )
        if not stat.S_ISREG(os.lstat(current).st_mode) or not current.resolve().is_relative_to(folder_real):
            raise UnsafeModelError(f"The data location '{location}' of {label} is not a regular file in the folder.")
        size = current.stat().st_size
        try:
            offset = int(entries.get("offset", "0") or 0)
            length = int(entries["length"]) if entries.get("length") else tensor_nbytes(tensor)
        except ValueError:
            raise UnsafeModelError(f"The {label} has an offset or length that is not a number.") from None
        if offset < 0 or length < 0:
            raise UnsafeModelError(f"The {label} has a negative offset ({offset}) or length ({length}).")
        if offset + length > size:
            raise UnsafeModelError(
                f"The {label} wants bytes {offset}–{offset + length} of '{location}', but that file has only "
                f"{size} bytes. The data file does not belong to this model or is truncated."
            )
        files[posix] = current
    return list(files.values())


def _describe_onnx(main: Path, folder: Path, name: str, limits: Limits) -> ModelRecord:
    import onnx

    try:
        model = onnx.load_model(str(main), load_external_data=False)
    except Exception as exc:
        if "MaxDepth" in str(exc) or "recursion" in str(exc).lower():
            raise IntakeError(
                f"'{main.name}' holds subgraphs nested too deeply (If/Loop/Scan inside each other, about 30 levels or "
                "more) for the protobuf parser to read. No real model nests this deep; the file may be crafted."
            ) from None
        raise IntakeError(
            f"'{main.name}' looks like ONNX but could not be parsed ({type(exc).__name__}). The file may be "
            "truncated or damaged: upload it again, or re-export it."
        ) from None
    if not model.HasField("graph"):
        raise IntakeError(f"'{main.name}' is an ONNX ModelProto with no graph in it: there is no model to run.")

    graphs = list(iter_graphs(model))
    total_nodes = sum(len(g.node) for g in graphs)
    if total_nodes > limits.max_nodes:
        raise LimitExceededError(
            f"The model has {total_nodes:,} nodes; this instance accepts at most {limits.max_nodes:,} "
            "(setting WORKBENCH_MAX_NODES)."
        )
    data_files = check_external_data(model, folder)
    parameters = weight_bytes = constant_weights = 0
    for where, tensor in iter_tensors(model):
        check_tensor_data("weight" if where != "constant" else "Constant value", tensor)
        count = tensor_elements(tensor)
        if tensor.data_type not in (onnx.TensorProto.INT64, onnx.TensorProto.INT32):  # shapes and indices
            parameters += count
        weight_bytes += tensor_nbytes(tensor)
        constant_weights += where == "constant" and count > 1
    if weight_bytes > limits.max_initializer_bytes:
        raise LimitExceededError(
            f"The model's weights take {weight_bytes / 2**20:,.0f} MB; this instance accepts at most "
            f"{limits.max_initializer_bytes / 2**20:,.0f} MB (setting WORKBENCH_MAX_INITIALIZER_MB)."
        )

    initializer_names = {t.name for t in model.graph.initializer}
    opsets = {op.domain or "ai.onnx": op.version for op in model.opset_import}
    notes = []
    if len(graphs) > 1 + len(model.functions):
        notes.append(
            f"{len(graphs) - 1 - len(model.functions)} subgraph(s) (If/Loop/Scan), {total_nodes:,} nodes in all."
        )
    if model.functions:
        notes.append(f"{len(model.functions)} local function(s).")
    if constant_weights:
        notes.append(f"{constant_weights} weight tensor(s) are held in Constant nodes instead of initializers.")
    other_domains = sorted(d for d in opsets if d not in ("ai.onnx", "ai.onnx.ml"))
    if other_domains:
        notes.append(f"Operator domains beyond the standard ones: {', '.join(other_domains)}.")
    size = main.stat().st_size + sum(p.stat().st_size for p in data_files)
    return ModelRecord(
        id=sha256_files(main, data_files),
        name=name or main.stem,
        format="onnx",
        size_bytes=size,
        path=str(main),
        files=[str(main)] + [str(p) for p in data_files],
        inputs=value_specs(model.graph.input, skip=initializer_names),
        outputs=value_specs(model.graph.output),
        parameter_count=parameters,
        opset=opsets.get("ai.onnx"),
        ir_version=int(model.ir_version),
        producer=" ".join(filter(None, [model.producer_name, model.producer_version])),
        node_count=len(model.graph.node),
        external_data=[p.name for p in data_files],
        notes=notes,
    )


# --------------------------------------------------------------------------------------------------------
# Zip archives
# --------------------------------------------------------------------------------------------------------
def _check_zip(path: Path, limits: Limits) -> list[zipfile.ZipInfo]:
    with zipfile.ZipFile(path) as zf:
        infos = zf.infolist()
    if len(infos) > MAX_ZIP_ENTRIES:
        raise LimitExceededError(f"'{path.name}' holds {len(infos):,} files; at most {MAX_ZIP_ENTRIES:,} are read.")
    total = sum(i.file_size for i in infos)
    if total > limits.max_initializer_bytes + (64 << 20):
        raise LimitExceededError(
            f"'{path.name}' would expand to {total / 2**20:,.0f} MB, more than this instance accepts "
            f"({limits.max_initializer_bytes / 2**20:,.0f} MB of weights)."
        )
    for info in infos:
        if info.file_size > (1 << 20) and info.file_size > MAX_ZIP_RATIO * max(info.compress_size, 1):
            ratio = info.file_size // max(info.compress_size, 1)
            raise UnsafeModelError(
                f"'{path.name}' is a zip bomb: '{info.filename}' would expand {ratio:,}× to fill the disk, "
                "so it was not unpacked."
            )
    return infos


def _unpack_bundle(path: Path, limits: Limits) -> Path:
    """Unpack a .zip of an ONNX model's folder next to it, refusing names that leave the folder or links."""
    infos = _check_zip(path, limits)
    target = path.parent / (path.stem + "_unzipped")
    target.mkdir(exist_ok=True)
    with zipfile.ZipFile(path) as zf:
        for info in infos:
            name = info.filename.replace("\\", "/")
            parts = PurePosixPath(name).parts
            if name.startswith("/") or ".." in parts or (len(name) > 1 and name[1] == ":"):
                raise UnsafeModelError(f"'{path.name}' holds '{info.filename}', a path outside the archive's folder.")
            if stat.S_ISLNK(info.external_attr >> 16):
                raise UnsafeModelError(f"'{path.name}' holds a link ('{info.filename}'); links are not unpacked.")
            if info.is_dir():
                continue
            out = target.joinpath(*parts)
            out.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src, out.open("wb") as dst:
                remaining = info.file_size + 1
                while chunk := src.read(1 << 20):
                    remaining -= len(chunk)
                    if remaining < 0:  # the header lied about the size
                        raise UnsafeModelError(f"'{info.filename}' in '{path.name}' is larger than its header says.")
                    dst.write(chunk)
    return target


def _describe_bundle(path: Path, name: str, limits: Limits) -> ModelRecord:
    folder = _unpack_bundle(path, limits)
    candidates = [p for p in sorted(folder.rglob("*")) if p.is_file() and detect_format(p) == "onnx"]
    if not candidates:
        raise IntakeError(f"'{path.name}' holds no readable ONNX model.")
    if len(candidates) > 1:
        listed = ", ".join(str(p.relative_to(folder)) for p in candidates[:5])
        raise IntakeError(f"'{path.name}' holds several ONNX models ({listed}); upload one model per archive.")
    main = candidates[0]
    return _describe_onnx(main, main.parent, name or main.stem, limits)


# --------------------------------------------------------------------------------------------------------
# PyTorch weights
# --------------------------------------------------------------------------------------------------------
def unwrap_checkpoint(obj: Any, notes: list[str]) -> dict[str, Any]:
    import torch

    if isinstance(obj, dict):
        for key in ("state_dict", "model_state_dict", "model", "net"):
            inner = obj.get(key)
            if isinstance(inner, dict) and inner and all(isinstance(v, torch.Tensor) for v in inner.values()):
                notes.append(f"Weights taken from the checkpoint's '{key}' entry.")
                obj = inner
                break
    if not isinstance(obj, dict) or not obj:
        raise IntakeError(
            f"The file holds a {type(obj).__name__}, not a state_dict (a dict of parameter name → tensor). "
            "Save it with torch.save(model.state_dict(), 'model.pt')."
        )
    tensors = {str(k): v for k, v in obj.items() if isinstance(v, torch.Tensor)}
    if not tensors:
        raise IntakeError("The file is a dict with no tensors in it, so it holds no weights to load.")
    if all(k.startswith("module.") for k in tensors):
        notes.append("The 'module.' prefix of DataParallel was removed from every key.")
        tensors = {k.removeprefix("module."): v for k, v in tensors.items()}
    return tensors


def match_architectures(shapes: dict[str, tuple[int, ...]]) -> list[ArchitectureMatch]:
    """Compare a state_dict's keys and shapes with every zoo architecture."""
    matches = []
    for arch in zoo.SAMPLES:
        expected = zoo.state_dict_shapes(arch)
        missing = sorted(set(expected) - set(shapes))
        unexpected = sorted(set(shapes) - set(expected))
        mismatched = [
            f"{k}: file {list(shapes[k])}, {arch} {list(expected[k])}"
            for k in sorted(set(expected) & set(shapes))
            if tuple(shapes[k]) != tuple(expected[k])
        ]
        ok = not (missing or unexpected or mismatched)
        matches.append(ArchitectureMatch(arch, ok, missing, unexpected, mismatched))
    return matches


def _mismatch_summary(match: ArchitectureMatch) -> str:
    parts = []
    for label, items in (
        ("missing", match.missing_keys),
        ("unexpected", match.unexpected_keys),
        ("wrong shape", match.shape_mismatches),
    ):
        if items:
            shown = ", ".join(items[:3]) + (", …" if len(items) > 3 else "")
            parts.append(f"{len(items)} {label} ({shown})")
    return f"{match.architecture}: " + "; ".join(parts)


def _record_from_state_dict(tensors: dict[str, Any], main: Path, fmt: str, name: str, notes: list[str]) -> ModelRecord:
    matches = match_architectures({k: tuple(v.shape) for k, v in tensors.items()})
    good = [m for m in matches if m.matches]
    if not good:
        closest = sorted(matches, key=lambda m: len(m.missing_keys) + len(m.unexpected_keys) + len(m.shape_mismatches))
        details = " | ".join(_mismatch_summary(m) for m in closest[:3])
        raise NoMatchingArchitectureError(
            f"The weights in '{main.name}' ({len(tensors)} tensors) fit none of the sample architectures, so "
            f"there is no code to load them into. Closest: {details}. Upload an ONNX export, a TorchScript "
            "archive or a .pt2 program of your model instead."
        )
    arch = good[0].architecture
    model = zoo.build_model(arch)
    model.load_state_dict(tensors, strict=True)
    sample_record = zoo.describe_sample(arch)
    notes.append(f"Loaded into the '{arch}' architecture: every key and shape matches.")
    return ModelRecord(
        id=_file_sha256(main),
        name=name or main.stem,
        format=fmt,
        size_bytes=main.stat().st_size,
        path=str(main),
        files=[str(main)],
        inputs=sample_record.inputs,
        outputs=sample_record.outputs,
        parameter_count=sum(p.numel() for p in model.parameters()),
        architecture=arch,
        architecture_matches=matches,
        notes=notes,
    )


def _describe_torch_pickle(path: Path, fmt: str, name: str, limits: Limits) -> ModelRecord:
    import torch

    if fmt == "state_dict-zip":
        _check_zip(path, limits)
        with zipfile.ZipFile(path) as zf:
            pkl = next(n for n in zf.namelist() if n.endswith("data.pkl"))
            data = zf.read(pkl)
    else:
        data = path.read_bytes()[: 64 << 20]
    _refuse_pickle(pickle_globals(data), path.name)
    try:
        obj = torch.load(str(path), weights_only=True, map_location="cpu", mmap=fmt == "state_dict-zip")
    except Exception as exc:
        text = str(exc)
        if "Unsupported global" in text or "weights_only" in text.lower():
            raise UnsafeModelError(
                f"'{path.name}' is not plain weights: it needs Python objects to be rebuilt, which could run "
                f"code. {WHOLE_MODULE_ADVICE}"
            ) from None
        raise IntakeError(f"'{path.name}' is a PyTorch file that could not be read ({text[:300]}).") from None
    notes: list[str] = []
    return _record_from_state_dict(unwrap_checkpoint(obj, notes), path, "state_dict", name, notes)


def _describe_safetensors(path: Path, fmt: str, name: str, limits: Limits) -> ModelRecord:
    from safetensors.torch import load_file

    if path.stat().st_size > limits.max_initializer_bytes + (1 << 20):
        raise LimitExceededError(f"'{path.name}' is larger than this instance's weight limit.")
    try:
        tensors = load_file(str(path), device="cpu")
    except Exception as exc:
        raise IntakeError(f"'{path.name}' looks like safetensors but could not be read ({exc}).") from None
    return _record_from_state_dict(tensors, path, "safetensors", name, [])


def _refuse_code_archive(path: Path, kind: str, limits: Limits) -> None:
    if not limits.allow_code_archives:
        raise UnsafeModelError(
            f"'{path.name}' is a {kind}, which carries code that runs when it is opened. This instance does not "
            "accept them (its operator can set WORKBENCH_ALLOW_CODE_ARCHIVES=true). Upload an ONNX export or a "
            "state_dict instead."
        )
    _check_zip(path, limits)


def _describe_torchscript(path: Path, fmt: str, name: str, limits: Limits) -> ModelRecord:
    import torch

    _refuse_code_archive(path, "TorchScript archive", limits)
    try:
        module = torch.jit.load(str(path), map_location="cpu")
    except Exception as exc:
        raise IntakeError(
            f"'{path.name}' is a TorchScript archive that could not be loaded ({str(exc)[:300]})."
        ) from None
    args = module.forward.schema.arguments[1:]
    inputs = [TensorSpec(a.name, "unknown" if str(a.type) == "Tensor" else str(a.type), None) for a in args]
    return ModelRecord(
        id=_file_sha256(path),
        name=name or path.stem,
        format="torchscript",
        size_bytes=path.stat().st_size,
        path=str(path),
        files=[str(path)],
        inputs=inputs,
        outputs=[TensorSpec("output", "unknown", None)],
        parameter_count=sum(p.numel() for p in module.parameters()),
        notes=[
            "TorchScript does not record input shapes or dtypes: you give the shapes when you export "
            "(float32 is assumed)."
        ],
    )


def _describe_pt2(path: Path, fmt: str, name: str, limits: Limits) -> ModelRecord:
    import torch

    _refuse_code_archive(path, "torch.export program (.pt2)", limits)
    try:
        program = torch.export.load(str(path))
    except Exception as exc:
        raise IntakeError(f"'{path.name}' is a .pt2 archive that could not be loaded ({str(exc)[:300]}).") from None
    signature = program.graph_signature
    values = {n.name: n.meta.get("val") for n in program.graph.nodes}
    examples: dict[str, Any] = {}
    saved = getattr(program, "example_inputs", None)
    if saved and isinstance(saved[0], (tuple, list)):
        examples = dict(zip(signature.user_inputs, saved[0], strict=False))

    def spec(node_name: str) -> TensorSpec:
        """Example shape (saved with the program) where known; symbolic dims become dynamic axes."""
        val = values.get(node_name)
        if val is None or not hasattr(val, "shape"):
            return TensorSpec(node_name, "unknown", None)
        dims = [str(d) for d in val.shape]
        example = examples.get(node_name)
        dynamic = {str(i): d for i, d in enumerate(dims) if not d.lstrip("-").isdigit()}
        if example is not None and hasattr(example, "shape"):
            shape: list[int | str] = [int(d) for d in example.shape]
        else:
            shape = [int(d) if d.lstrip("-").isdigit() else d for d in dims]
        return TensorSpec(node_name, str(val.dtype).removeprefix("torch."), shape, dynamic)

    output_nodes = [n for n in program.graph.nodes if n.op == "output"]
    output_names = signature.user_outputs
    if output_nodes:
        args = output_nodes[0].args[0]
        output_names = tuple(str(a) for a in (args if isinstance(args, (tuple, list)) else [args]))
        output_names = output_names[len(output_names) - len(signature.user_outputs) :]
    params = program.state_dict
    return ModelRecord(
        id=_file_sha256(path),
        name=name or path.stem,
        format="pt2",
        size_bytes=path.stat().st_size,
        path=str(path),
        files=[str(path)],
        inputs=[spec(n) for n in signature.user_inputs],
        outputs=[spec(n) for n in output_names],
        parameter_count=sum(params[p].numel() for p in signature.parameters if p in params),
        notes=[
            f"Exported with torch {torch.__version__.split('+')[0]} or compatible; dynamic dims keep their symbols."
        ],
    )


# --------------------------------------------------------------------------------------------------------
# The job
# --------------------------------------------------------------------------------------------------------
class Limits:
    """The intake limits a caller passes in (from core.settings)."""

    def __init__(self, max_nodes: int, max_initializer_bytes: int, allow_code_archives: bool) -> None:
        self.max_nodes = max_nodes
        self.max_initializer_bytes = max_initializer_bytes
        self.allow_code_archives = allow_code_archives


_HANDLERS: dict[str, Callable[[Path, str, str, Limits], ModelRecord]] = {
    "state_dict-zip": _describe_torch_pickle,
    "legacy-torch": _describe_torch_pickle,
    "safetensors": _describe_safetensors,
    "torchscript": _describe_torchscript,
    "pt2": _describe_pt2,
}

_PRIMARY = {"onnx", "onnx-bundle", "onnx-damaged", *_HANDLERS, "pickle"}


def _refuse_unreadable(path: Path, fmt: str) -> None:
    if fmt == "empty":
        raise UnsupportedFormatError(f"'{path.name}' is empty (0 bytes). The upload may have failed: try again.")
    if fmt == "pickle":
        _refuse_pickle(pickle_globals(path.read_bytes()[: 64 << 20]), path.name)
        raise UnsafeModelError(
            f"'{path.name}' is a plain Python pickle. Unpickling runs whatever code the file asks for, so it is "
            f"never opened here. {WHOLE_MODULE_ADVICE}"
        )
    if fmt == "onnx-damaged":
        raise IntakeError(
            f"'{path.name}' starts like an ONNX model but breaks off: the file is truncated or damaged. "
            "Upload it again, or re-export it."
        )
    if fmt == "zip":
        raise UnsupportedFormatError(
            f"'{path.name}' is a zip archive that holds neither a PyTorch model nor an ONNX model."
        )
    head = _read_head(path)[:8].hex(" ")
    raise UnsupportedFormatError(
        f"'{path.name}' is not a model format this app reads (first bytes: {head}). It reads ONNX (.onnx), "
        "PyTorch state_dicts (torch.save), safetensors, TorchScript archives and torch.export .pt2 programs."
    )


def describe_files(
    paths: list[str],
    name: str = "",
    max_nodes: int = 500_000,
    max_initializer_bytes: int = 8 << 30,
    allow_code_archives: bool = True,
) -> ModelRecord:
    """The record of the model in ``paths`` (one upload: a model file, optionally with its data files)."""
    limits = Limits(max_nodes, max_initializer_bytes, allow_code_archives)
    files = [Path(p) for p in paths]
    if not files:
        raise IntakeError("No file was given.")
    formats = {p: detect_format(p) for p in files}
    primary = [p for p in files if formats[p] in _PRIMARY]
    if not primary:
        _refuse_unreadable(files[0], formats[files[0]])
    if len(primary) > 1:
        listed = ", ".join(f"'{p.name}'" for p in primary)
        raise IntakeError(f"{listed} are each a model; upload one model at a time (with its data files).")
    main = primary[0]
    fmt = formats[main]
    if fmt == "onnx":
        return _describe_onnx(main, main.parent, name, limits)
    if fmt == "onnx-bundle":
        return _describe_bundle(main, name, limits)
    if fmt in _HANDLERS:
        return _HANDLERS[fmt](main, fmt, name, limits)
    _refuse_unreadable(main, fmt)
    raise AssertionError("unreachable")
