"""Zip archives checked before anything is unpacked: entry counts, sizes, bomb ratios, names and links."""

from __future__ import annotations

import stat
import zipfile
from pathlib import Path, PurePosixPath

from core.errors import LimitExceededError, UnsafeModelError
from core.settings import IntakeLimits

__all__ = ["MAX_ZIP_ENTRIES", "MAX_ZIP_RATIO", "check_zip", "unpack_bundle"]

MAX_ZIP_ENTRIES = 10_000
MAX_ZIP_RATIO = 200  # a member that expands more than this is treated as a zip bomb


def check_zip(path: Path, limits: IntakeLimits) -> list[zipfile.ZipInfo]:
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


def unpack_bundle(path: Path, limits: IntakeLimits, into: Path | None = None) -> Path:
    """Unpack a .zip of an ONNX model's folder next to it, refusing names that leave the folder or links."""
    infos = check_zip(path, limits)
    target = (into or path.parent) / (path.stem + "_unzipped")
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
