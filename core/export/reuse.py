"""An export of a built-in sample, made before on this machine with the same settings, is reused.

Exporting a sample is the walk-through's first heavy step, and the same one for everybody: a workshop of thirty
exports TinyCNN with the defaults thirty times, each worker importing torch and torch.export (about ten
CPU-seconds on two cores). The result depends only on the sample (built from the code, seeded), the options,
the exporter's code and the versions of the libraries, so the first verified export of a sample is kept in the
cache folder (``Settings.cache_dir``) under a key made of all of them, and the next request with the same key
gets a copy of its files and its report (``ExportReport.reused``) without a worker.

Only samples: a user's own model never lands in a folder another user's request reads from. The cache is
written by the server (never by a worker) and read by the server; an entry appears whole (renamed into place)
and one that cannot be read is a miss.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.metadata
import os
import shutil
import sys
import uuid
from pathlib import Path

import msgspec

from core.export.options import ExportReport, ExportRequest

__all__ = ["MAX_ENTRIES", "MAX_ENTRY_BYTES", "earlier", "keep", "key_of"]

MAX_ENTRIES = 32  # the oldest go first; a sample's export is a few MB at most
MAX_ENTRY_BYTES = 256 << 20
_FOLDER = "sample-exports"
_REPORT, _MADE_IN = "report.json", "made-in.txt"
# what the result depends on besides the request: the libraries' versions, and the code that builds and exports
_LIBRARIES = ("torch", "onnx", "onnxruntime", "onnxscript", "numpy")
_CODE = ("export", "model")  # core/export and core/model: the exporter, the verification, the samples


@functools.cache
def _made_by() -> str:
    """The libraries' versions and a digest of the code that builds, exports and verifies a sample."""
    digest = hashlib.sha256(sys.version.encode())
    for name in _LIBRARIES:
        try:
            version = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            version = "-"
        digest.update(f"{name}={version};".encode())
    core = Path(__file__).resolve().parent.parent
    for package in _CODE:
        for source in sorted((core / package).glob("*.py")):
            digest.update(source.name.encode() + source.read_bytes())
    return digest.hexdigest()


def key_of(request: ExportRequest) -> str | None:
    """The cache key of ``request``: None unless it exports a built-in sample."""
    if request.source.kind != "sample":
        return None
    asked = msgspec.json.encode([request.source, request.options, request.file_name])
    return hashlib.sha256(_made_by().encode() + asked).hexdigest()[:40]


def _root(cache_dir: str) -> Path:
    return Path(cache_dir) / _FOLDER


def earlier(request: ExportRequest, cache_dir: str) -> ExportReport | None:
    """The kept report of an export made from the same request, its files copied into ``request.out_dir`` and
    the report naming them there; None when there is none (or it cannot be read)."""
    key = key_of(request)
    if key is None or not cache_dir or not request.out_dir:
        return None
    entry = _root(cache_dir) / key
    try:
        made_in = (entry / _MADE_IN).read_text(encoding="utf-8")
        text = (entry / _REPORT).read_text(encoding="utf-8")
        out = Path(request.out_dir)
        moved = text.replace(_json_path(made_in + "/"), _json_path(str(out) + "/"))
        if _json_path(made_in + "/") in moved:  # a path that was written otherwise: not safe to reuse
            return None
        report = msgspec.json.decode(moved, type=ExportReport)
        out.mkdir(parents=True, exist_ok=True)
        for name in _names(report, out):
            shutil.copyfile(entry / "files" / name, out / name)
        os.utime(entry)  # the oldest unused entries go first
    except (OSError, UnicodeDecodeError, msgspec.DecodeError, ValueError):
        return None
    report.reused = True
    return report


def keep(request: ExportRequest, report: ExportReport, cache_dir: str) -> None:
    """Keep a verified export of a sample for the next request with the same key (nothing else is kept)."""
    key = key_of(request)
    if key is None or not cache_dir or not request.out_dir or report.reused or not (report.ok and report.usable):
        return
    out = Path(request.out_dir)
    root = _root(cache_dir)
    if (root / key).exists():
        return
    try:
        names = _names(report, out)
        if sum((out / n).stat().st_size for n in names) > MAX_ENTRY_BYTES:
            return
        building = root / f".{uuid.uuid4().hex}"
        (building / "files").mkdir(parents=True)
        try:
            for name in names:
                shutil.copyfile(out / name, building / "files" / name)
            (building / _MADE_IN).write_text(str(out), encoding="utf-8")
            (building / _REPORT).write_bytes(msgspec.json.encode(report))
            building.rename(root / key)  # whole or not at all; another process may have kept it first
        finally:
            shutil.rmtree(building, ignore_errors=True)
        _evict(root)
    except (OSError, ValueError):
        return  # a cache that cannot be written costs the next request an export, nothing else


def _names(report: ExportReport, out: Path) -> list[str]:
    """The names of the export's files, each directly in ``out`` (anything else is not this module's to copy)."""
    names = []
    for file in report.files:
        path = Path(file)
        if path.parent != out or path.name in ("", ".", ".."):
            raise ValueError(f"{file} is not in {out}")
        names.append(path.name)
    return names


def _json_path(path: str) -> str:
    return msgspec.json.encode(path).decode()[1:-1]


def _evict(root: Path) -> None:
    entries = sorted((e for e in root.iterdir() if not e.name.startswith(".")), key=_mtime, reverse=True)
    for stale in entries[MAX_ENTRIES:]:
        shutil.rmtree(stale, ignore_errors=True)


def _mtime(entry: Path) -> float:
    with contextlib.suppress(OSError):
        return entry.stat().st_mtime
    return 0.0
