"""Per-session workspace folders: where a session's uploads and results live, removed when it ends."""

from __future__ import annotations

import os
import re
import shutil
import stat
import threading
import time
import unicodedata
import uuid
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO, ClassVar

from core.errors import ResultFileError

__all__ = [
    "LAST_USED",
    "Workspace",
    "modified",
    "open_within",
    "safe_filename",
    "shown_name",
    "sweep_closed_sessions",
    "sweep_workspaces",
]

LAST_USED = ".last-used"  # touched whenever a workspace (or a kept model, core.model.library) is used
_MARKER = LAST_USED
_OWNER = ".owner"


NAME_BYTES = 120  # a file name's length on disk, in UTF-8 bytes (file systems allow 255)


def _base(name: str) -> str:
    """The last part of a path a browser sent, in Unicode's composed form."""
    return unicodedata.normalize("NFC", name.replace("\\", "/").rsplit("/", 1)[-1])


def _cut(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` bytes of UTF-8, on a character's boundary."""
    return text.encode()[:limit].decode(errors="ignore")


def safe_filename(name: str, fallback: str = "upload") -> str:
    """A plain file name from whatever a browser sent: no folders, only letters and digits of any script and
    ``._-`` (方向分类.onnx stays itself; spaces, punctuation, control and invisible characters become _), at most
    NAME_BYTES bytes with its suffix kept, never empty."""
    cleaned = re.sub(r"[^\w.-]+", "_", _base(name)).strip("._")
    stem, dot, suffix = cleaned.rpartition(".")
    if not dot or not stem or len(suffix.encode()) > 16:
        stem, suffix = cleaned, ""
    room = NAME_BYTES - len(suffix.encode()) - 1 if suffix else NAME_BYTES
    cut = _cut(stem, room)
    cut = cut if cut == stem else cut.rstrip("._")
    return (f"{cut}.{suffix}" if suffix else cut) if cut else fallback


def shown_name(name: str, fallback: str = "upload") -> str:
    """The name people see for an uploaded file: its own name without folders or its last suffix, as they wrote
    it (方向分类, "my model (v2)"), with control and invisible characters dropped, at most 120 characters."""
    stem = _base(name)
    stem = stem.rsplit(".", 1)[0] if "." in stem.strip(".") else stem
    kept = "".join(c for c in stem if unicodedata.category(c)[0] != "C").strip()
    return kept[:120] if kept.strip(".") else fallback


def open_within(path: str | Path, root: str | Path) -> BinaryIO:
    """Open a file a job's result names, for reading, if it is a plain file inside ``root`` (the folder the job
    was given). A result comes from a worker that read an untrusted model: it may name any path, or leave a
    link behind where its file should be."""
    real, base = os.path.realpath(path), os.path.realpath(root)
    if os.path.commonpath([real, base]) != base:
        raise ResultFileError("A file this result names lies outside its folder; it is not read. Run the step again.")
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        raise ResultFileError("A file of this result is gone (its folder was cleared); run the step again.") from exc
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ResultFileError("A file this result names is not a plain file; it is not read. Run the step again.")
    return os.fdopen(fd, "rb")


class Workspace:
    """A folder that belongs to one session; deleted when this object is garbage-collected or closed.

    One object per folder in a process (``open``): a second one for the same session would delete the folder
    under the first when it is collected, while the first still shows results whose files lie there.
    """

    _open: ClassVar[weakref.WeakValueDictionary[Path, Workspace]] = weakref.WeakValueDictionary()
    _opening: ClassVar[threading.Lock] = threading.Lock()

    @classmethod
    def open(cls, root: str | Path, session_id: str | None = None, owner: str = "") -> Workspace:
        """The session's workspace: the one this process already holds for its folder, else a new one."""
        path = Path(root) / safe_filename(session_id or uuid.uuid4().hex)
        with cls._opening:
            found = cls._open.get(path)
            if found is not None and not found.closed:
                found.touch()
                return found
            made = cls(root, session_id, owner)
            cls._open[made.path] = made
            return made

    def __init__(self, root: str | Path, session_id: str | None = None, owner: str = "") -> None:
        self.id = safe_filename(session_id or uuid.uuid4().hex)
        self.path = Path(root) / self.id
        self.path.mkdir(parents=True, exist_ok=True)
        (self.path / _OWNER).write_text(owner)
        self.touch()
        # The folder goes when the session's state goes (Streamlit drops it after the browser disconnects).
        self._finalizer = weakref.finalize(self, shutil.rmtree, str(self.path), True)

    def touch(self) -> None:
        """Mark the workspace as in use, so the age sweep leaves it alone (re-made if a sweep took it)."""
        self.path.mkdir(parents=True, exist_ok=True)
        (self.path / _MARKER).touch()

    def new_folder(self, prefix: str) -> Path:
        folder = self.path / f"{prefix}-{uuid.uuid4().hex[:12]}"
        folder.mkdir(parents=True)
        return folder

    def read_file(self, path: str | Path) -> bytes:
        """A result's file, for a download: only a plain file inside this workspace (see open_within)."""
        with open_within(path, self.path) as fh:
            return fh.read()

    def size_bytes(self) -> int:
        """Everything this session keeps on disk."""
        return sum(f.stat().st_size for f in self.path.rglob("*") if f.is_file() and not f.is_symlink())

    def prune(self, prefix: str, keep: set[Path]) -> list[Path]:
        """Remove this session's ``prefix`` folders (earlier uploads) except the ones holding a path in ``keep``
        (the model in use): a session that uploads again does not pile up every earlier upload."""
        removed = []
        for folder in self.path.glob(f"{prefix}-*"):
            if folder.is_dir() and not any(p.is_relative_to(folder) for p in keep):
                shutil.rmtree(folder, ignore_errors=True)
                removed.append(folder)
        return removed

    def close(self) -> None:
        self._finalizer()

    @property
    def closed(self) -> bool:
        return not self._finalizer.alive


def modified(path: Path) -> float:
    """When ``path`` last changed (its mtime); 0 when another process removed it meanwhile, so it sorts first."""
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _remove_stale(root: str | Path, stale: Callable[[Path], bool]) -> list[Path]:
    """Remove the folders under ``root`` (never one behind a link) that ``stale`` says are; the ones removed."""
    root = Path(root)
    if not root.is_dir():
        return []
    removed = [f for f in root.iterdir() if f.is_dir() and not f.is_symlink() and stale(f)]
    for folder in removed:
        shutil.rmtree(folder, ignore_errors=True)
    return removed


def sweep_workspaces(root: str | Path, max_age_s: float, now: float | None = None) -> list[Path]:
    """Remove workspaces unused for longer than ``max_age_s`` (left by crashed or killed servers); also any other
    folders under ``root`` that mark their use with ``LAST_USED`` (the model library's)."""
    now = time.time() if now is None else now

    def unused(folder: Path) -> bool:
        marker = folder / _MARKER
        try:
            last = marker.stat().st_mtime if marker.exists() else folder.stat().st_mtime
        except OSError:
            return False
        return now - last > max_age_s

    return _remove_stale(root, unused)


def sweep_closed_sessions(
    root: str | Path,
    owner: str,
    is_active: Callable[[str], bool],
    grace_s: float,
    inactive_since: dict[str, float],
    now: float | None = None,
) -> list[Path]:
    """Remove the workspaces of ``owner`` whose session has been inactive for ``grace_s`` seconds.

    ``inactive_since`` carries state between calls (session id -> when it was first seen inactive), so a
    session that reconnects within the grace period keeps its files. Other owners' folders (another server
    process sharing the folder) are left alone.
    """
    now = time.monotonic() if now is None else now

    def closed(folder: Path) -> bool:
        try:
            if (folder / _OWNER).read_text() != owner:
                return False
        except OSError:
            return False
        if is_active(folder.name):
            inactive_since.pop(folder.name, None)
            return False
        if now - inactive_since.setdefault(folder.name, now) < grace_s:
            return False
        inactive_since.pop(folder.name, None)
        return True

    return _remove_stale(root, closed)
