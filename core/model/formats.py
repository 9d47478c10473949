"""Recognise a model file by its bytes (never its name), and name it by its content (sha256)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from core.model.code_listing import is_python_source
from core.model.protowire import looks_like_onnx

__all__ = [
    "HEAD_BYTES",
    "detect_format",
    "file_sha256",
    "folder_root_in_zip",
    "read_head",
    "sha256_files",
    "zip_names",
]

HEAD_BYTES = 4096
ZIP_MAGIC = b"PK\x03\x04"
LEGACY_TORCH_MAGIC = bytes.fromhex("8a0a6cfc9c46f9206aa85019")  # torch.save's magic number, pickled as LONG1


def read_head(path: Path) -> bytes:
    with path.open("rb") as fh:
        return fh.read(HEAD_BYTES)


def zip_names(path: Path) -> list[str]:
    """The member names of a zip archive (its declared entry count checked first, before the listing is read)."""
    from core.model.archives import list_members

    return [info.filename for info in list_members(path)]


def folder_root_in_zip(names: list[str]) -> str | None:
    """Where a zip holds a Hugging Face folder: "" (config.json at its top) or "name/" (one folder at its top); None
    when it holds none (no config.json beside weights or ONNX files, core.model.hf_folder)."""
    for root in ("", *sorted({n.split("/", 1)[0] + "/" for n in names if "/" in n})):
        inside = [n[len(root) :] for n in names if n.startswith(root)]
        if "config.json" in inside and any(
            n.endswith((".safetensors", ".bin", ".onnx")) and n.count("/") <= 1 for n in inside
        ):
            return root
    return None


def _looks_like_safetensors(head: bytes, size: int) -> bool:
    if len(head) < 10:
        return False
    header_len = int.from_bytes(head[:8], "little")
    return 2 <= header_len <= size - 8 and head[8:9] == b"{"


def detect_format(path: str | os.PathLike[str]) -> str:
    """The format of one file, from its content: onnx, onnx-damaged, onnx-bundle, hf-zip (a Hugging Face folder),
    state_dict-zip, torchscript, pt2, safetensors, legacy-torch, pickle, python (a .py file of text), code-zip (a zip
    of Python files), zip, empty or unknown."""
    path = Path(path)
    size = path.stat().st_size
    if size == 0:
        return "empty"
    head = read_head(path)
    if head.startswith(ZIP_MAGIC):
        names = zip_names(path)
        if folder_root_in_zip(names) is not None:  # before its .onnx files or .py files say otherwise
            return "hf-zip"
        if any(n.endswith("/data.pkl") or n == "data.pkl" for n in names):
            if any("/code/" in n or n.endswith("constants.pkl") for n in names):
                return "torchscript"
            return "state_dict-zip"
        if any(n.endswith("/archive_format") or "/data/weights/" in n or "/models/" in n for n in names):
            return "pt2"
        if any(n.lower().endswith(".onnx") for n in names):
            return "onnx-bundle"
        if any(n.endswith(".py") for n in names):
            return "code-zip"
        return "zip"
    if head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        return "legacy-torch" if head[2:14] == LEGACY_TORCH_MAGIC else "pickle"
    if is_python_source(path.name, head):
        return "python"
    if _looks_like_safetensors(head, size):
        return "safetensors"
    evidence = looks_like_onnx(head, size)
    if evidence == "onnx":
        return "onnx"
    if evidence == "damaged":
        return "onnx-damaged"
    return "unknown"


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def sha256_files(main: Path, data_files: list[Path]) -> str:
    """The model's id: the main file's sha256, or with data files, the sha256 of every file's name and hash."""
    if not data_files:
        return file_sha256(main)
    digest = hashlib.sha256(file_sha256(main).encode())
    for path in sorted(data_files, key=lambda p: p.name):
        digest.update(f"{path.name}:{file_sha256(path)}".encode())
    return digest.hexdigest()
