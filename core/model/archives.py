"""Zip archives checked before anything is unpacked: entry counts, sizes, bomb ratios, names and links.

The entry count is read from the end-of-central-directory record before any listing is parsed, so an archive
that claims millions of entries is refused in milliseconds; sizes are the members' own headers, summed over the
whole archive, and each member is checked again while it is written in case its header lied.
"""

from __future__ import annotations

import stat
import struct
import zipfile
from pathlib import Path, PurePosixPath

from core.errors import LimitExceededError, UnsafeModelError, UnsupportedFormatError, brief
from core.i18n import _, number
from core.settings import IntakeLimits

__all__ = ["MAX_ZIP_ENTRIES", "MAX_ZIP_RATIO", "check_zip", "list_members", "unpack_bundle", "zip_entry_count"]

MAX_ZIP_ENTRIES = 10_000
MAX_ZIP_RATIO = 200  # an archive (or member) that expands more than this is treated as a zip bomb
BOMB_FLOOR = 16 << 20  # below this much unpacked, a high ratio is harmless (small text files compress well)
MAX_NAME = 255  # per path component, as file systems allow
MAX_PATH = 1024
_EOCD = b"PK\x05\x06"
_ZIP64_LOCATOR = b"PK\x06\x07"


def zip_entry_count(path: Path) -> int:
    """How many entries the archive's end-of-central-directory record declares (zip64 too), read from its last
    bytes without parsing the listing; -1 when there is no such record (not a readable zip)."""
    size = path.stat().st_size
    with path.open("rb") as fh:
        fh.seek(max(0, size - (1 << 16) - 22))
        tail = fh.read()
        at = tail.rfind(_EOCD)
        if at < 0 or len(tail) - at < 22:
            return -1
        count = struct.unpack_from("<H", tail, at + 10)[0]
        locator = tail.rfind(_ZIP64_LOCATOR, 0, at)
        if count == 0xFFFF and locator >= 0 and len(tail) - locator >= 20:
            offset = struct.unpack_from("<Q", tail, locator + 8)[0]
            fh.seek(offset)
            record = fh.read(56)
            if len(record) == 56 and record[:4] == b"PK\x06\x06":
                count = struct.unpack_from("<Q", record, 32)[0]
    return int(count)


def list_members(path: Path) -> list[zipfile.ZipInfo]:
    count = zip_entry_count(path)
    if count > MAX_ZIP_ENTRIES:
        raise LimitExceededError(
            _("'{file}' holds {count} files; at most {max_zip_entries} are read.").format(
                file=brief(path.name), count=number(count), max_zip_entries=number(MAX_ZIP_ENTRIES)
            )
        )
    try:
        with zipfile.ZipFile(path) as zf:
            return zf.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise UnsupportedFormatError(
            _(
                "'{file}' starts like a zip archive but cannot be read as one ({value}). It may be "
                "truncated: upload it again."
            ).format(file=brief(path.name), value=brief(exc, 200))
        ) from None


def check_zip(path: Path, limits: IntakeLimits) -> list[zipfile.ZipInfo]:
    """The archive's members, after refusing too many, too large in all, or expanding like a bomb."""
    infos = list_members(path)
    if len(infos) > MAX_ZIP_ENTRIES:
        raise LimitExceededError(
            _("'{file}' holds {count} files; at most {max_zip_entries} are read.").format(
                file=brief(path.name), count=number(len(infos)), max_zip_entries=number(MAX_ZIP_ENTRIES)
            )
        )
    total = sum(i.file_size for i in infos)
    if total > limits.max_initializer_bytes + (64 << 20):
        raise LimitExceededError(
            _(
                "'{file}' would expand to {total} MB, more than this instance accepts "
                "({max_initializer_bytes} MB of weights)."
            ).format(
                file=brief(path.name),
                total=number(total / 2**20, 0),
                max_initializer_bytes=number(limits.max_initializer_bytes / 2**20, 0),
            )
        )
    packed = sum(i.compress_size for i in infos)
    if total > BOMB_FLOOR and total > MAX_ZIP_RATIO * max(packed, 1):
        raise UnsafeModelError(
            _(
                "'{file}' is a zip bomb: its {count} files would expand {ratio}× to {mb} MB, so it was not unpacked."
            ).format(
                file=brief(path.name),
                count=number(len(infos)),
                ratio=number(total // max(packed, 1)),
                mb=number(total / 2**20, 0),
            )
        )
    for info in infos:
        if info.file_size > (1 << 20) and info.file_size > MAX_ZIP_RATIO * max(info.compress_size, 1):
            ratio = info.file_size // max(info.compress_size, 1)
            raise UnsafeModelError(
                _(
                    "'{file}' is a zip bomb: '{member}' would expand {ratio}× to fill the disk, so it was not unpacked."
                ).format(file=brief(path.name), member=brief(info.filename), ratio=number(ratio))
            )
    return infos


def _member_parts(archive: str, info: zipfile.ZipInfo, seen_files: set[str]) -> tuple[str, ...]:
    """The member's path inside the folder, after refusing names that leave it, links, names no file system takes,
    and a file that stands where another member needs a folder."""
    name = info.filename.replace("\\", "/")
    parts = tuple(p for p in PurePosixPath(name).parts if p != ".")
    if name.startswith("/") or ".." in parts or (len(name) > 1 and name[1] == ":"):
        raise UnsafeModelError(
            _("'{archive}' holds '{member}', a path outside the archive's folder.").format(
                archive=archive, member=brief(info.filename)
            )
        )
    if stat.S_ISLNK(info.external_attr >> 16):
        raise UnsafeModelError(
            _("'{archive}' holds a link ('{member}'); links are not unpacked.").format(
                archive=archive, member=brief(info.filename)
            )
        )
    if (not parts and not info.is_dir()) or len(name) > MAX_PATH or any(len(p) > MAX_NAME for p in parts):
        raise UnsafeModelError(
            _(
                "'{archive}' holds a member named '{member}', which no folder can hold as a file "
                "({count} characters). It was not unpacked."
            ).format(archive=archive, member=brief(info.filename), count=number(len(name)))
        )
    if any("\x00" in p or any(ord(c) < 32 for c in p) for p in parts):
        raise UnsafeModelError(
            _("'{archive}' holds a member whose name has control characters; it was not unpacked.").format(
                archive=archive
            )
        )
    for depth in range(1, len(parts)):
        if "/".join(parts[:depth]) in seen_files:
            raise UnsafeModelError(
                _(
                    "'{archive}' holds '{path}' both as a file and as a folder of other members; it was not unpacked."
                ).format(archive=archive, path=brief("/".join(parts[:depth])))
            )
    return parts


def unpack_bundle(path: Path, limits: IntakeLimits, into: Path | None = None) -> Path:
    """Unpack a .zip of an ONNX model's folder into ``into`` (beside it by default), refusing names that leave
    the folder, links, and members larger than their headers say."""
    infos = check_zip(path, limits)
    archive = brief(path.name)
    target = (into or path.parent) / (path.stem + "_unzipped")
    target.mkdir(parents=True, exist_ok=True)
    files = {"/".join(p for p in PurePosixPath(i.filename).parts if p != ".") for i in infos if not i.is_dir()}
    with zipfile.ZipFile(path) as zf:
        for info in infos:
            parts = _member_parts(archive, info, files)
            if info.is_dir() or not parts:
                continue
            out = target.joinpath(*parts)
            if out.is_dir():
                raise UnsafeModelError(
                    _("'{archive}' holds '{member}' twice, as a folder and a file.").format(
                        archive=archive, member=brief(info.filename)
                    )
                )
            out.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src, out.open("wb") as dst:
                remaining = info.file_size + 1
                while chunk := src.read(1 << 20):
                    remaining -= len(chunk)
                    if remaining < 0:  # the header lied about the size
                        raise UnsafeModelError(
                            _("'{member}' in '{archive}' is larger than its header says.").format(
                                member=brief(info.filename), archive=archive
                            )
                        )
                    dst.write(chunk)
    return target
