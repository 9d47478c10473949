"""A model built from its own code and weights, only ever inside the worker: the class imported from the uploaded
``.py`` or package, built with the person's arguments (JSON), its state_dict compared key by key with the weights
and loaded. ``describe_code`` is the intake of such an upload; ``build_module`` rebuilds it in every later job.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import sys
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.errors import CodeError, brief
from core.i18n import N_
from core.model.archives import unpack_bundle
from core.model.code_listing import ModuleClass, module_classes, zip_package
from core.model.formats import detect_format, sha256_files
from core.model.notes import BUILT_FROM_CODE, CODE_SHAPES, FIRST_LAYER, Note, note
from core.model.records import ArchitectureMatch, ModelRecord, TensorSpec, UserCode
from core.model.torch_files import compare_keys, mismatch_summary, read_weights, refuse_code
from core.settings import IntakeLimits

if TYPE_CHECKING:
    import torch

__all__ = ["build_module", "describe_code", "load_weights", "parse_args"]

MAX_TRIED = 12  # classes built to find the one the weights fit, when the person names none


def parse_args(text: str, class_name: str) -> dict[str, Any]:
    """The constructor's keyword arguments from the JSON the person wrote ("" or blank: none)."""
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CodeError(
            f"The arguments for {brief(class_name)} are not valid JSON (line {exc.lineno}, column {exc.colno}: "
            f'{exc.msg}). Write an object of name → value, e.g. {{"num_classes": 10}}.'
        ) from None
    if not isinstance(value, dict):
        raise CodeError(
            f"The arguments for {brief(class_name)} must be a JSON object of name → value, e.g. "
            f'{{"num_classes": 10}}; this is a {type(value).__name__}.'
        )
    return value


def _claim_name(code: UserCode) -> None:
    """Make the code's top-level module importable from its root, refusing a name the worker already uses (the
    project's own packages, an installed library): importing it would give that one, not the person's."""
    import importlib.util

    root = Path(code.folder).resolve()
    top = code.package or code.module.split(".")[0]
    loaded = sys.modules.get(top)
    if loaded is not None:
        origin = getattr(loaded, "__file__", None) or ""
        if origin and Path(origin).resolve().is_relative_to(root):
            return  # imported earlier in this job
    found = None if loaded is not None else importlib.util.find_spec(top)
    theirs = found is not None and found.origin and Path(found.origin).resolve().is_relative_to(root)
    if loaded is not None or (found is not None and not theirs):
        raise CodeError(
            f"Your code's module '{brief(top)}' has the name of a module this app already has (Python's own, an "
            "installed library or the app's); importing it would load that one. Rename your file or package."
        )
    if code.package:  # a zip whose top is the package: its folder imported under the package's name
        spec = importlib.util.spec_from_file_location(
            code.package, root / "__init__.py", submodule_search_locations=[str(root)]
        )
        if spec is None or spec.loader is None:
            raise CodeError(f"The package '{brief(code.package)}' could not be opened.")
        module = importlib.util.module_from_spec(spec)
        sys.modules[code.package] = module
        _run_import(lambda: spec.loader.exec_module(module), code.package, top)  # type: ignore[union-attr]
    else:
        sys.path.insert(0, str(root))


def _run_import(step: Any, module: str, top: str) -> Any:
    """Run an import of the person's code, turning what it raises into a message that says what to do."""
    try:
        return step()
    except ModuleNotFoundError as exc:
        missing = exc.name or str(exc)
        if missing.split(".")[0] != top:
            raise CodeError(
                f"Your code imports '{brief(missing)}', which this machine does not have. Install it where the app "
                "runs (pip install …), or upload the module with your code in a zip of the package."
            ) from None
        raise CodeError(f"'{brief(module)}' could not be imported: {brief(exc, 300)}.") from None
    except SyntaxError as exc:
        raise CodeError(
            f"'{brief(exc.filename or module)}' has a syntax error at line {exc.lineno}: {brief(exc.msg, 200)}."
        ) from None
    except (Exception, SystemExit) as exc:
        raise CodeError(f"Importing '{brief(module)}' raised {type(exc).__name__}: {brief(exc, 300)}.") from None


def _import_class(code: UserCode) -> Any:
    import importlib

    import torch

    _claim_name(code)
    top = code.package or code.module.split(".")[0]
    module = _run_import(lambda: importlib.import_module(code.module), code.module, top)
    cls = getattr(module, code.class_name, None)
    if not (isinstance(cls, type) and issubclass(cls, torch.nn.Module)):
        found = [n for n, v in vars(module).items() if isinstance(v, type) and issubclass(v, torch.nn.Module)]
        raise CodeError(
            f"'{brief(code.module)}' has no nn.Module class named '{brief(code.class_name)}'; it has: "
            f"{brief(', '.join(found) or 'none', 300)}."
        )
    return cls


def build_module(code: UserCode) -> Any:
    """The person's model: its class imported from their code and built with their arguments (not yet loaded)."""
    return _construct(_import_class(code), code)


def _construct(cls: Any, code: UserCode) -> Any:
    args = parse_args(code.args, code.class_name)
    try:
        signature = inspect.signature(cls)
    except (TypeError, ValueError):
        signature = None
    if signature is not None:
        try:
            signature.bind(**args)
        except TypeError as exc:
            takes = ", ".join(signature.parameters) or "no arguments"
            raise CodeError(
                f"The arguments do not fit {brief(code.class_name)}: {exc}. It takes: {brief(takes, 300)}."
            ) from None
    try:
        return cls(**args)
    except (Exception, SystemExit) as exc:
        raise CodeError(
            f"{brief(code.class_name)}({brief(', '.join(f'{k}=…' for k in args), 200)}) raised "
            f"{type(exc).__name__}: {brief(exc, 300)}. Check the constructor's arguments."
        ) from None


def load_weights(net: torch.nn.Module, weights: dict[str, Any], name: str) -> ArchitectureMatch:
    """How the weights fit the module's own state_dict; loaded (strictly) when every key and shape fits."""
    expected = {k: tuple(v.shape) for k, v in net.state_dict().items()}
    match = compare_keys({k: tuple(v.shape) for k, v in weights.items()}, expected, name)
    if match.matches:
        net.load_state_dict(weights, strict=True)
    return match


def _choose(
    classes: list[ModuleClass], code: UserCode, weights: dict[str, Any]
) -> tuple[Any, UserCode, ArchitectureMatch]:
    """The named class, or else the first (whole models first) whose state_dict the weights fit."""
    named = [c for c in classes if code.class_name in (c.name, f"{c.module}.{c.name}")]
    if code.class_name:
        if not named:
            listed = ", ".join(c.name for c in classes)
            raise CodeError(
                f"The code has no nn.Module class '{brief(code.class_name)}'; it has: {brief(listed, 300)}."
            )
        tried = [named[0]]
    else:
        tried = sorted(classes, key=lambda c: not c.top)[:MAX_TRIED]
    misfits, failures = [], []
    for cls in tried:
        candidate = UserCode(
            root=code.root, module=cls.module, class_name=cls.name, args=code.args, package=code.package
        )
        built = _import_class(candidate)  # an import that fails, fails for every class: told at once
        try:
            model = _construct(built, candidate)
        except CodeError as exc:
            if code.class_name:
                raise
            failures.append(f"{cls.name}: {exc}")
            continue
        match = load_weights(model, weights, cls.name)
        if match.matches:
            return model, candidate, match
        misfits.append(match)
    summary = " | ".join(mismatch_summary(m) for m in misfits[:3])
    if code.class_name:
        raise CodeError(
            f"The weights ({len(weights)} tensors) do not fit {brief(tried[0].name)} with these arguments: "
            f"{brief(summary, 900)}. Check the class and its arguments (a different size changes the shapes)."
        )
    raise CodeError(
        f"The weights ({len(weights)} tensors) fit none of the code's classes built with "
        + ("their default arguments" if not code.args.strip() or code.args.strip() == "{}" else "these arguments")
        + f": {brief(summary or '; '.join(failures), 900)}. Pick the class and give its arguments."
    )


# the axes a first layer leaves free, by its kind: the batch, and what a convolution slides over or an embedding reads
_FREE_AXES = {
    "Conv1d": {"0": "batch", "2": "length"},
    "Conv2d": {"0": "batch", "2": "height", "3": "width"},
    "Conv3d": {"0": "batch", "2": "depth", "3": "height", "4": "width"},
    "Embedding": {"0": "batch", "1": "sequence"},
    "Linear": {"0": "batch"},
}


def first_layer(net: torch.nn.Module) -> tuple[str, dict[str, str]]:
    """The model's first layer that holds weights (as its code registers them: the first its input meets, in a
    model written in order) and the axes of its input it leaves free; ("", {}) when it is none of _FREE_AXES."""
    for name, module in net.named_modules():
        if next(module.parameters(recurse=False), None) is not None:
            kind = type(module).__name__
            return (f"{name} ({kind})", dict(_FREE_AXES[kind])) if kind in _FREE_AXES else ("", {})
    return "", {}


def _inputs(net: torch.nn.Module, notes: list[Note]) -> list[TensorSpec]:
    """The forward's required parameters: shapes unknown (the person gives them when exporting); the first of them
    offered as dynamic on the axes the first layer leaves free."""
    try:
        params = inspect.signature(net.forward).parameters.values()
    except (TypeError, ValueError):
        return [TensorSpec(name="input", dtype="unknown", shape=None)]
    named = [
        p.name
        for p in params
        if p.default is inspect.Parameter.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    specs = [TensorSpec(name=n, dtype="unknown", shape=None) for n in named or ["input"]]
    layer, free = first_layer(net)
    if free:
        specs[0].dynamic_axes = free
        axes = ", ".join(f"{axis} ({label})" for axis, label in free.items())
        notes.append(note(FIRST_LAYER, layer=brief(layer, 80), name=specs[0].name, axes=axes))
    return specs


def describe_code(
    code_path: Path, weights_path: Path, request: tuple[str, str, str], limits: IntakeLimits, unpack_dir: Path | None
) -> ModelRecord:
    """The record of a model given as its code (``code_path``: a .py or a zip of a package) and its weights.
    ``request`` is (name, class, JSON arguments); the class may be "" (the one the weights fit)."""
    name, class_name, args = request
    refuse_code(code_path, N_("model's own Python code"), limits)
    classes = module_classes(code_path, limits)  # read, not run: a syntax error is told with its line
    if zipfile.is_zipfile(code_path):
        package = zip_package(code_path)
        root = unpack_bundle(code_path, limits, unpack_dir)  # the archive checks: bombs, links, traversal
    else:
        package, root = "", code_path  # the file itself: the sandbox shows a job it, not its whole folder
    unpacked = sorted(str(p) for p in root.rglob("*") if p.is_file()) if root.is_dir() else []  # kept with it
    notes: list[Note] = []
    weights = read_weights(weights_path, detect_format(weights_path), limits, notes)
    parse_args(args, class_name or "the classes")
    wanted = UserCode(root=str(root), module="", class_name=class_name, args=args or "{}", package=package)
    model, code, match = _choose(classes, wanted, weights)
    notes.append(
        note(BUILT_FROM_CODE, name=code.class_name, args=brief(code.args.strip() or "{}", 200), module=code.module)
    )
    notes.append(note(CODE_SHAPES))
    digest = hashlib.sha256(sha256_files(weights_path, [code_path]).encode())
    digest.update(f"{code.module}:{code.class_name}:{json.dumps(parse_args(code.args, ''), sort_keys=True)}".encode())
    return ModelRecord(
        id=digest.hexdigest(),
        name=name or code.class_name,
        format="code",
        size_bytes=weights_path.stat().st_size + code_path.stat().st_size,
        path=str(weights_path),
        files=[str(weights_path), str(code_path), *unpacked],
        inputs=_inputs(model, notes),
        outputs=[TensorSpec(name="output", dtype="unknown", shape=None)],
        parameter_count=sum(p.numel() for p in model.parameters()),
        architecture=code.class_name,
        architecture_matches=[match],
        notes=[*notes],
        code=code,
    )
