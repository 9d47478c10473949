"""A model's own code (one ``.py`` file, or a zip of a package) read as text: its ``nn.Module`` classes and their
constructor parameters, found with ``ast`` and never by importing it, so the web server can list them safely.

A class counts when a base is ``nn.Module``, ``torch.nn.Module`` or ``Module`` (or nn's Sequential/ModuleList/
ModuleDict), or a class found so in the same code. Nothing is executed: the source is parsed, only module-level
classes and their ``__init__`` signatures are read, and defaults are taken only when they are plain literals.
"""

from __future__ import annotations

import ast
import json
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from core.errors import CodeError, LimitExceededError, brief
from core.settings import IntakeLimits

__all__ = [
    "MAX_SOURCE_BYTES",
    "CodeFile",
    "ModuleClass",
    "ModuleParam",
    "code_files",
    "default_args",
    "is_python_source",
    "list_classes",
    "module_classes",
    "zip_package",
]

MAX_SOURCE_BYTES = 4 << 20  # all the Python source of one upload; real model packages are well under 1 MB
MAX_CODE_FILES = 2_000
MAX_DEFAULT = 2_000  # characters of one default shown in the arguments' JSON
_MODULE_BASES = {"Module", "Sequential", "ModuleList", "ModuleDict"}


@dataclass(frozen=True, kw_only=True)
class ModuleParam:
    """One parameter of a class's ``__init__``: its default as JSON text ("" when it has none, or one that is not
    a plain literal)."""

    name: str
    default: str = ""
    required: bool = True


@dataclass(frozen=True, kw_only=True)
class ModuleClass:
    """An ``nn.Module`` subclass found in the code: where it is and what its constructor takes."""

    name: str
    module: str  # the dotted module that defines it, as the worker imports it ("model", "mypkg.layers")
    file: str  # its file inside the upload, as the person named it
    line: int
    params: list[ModuleParam] = field(default_factory=list)
    top: bool = False  # no other class of the code uses it: likely the whole model


@dataclass(frozen=True)
class CodeFile:
    """One source file of the upload: its module name and text."""

    module: str
    file: str
    text: str


def is_python_source(name: str, head: bytes) -> bool:
    """Whether a file is Python source: a ``.py`` name and text bytes (no NUL, UTF-8)."""
    if not name.lower().endswith(".py") or b"\x00" in head:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start >= len(head) - 3  # a character cut at the end of the head
    return True


def _module_name(parts: tuple[str, ...]) -> str:
    names = [*parts[:-1], parts[-1].removesuffix(".py")]
    if names[-1] == "__init__":
        names = names[:-1]
    return ".".join(names)


def _decode(data: bytes, file: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CodeError(f"'{brief(file)}' is not UTF-8 text (byte {exc.start:,}); save it as UTF-8.") from None


def code_files(path: Path, limits: IntakeLimits, package: str = "") -> list[CodeFile]:
    """The Python files of a ``.py`` upload or a zip of a package, each with the module name the worker imports
    it by (a zip whose top holds ``__init__.py`` is the package ``package``). Sizes are checked before reading."""
    from core.model.archives import check_zip

    if not zipfile.is_zipfile(path):
        if path.stat().st_size > MAX_SOURCE_BYTES:
            raise LimitExceededError(
                f"'{brief(path.name)}' is {path.stat().st_size / 2**20:,.1f} MB of source; at most "
                f"{MAX_SOURCE_BYTES >> 20} MB of Python is read."
            )
        return [CodeFile(path.stem, path.name, _decode(path.read_bytes(), path.name))]
    infos = [
        i for i in check_zip(path, limits) if i.filename.endswith(".py") and not i.is_dir() and not _junk(i.filename)
    ]
    if len(infos) > MAX_CODE_FILES or sum(i.file_size for i in infos) > MAX_SOURCE_BYTES:
        raise LimitExceededError(
            f"'{brief(path.name)}' holds {len(infos):,} Python files, {sum(i.file_size for i in infos) / 2**20:,.1f} "
            f"MB in all; at most {MAX_CODE_FILES:,} files and {MAX_SOURCE_BYTES >> 20} MB are read."
        )
    found = []
    with zipfile.ZipFile(path) as zf:
        for info in infos:
            parts = tuple(p for p in PurePosixPath(info.filename.replace("\\", "/")).parts if p not in (".", ""))
            if not parts or ".." in parts or info.filename.startswith("/"):
                continue  # unpacking refuses it with its reason; listing just skips it
            with zf.open(info) as member:
                data = member.read(MAX_SOURCE_BYTES + 1)
            if len(data) > info.file_size:
                raise LimitExceededError(f"'{brief(info.filename)}' in '{brief(path.name)}' is larger than it says.")
            module = _module_name(parts)
            if package:
                module = f"{package}.{module}" if module else package
            found.append(CodeFile(module, info.filename, _decode(data, info.filename)))
    return found


def _junk(name: str) -> bool:
    """What a Mac's Finder adds to a zip (``__MACOSX/``, ``._net.py``): binary metadata, not code."""
    parts = name.replace("\\", "/").split("/")
    return parts[0] == "__MACOSX" or parts[-1].startswith("._")


def zip_package(path: Path) -> str:
    """The package name a zip with ``__init__.py`` at its top is imported as (its file name, as an identifier);
    "" when its packages are folders inside it."""
    with zipfile.ZipFile(path) as zf:
        if "__init__.py" not in zf.namelist():
            return ""
    name = "".join(c if c.isalnum() or c == "_" else "_" for c in path.stem) or "package"
    return name if not name[0].isdigit() else f"_{name}"


def _parse(source: CodeFile) -> ast.Module:
    try:
        return ast.parse(source.text, filename=source.file)
    except SyntaxError as exc:
        where = f"line {exc.lineno}" if exc.lineno else "somewhere"
        raise CodeError(
            f"'{brief(source.file)}' has a syntax error at {where}: {brief(exc.msg, 200)}. Fix it and upload again."
        ) from None
    except (RecursionError, MemoryError, ValueError) as exc:
        raise CodeError(
            f"'{brief(source.file)}' nests too deeply to be read ({type(exc).__name__}); no real model code does."
        ) from None


def _base_name(node: ast.expr) -> str:
    """``nn.Module`` -> Module, ``torch.nn.Module`` -> Module, ``layers.Block`` -> Block, ``Block`` -> Block."""
    if isinstance(node, ast.Subscript):  # Generic[...]
        node = node.value
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


def _default(node: ast.expr | None) -> str:
    if node is None:
        return ""
    try:
        value = ast.literal_eval(node)
        text = json.dumps(list(value) if isinstance(value, tuple) else value)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError, OverflowError):
        return ""  # not a plain literal (a call, a name): the constructor's own default is used
    return text if len(text) <= MAX_DEFAULT else ""  # too long to prefill: the constructor's own is used


def _params(init: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ModuleParam]:
    args = init.args
    positional = [*args.posonlyargs, *args.args][1:]  # without self
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    params = [
        ModuleParam(name=a.arg, default=_default(d), required=d is None)
        for a, d in zip(positional, defaults, strict=True)
    ]
    params += [
        ModuleParam(name=a.arg, default=_default(d), required=d is None)
        for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)
    ]
    return params


def list_classes(sources: list[CodeFile]) -> list[ModuleClass]:
    """The ``nn.Module`` subclasses defined at the top level of the sources, by reading them (never importing)."""
    classes: dict[str, tuple[CodeFile, ast.ClassDef]] = {}
    for source in sources:
        for node in _parse(source).body:
            if isinstance(node, ast.ClassDef):
                classes.setdefault(f"{source.module}:{node.name}", (source, node))
    bases = {key: {_base_name(b) for b in node.bases} for key, (_, node) in classes.items()}
    modules = set(_MODULE_BASES)
    found: list[str] = []
    while True:  # a class deriving from one found: found too (to a fixed point)
        new = [k for k in classes if k not in found and bases[k] & modules]
        if not new:
            break
        found += new
        modules |= {classes[k][1].name for k in new}
    used = _names_used({k: classes[k][1] for k in found})
    listed = []
    for key in sorted(found, key=lambda k: (classes[k][0].module, classes[k][1].lineno)):
        source, node = classes[key]
        listed.append(
            ModuleClass(
                name=node.name,
                module=source.module,
                file=source.file,
                line=node.lineno,
                params=_init_params(key, classes, bases, found),
                top=node.name not in used,
            )
        )
    return listed


def _init_params(
    key: str, classes: dict[str, tuple[CodeFile, ast.ClassDef]], bases: dict[str, set[str]], found: list[str]
) -> list[ModuleParam]:
    """The class's own ``__init__`` parameters, else those of the nearest base found in the same code."""
    seen = set()
    while key not in seen:
        seen.add(key)
        node = classes[key][1]
        for item in node.body:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == "__init__":
                return _params(item)
        parent = next((k for k in found if classes[k][1].name in bases[key]), None)
        if parent is None:
            break
        key = parent
    return []


def _names_used(classes: dict[str, ast.ClassDef]) -> set[str]:
    """The names of the found classes that other found classes mention (as a base, or by building one)."""
    names = {node.name for node in classes.values()}
    used: set[str] = set()
    for node in classes.values():
        for inner in ast.walk(node):  # iterative: a deep tree costs time, not the stack
            name = _base_name(inner) if isinstance(inner, (ast.Name, ast.Attribute)) else ""
            if name in names and name != node.name:
                used.add(name)
    return used


def module_classes(path: Path, limits: IntakeLimits | None = None) -> list[ModuleClass]:
    """The classes of one code upload (a ``.py`` or a zip of a package), with a clear error when there are none."""
    limits = limits or IntakeLimits()
    files = code_files(path, limits, zip_package(path) if zipfile.is_zipfile(path) else "")
    if not files:
        raise CodeError(f"'{brief(path.name)}' holds no Python files (.py); zip the package's folder and upload it.")
    classes = list_classes(files)
    if not classes:
        raise CodeError(
            f"'{brief(path.name)}' defines no nn.Module subclass at its top level, so there is no model class to "
            "build. Upload the file that defines your model's class."
        )
    return classes


def default_args(cls: ModuleClass) -> str:
    """The constructor arguments as a JSON object to start from: every parameter with a literal default, and a
    null to fill in for each required one."""
    values = {p.name: json.loads(p.default) if p.default else None for p in cls.params if p.default or p.required}
    return json.dumps(values, indent=1) if values else "{}"
