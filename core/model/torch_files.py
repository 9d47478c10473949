"""PyTorch files opened inside the worker: state_dicts into a zoo architecture, TorchScript and .pt2 archives."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path
from typing import Any

from core.errors import IntakeError, LimitExceededError, NoMatchingArchitectureError, UnsafeModelError
from core.i18n import _, number
from core.model import zoo
from core.model.archives import check_zip
from core.model.formats import file_sha256
from core.model.inputs import SCALAR_TYPES
from core.model.notes import (
    CHECKPOINT_ENTRY,
    DATAPARALLEL,
    LOADED_INTO,
    PT2_EXPORTED,
    PT2_NAMES,
    TORCHSCRIPT_SHAPES,
    Note,
    note,
)
from core.model.pickles import WHOLE_MODULE_ADVICE, pickle_globals, refuse_pickle
from core.model.records import FORMAT_LABELS, ArchitectureMatch, ModelRecord, TensorSpec
from core.settings import IntakeLimits

MAX_SAFETENSORS_HEADER = 16 << 20  # the JSON list of tensors; a model of 100,000 tensors needs about 10 MB

__all__ = [
    "compare_keys",
    "describe_pt2",
    "describe_safetensors",
    "describe_torch_pickle",
    "describe_torchscript",
    "match_architectures",
    "mismatch_summary",
    "read_weights",
    "refuse_code",
    "unwrap_checkpoint",
]


def unwrap_checkpoint(obj: Any, notes: list[Note]) -> dict[str, Any]:
    import torch

    if isinstance(obj, dict):
        for key in ("state_dict", "model_state_dict", "model", "net"):
            inner = obj.get(key)
            if isinstance(inner, dict) and inner and all(isinstance(v, torch.Tensor) for v in inner.values()):
                notes.append(note(CHECKPOINT_ENTRY, key=key))
                obj = inner
                break
    if not isinstance(obj, dict) or not obj:
        raise IntakeError(
            _(
                "The file holds a {kind}, not a state_dict (a dict of parameter name → tensor). "
                "Save it with torch.save(model.state_dict(), 'model.pt')."
            ).format(kind=type(obj).__name__)
        )
    tensors = {str(k): v for k, v in obj.items() if isinstance(v, torch.Tensor)}
    if not tensors:
        raise IntakeError(_("The file is a dict with no tensors in it, so it holds no weights to load."))
    if all(k.startswith("module.") for k in tensors):
        notes.append(note(DATAPARALLEL))
        tensors = {k.removeprefix("module."): v for k, v in tensors.items()}
    return tensors


def compare_keys(
    shapes: dict[str, tuple[int, ...]], expected: dict[str, tuple[int, ...]], name: str
) -> ArchitectureMatch:
    """How a state_dict's keys and shapes fit those a module expects: missing, unexpected and wrong-shaped keys."""
    missing = sorted(set(expected) - set(shapes))
    unexpected = sorted(set(shapes) - set(expected))
    mismatched = [
        f"{k}: file {list(shapes[k])}, {name} {list(expected[k])}"
        for k in sorted(set(expected) & set(shapes))
        if tuple(shapes[k]) != tuple(expected[k])
    ]
    return ArchitectureMatch(
        architecture=name,
        matches=not (missing or unexpected or mismatched),
        missing_keys=missing,
        unexpected_keys=unexpected,
        shape_mismatches=mismatched,
    )


def match_architectures(shapes: dict[str, tuple[int, ...]]) -> list[ArchitectureMatch]:
    """Compare a state_dict's keys and shapes with every zoo architecture."""
    return [compare_keys(shapes, zoo.state_dict_shapes(arch), arch) for arch in zoo.SAMPLES]


def mismatch_summary(match: ArchitectureMatch) -> str:
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


def _record_from_state_dict(tensors: dict[str, Any], main: Path, fmt: str, name: str, notes: list[Note]) -> ModelRecord:
    matches = match_architectures({k: tuple(v.shape) for k, v in tensors.items()})
    good = [m for m in matches if m.matches]
    if not good:
        closest = sorted(matches, key=lambda m: len(m.missing_keys) + len(m.unexpected_keys) + len(m.shape_mismatches))
        details = " | ".join(mismatch_summary(m) for m in closest[:3])
        raise NoMatchingArchitectureError(
            _(
                "The weights in '{main}' ({count} tensors) fit none of the sample architectures, so "
                "there is no code to load them into. Closest: {details}. Upload an ONNX export, a "
                "TorchScript archive or a .pt2 program of your model instead."
            ).format(main=main.name, count=len(tensors), details=details)
        )
    arch = good[0].architecture
    model = zoo.build_model(arch)
    model.load_state_dict(tensors, strict=True)
    sample_record = zoo.describe_sample(arch)
    notes.append(note(LOADED_INTO, arch=arch))
    return _file_record(
        main,
        name,
        fmt,
        inputs=sample_record.inputs,
        outputs=sample_record.outputs,
        parameter_count=sum(p.numel() for p in model.parameters()),
        architecture=arch,
        architecture_matches=matches,
        notes=notes,
    )


def _file_record(path: Path, name: str, fmt: str, **found: Any) -> ModelRecord:
    """The record of a PyTorch model that is the one file ``path`` (named ``name``, else after the file): its hash,
    size and place, with what reading it ``found`` (inputs, outputs, parameter count, notes...)."""
    return ModelRecord(
        id=file_sha256(path),
        name=name or path.stem,
        format=fmt,
        size_bytes=path.stat().st_size,
        path=str(path),
        files=[str(path)],
        **found,
    )


def read_weights(path: Path, fmt: str, limits: IntakeLimits, notes: list[Note]) -> dict[str, Any]:
    """The tensors of a state_dict file (torch.save, with ``weights_only``) or a safetensors file, unwrapped from
    a checkpoint dict; what was done to them is added to ``notes``."""
    if fmt == "safetensors":
        return _read_safetensors(path, limits)
    import torch

    if fmt == "state_dict-zip":
        check_zip(path, limits)
        with zipfile.ZipFile(path) as zf:
            pkl = next(n for n in zf.namelist() if n.endswith("data.pkl"))
            data = zf.read(pkl)
    else:
        data = path.read_bytes()[: 64 << 20]
    refuse_pickle(pickle_globals(data), path.name)
    try:
        obj = torch.load(str(path), weights_only=True, map_location="cpu", mmap=fmt == "state_dict-zip")
    except Exception as exc:
        text = str(exc)
        if "Unsupported global" in text or "weights_only" in text.lower():
            raise UnsafeModelError(
                _(
                    "'{file}' is not plain weights: it needs Python objects to be rebuilt, which could "
                    "run code. {advice}"
                ).format(file=path.name, advice=_(WHOLE_MODULE_ADVICE))
            ) from None
        raise IntakeError(
            _("'{file}' is a PyTorch file that could not be read ({text}).").format(file=path.name, text=text[:300])
        ) from None
    return unwrap_checkpoint(obj, notes)


def describe_torch_pickle(path: Path, fmt: str, name: str, limits: IntakeLimits) -> ModelRecord:
    notes: list[Note] = []
    return _record_from_state_dict(read_weights(path, fmt, limits, notes), path, "state_dict", name, notes)


def _read_safetensors(path: Path, limits: IntakeLimits) -> dict[str, Any]:
    from safetensors.torch import load_file

    if path.stat().st_size > limits.max_initializer_bytes + (1 << 20):
        raise LimitExceededError(_("'{file}' is larger than this instance's weight limit.").format(file=path.name))
    with path.open("rb") as fh:
        header = int.from_bytes(fh.read(8), "little")
    if header > MAX_SAFETENSORS_HEADER:
        raise LimitExceededError(
            _(
                "'{file}' has a safetensors header of {header} MB (the list of its tensors); real "
                "models need well under {most} MB, so it was not read."
            ).format(file=path.name, header=number(header / 2**20, 0), most=MAX_SAFETENSORS_HEADER >> 20)
        )
    try:
        tensors: dict[str, Any] = load_file(str(path), device="cpu")
    except Exception as exc:
        raise IntakeError(
            _("'{file}' looks like safetensors but could not be read ({reason}).").format(file=path.name, reason=exc)
        ) from None
    return tensors


def describe_safetensors(path: Path, fmt: str, name: str, limits: IntakeLimits) -> ModelRecord:
    return _record_from_state_dict(_read_safetensors(path, limits), path, "safetensors", name, [])


def refuse_code(path: Path, kind: str, limits: IntakeLimits) -> None:
    """Refuse a file that carries code (TorchScript, .pt2, a model's own .py or package) where code is not
    accepted (hosted mode, unless the operator allows it)."""
    if not limits.allow_code_archives:
        raise UnsafeModelError(
            _(
                "'{file}' is a {kind}, which carries code that runs when it is opened. This instance "
                "does not accept them (its operator can set WORKBENCH_ALLOW_CODE_ARCHIVES=true). "
                "Upload an ONNX export or a state_dict instead."
            ).format(file=path.name, kind=_(kind))
        )


def _refuse_code_archive(path: Path, kind: str, limits: IntakeLimits) -> None:
    refuse_code(path, kind, limits)
    check_zip(path, limits)


def describe_torchscript(path: Path, fmt: str, name: str, limits: IntakeLimits) -> ModelRecord:
    import torch

    _refuse_code_archive(path, FORMAT_LABELS["torchscript"], limits)
    try:
        module = torch.jit.load(str(path), map_location="cpu")
    except Exception as exc:
        raise IntakeError(
            _("'{file}' is a TorchScript archive that could not be loaded ({reason}).").format(
                file=path.name, reason=str(exc)[:300]
            )
        ) from None
    args = module.forward.schema.arguments[1:]
    inputs = [  # a Python scalar argument (int, float, bool) has no shape to give: it is a scalar
        TensorSpec(name=a.name, dtype=str(a.type), shape=[]) if str(a.type) in SCALAR_TYPES else
        TensorSpec(name=a.name, dtype="unknown" if str(a.type) == "Tensor" else str(a.type), shape=None)
        for a in args
    ]  # fmt: skip
    return _file_record(
        path,
        name,
        "torchscript",
        inputs=inputs,
        outputs=[TensorSpec(name="output", dtype="unknown", shape=None)],
        parameter_count=sum(p.numel() for p in module.parameters()),
        notes=[note(TORCHSCRIPT_SHAPES)],
    )


_SYMBOL = re.compile(r"[su]\d+")  # a dim torch.export made symbolic, as it writes it after a save: s23


def _role(rank: int, dims: list[str], axis: int, dtype: str) -> str:
    """What an axis of a program's input is, from where it sits: batch, height, width, seq, or ""."""
    channels = {"1", "2", "3", "4"}
    if axis == 0 and rank >= 2:
        return "batch"
    if rank == 4 and dims[1] in channels and axis in (2, 3):
        return "height" if axis == 2 else "width"
    if rank == 4 and dims[3] in channels and axis in (1, 2):
        return "height" if axis == 1 else "width"
    if axis == 1 and ((rank == 2 and not dtype.startswith("float")) or (rank == 3 and dtype.startswith("float"))):
        return "seq"
    return ""


def _dim_names(inputs: list[tuple[list[str], str]]) -> dict[str, str]:
    """Names for a program's symbolic dims (``s23``) by where they sit in its inputs (dims, dtype): torch.export
    keeps the names given with Dim("batch") only in memory, and a saved .pt2 has none (pytorch/pytorch#144273).
    A symbol no role fits, or whose role is taken, keeps its own."""
    names: dict[str, str] = {}
    for dims, dtype in inputs:
        for axis, dim in enumerate(dims):
            if _SYMBOL.fullmatch(dim) and dim not in names:
                role = _role(len(dims), dims, axis, dtype)
                if role and role not in names.values():
                    names[dim] = role
    return names


def _vocabularies(program: Any, user_inputs: list[str]) -> dict[str, int]:
    """Inputs a program uses as an embedding's indices (aten.embedding on a weight): input -> the table's rows."""
    found: dict[str, int] = {}
    for node in program.graph.nodes:
        if node.op != "call_function" or "embedding" not in str(node.target) or len(node.args) < 2:
            continue
        weight, indices = node.args[0], node.args[1]
        rows = getattr(getattr(weight, "meta", {}).get("val"), "shape", None)
        if getattr(indices, "name", None) in user_inputs and rows and isinstance(rows[0], int):
            found.setdefault(indices.name, int(rows[0]))
    return found


def describe_pt2(path: Path, fmt: str, name: str, limits: IntakeLimits) -> ModelRecord:
    import torch

    _refuse_code_archive(path, FORMAT_LABELS["pt2"], limits)
    try:
        program = torch.export.load(str(path))
    except Exception as exc:
        raise IntakeError(
            _("'{file}' is a .pt2 archive that could not be loaded ({reason}).").format(
                file=path.name, reason=str(exc)[:300]
            )
        ) from None
    signature = program.graph_signature
    values = {n.name: n.meta.get("val") for n in program.graph.nodes}
    examples: dict[str, Any] = {}
    saved = getattr(program, "example_inputs", None)
    if saved and isinstance(saved[0], (tuple, list)):
        examples = dict(zip(signature.user_inputs, saved[0], strict=False))
    user: list[Any] = [values.get(n) for n in signature.user_inputs]
    names = _dim_names(
        [([str(d) for d in v.shape], str(v.dtype).removeprefix("torch.")) for v in user if hasattr(v, "shape")]
    )
    vocabularies = _vocabularies(program, list(signature.user_inputs))

    def spec(node_name: str) -> TensorSpec:
        """Example shape (saved with the program) where known; symbolic dims become dynamic axes, named."""
        val = values.get(node_name)
        if val is None or not hasattr(val, "shape"):
            return TensorSpec(name=node_name, dtype="unknown", shape=None)
        dims = [names.get(str(d), str(d)) for d in val.shape]
        example = examples.get(node_name)
        dynamic = {str(i): d for i, d in enumerate(dims) if not d.lstrip("-").isdigit()}
        if example is not None and hasattr(example, "shape"):
            shape: list[int | str] = [int(d) for d in example.shape]
        else:
            shape = [int(d) if d.lstrip("-").isdigit() else d for d in dims]
        return TensorSpec(
            name=node_name,
            dtype=str(val.dtype).removeprefix("torch."),
            shape=shape,
            dynamic_axes=dynamic,
            vocabulary=vocabularies.get(node_name),
        )

    output_nodes = [n for n in program.graph.nodes if n.op == "output"]
    output_names = signature.user_outputs
    if output_nodes:
        args = output_nodes[0].args[0]
        output_names = tuple(str(a) for a in (args if isinstance(args, (tuple, list)) else [args]))
        output_names = output_names[len(output_names) - len(signature.user_outputs) :]
    params = program.state_dict
    notes = [note(PT2_EXPORTED, version=torch.__version__.split("+")[0])]
    if names:
        named = ", ".join(f"{symbol} → {role}" for symbol, role in names.items())
        notes.append(note(PT2_NAMES, named=named))
    return _file_record(
        path,
        name,
        "pt2",
        inputs=[spec(n) for n in signature.user_inputs],
        outputs=[spec(n) for n in output_names],
        parameter_count=sum(params[p].numel() for p in signature.parameters if p in params),
        notes=notes,
    )
