"""Recognise uploaded model files by their content and open them safely (in the worker, never the app).

``describe_files`` is the job the Model page and ``python -m core info`` run: given the files of one
upload, it finds the format from the bytes, refuses what is unsafe or too large with a message that says
what to do instead, and returns the model's record. The pieces: formats.py (recognition), pickles.py,
archives.py, onnx_file.py and torch_files.py (each kind of file, opened safely), and code_listing.py
with user_code.py (a model's own code with its weights).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from core.errors import IntakeError, UnsafeModelError, UnsupportedFormatError, brief
from core.i18n import _, pgettext
from core.model.formats import detect_format, read_head
from core.model.intake_request import IntakeRequest
from core.model.onnx_file import describe_bundle, describe_onnx
from core.model.pickles import WHOLE_MODULE_ADVICE, pickle_globals, refuse_pickle
from core.model.records import ModelRecord
from core.model.torch_files import describe_pt2, describe_safetensors, describe_torch_pickle, describe_torchscript
from core.settings import IntakeLimits

__all__ = ["IntakeRequest", "describe_files", "detect_format"]

_HANDLERS: dict[str, Callable[[Path, str, str, IntakeLimits], ModelRecord]] = {
    "state_dict-zip": describe_torch_pickle,
    "legacy-torch": describe_torch_pickle,
    "safetensors": describe_safetensors,
    "torchscript": describe_torchscript,
    "pt2": describe_pt2,
}

_PRIMARY = {"onnx", "onnx-bundle", "onnx-damaged", *_HANDLERS, "pickle"}
_CODE = {"python", "code-zip"}
_WEIGHTS = {"state_dict-zip", "legacy-torch", "safetensors"}


def _refuse_unreadable(path: Path, fmt: str) -> None:
    if fmt == "empty":
        raise UnsupportedFormatError(
            _("'{name}' is empty (0 bytes). The upload may have failed: try again.").format(name=path.name)
        )
    if fmt == "pickle":
        refuse_pickle(pickle_globals(path.read_bytes()[: 64 << 20]), path.name)
        raise UnsafeModelError(
            _(
                "'{name}' is a plain Python pickle. Unpickling runs whatever code the file asks for, so it is never "
                "opened here. {advice}"
            ).format(name=path.name, advice=_(WHOLE_MODULE_ADVICE))
        )
    if fmt == "onnx-damaged":
        raise IntakeError(
            _(
                "'{name}' starts like an ONNX model but breaks off: the file is truncated or damaged. Upload it "
                "again, or re-export it."
            ).format(name=path.name)
        )
    if fmt == "zip":
        raise UnsupportedFormatError(
            _("'{name}' is a zip archive that holds neither a PyTorch model nor an ONNX model.").format(name=path.name)
        )
    head = read_head(path)[:8].hex(" ")
    raise UnsupportedFormatError(
        _(
            "'{name}' is not a model format this app reads (first bytes: {head}). It reads ONNX (.onnx), PyTorch "
            "state_dicts (torch.save), safetensors, TorchScript archives, torch.export .pt2 programs, and a model's "
            "own code (.py or a zip of its package) with its weights."
        ).format(name=path.name, head=head)
    )


def describe_files(request: IntakeRequest, limits: IntakeLimits | None = None) -> ModelRecord:
    """The record of the model the request names. As a job, ``limits`` comes from the settings of whoever runs
    it (the worker fills it in)."""
    limits = limits or IntakeLimits()
    name, unpack_dir = request.name, request.unpack_dir
    files = [Path(p) for p in request.paths]
    if not files:
        raise IntakeError(_("No file was given."))
    if len(files) == 1 and (files[0].is_dir() or detect_format(files[0]) == "hf-zip"):
        return _describe_folder(files[0], request, limits)
    formats = {p: detect_format(p) for p in files}
    if any(f in _CODE for f in formats.values()):
        return _describe_code(request, files, formats, limits)
    primary = [p for p in files if formats[p] in _PRIMARY]
    if not primary:
        _refuse_unreadable(files[0], formats[files[0]])
    if len(primary) > 1:
        listed = pgettext("list", ", ").join(f"'{p.name}'" for p in primary)
        raise IntakeError(
            _("{names} are each a model; upload one model at a time (with its data files).").format(names=listed)
        )
    main = primary[0]
    fmt = formats[main]
    if fmt == "onnx":
        return describe_onnx(main, main.parent, name, limits)
    if fmt == "onnx-bundle":
        return describe_bundle(main, name, limits, Path(unpack_dir) if unpack_dir else None)
    if fmt in _HANDLERS:
        return _HANDLERS[fmt](main, fmt, name, limits)
    _refuse_unreadable(main, fmt)
    raise AssertionError(f"no reader for {fmt}")  # _refuse_unreadable raises for every other format


def _describe_code(
    request: IntakeRequest, files: list[Path], formats: dict[Path, str], limits: IntakeLimits
) -> ModelRecord:
    """A model's own code (one .py, or a zip of a package) with one weights file, built in this worker."""
    from core.model.user_code import describe_code

    code = [p for p in files if formats[p] in _CODE]
    weights = [p for p in files if formats[p] in _WEIGHTS]
    others = [p for p in files if p not in code and p not in weights]
    if len(code) > 1:
        listed = ", ".join(f"'{brief(p.name)}'" for p in code)
        raise IntakeError(
            _("{files} are each code; upload one .py file, or a zip of the package that holds them all.").format(
                files=listed
            )
        )
    if len(weights) != 1 or others:
        found = ", ".join(f"'{brief(p.name)}'" for p in [*weights, *others]) or _("none")
        raise IntakeError(
            _(
                "With the code '{code}', upload exactly one weights file: a state_dict saved with torch.save (.pt, "
                ".pth; a checkpoint dict holding one is fine) or a .safetensors file (found: {found})."
            ).format(code=brief(code[0].name), found=found)
        )
    unpack = Path(request.unpack_dir) if request.unpack_dir else None
    return describe_code(code[0], weights[0], (request.name, request.code_class, request.code_args), limits, unpack)


def _describe_folder(path: Path, request: IntakeRequest, limits: IntakeLimits) -> ModelRecord:
    """A Hugging Face folder, or a .zip of one (checked as every archive is, then unpacked beside it or into
    ``unpack_dir``)."""
    from core.model.archives import unpack_bundle
    from core.model.formats import folder_root_in_zip, zip_names
    from core.model.hf_folder import describe_folder

    if path.is_dir():
        return describe_folder(path, request.name, limits, request.variant)
    root = folder_root_in_zip(zip_names(path)) or ""
    unpacked = unpack_bundle(path, limits, Path(request.unpack_dir) if request.unpack_dir else None)
    name = request.name or (root.rstrip("/") or path.stem)
    return describe_folder(unpacked / root, name, limits, request.variant)
