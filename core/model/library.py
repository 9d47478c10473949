"""Models kept by content, so that a link (and a reload of the browser tab) opens the same model again.

A session's uploads live in its workspace, which goes when the session goes; a browser reload starts a new
session. So a model that becomes current is also kept here, under the data folder, by its sha256: its files
(hard links to the workspace's copies where the file system allows) and its record, with the PyTorch model it
was exported from. Each keeping gets a random key and its own record (found by the key's hash); the model
opens only with its id and a key, so a link is a capability: whoever holds it may open the model, nobody can
guess one, and two people who upload the same bytes share the files but not each other's names for them.
Models unused for longer than the retention are removed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path

import msgspec

from core.model.records import ModelRecord
from core.workspace import LAST_USED, sweep_workspaces

__all__ = ["Kept", "ModelLibrary"]

_ID = re.compile(r"^[0-9a-f]{64}$")
_USED = LAST_USED  # touched whenever the model is kept or opened


@dataclass
class Kept:
    """What one keeping holds: the record (with the library's paths) and the PyTorch model it came from. Two
    people who upload the same bytes share the files, never the record: each keeps their own name for it."""

    record: ModelRecord
    exported_from: ModelRecord | None = None


class ModelLibrary:
    def __init__(self, root: str | Path, max_age_s: float) -> None:
        self.root = Path(root)
        self.max_age_s = max_age_s

    def _folder(self, model_id: str) -> Path | None:
        return self.root / model_id if _ID.match(model_id) else None

    @staticmethod
    def _link(folder: Path, key: str) -> Path:
        return folder / "links" / f"{hashlib.sha256(key.encode()).hexdigest()}.msgpack"

    def keep(self, record: ModelRecord, exported_from: ModelRecord | None = None) -> str | None:
        """Keep ``record`` (and the PyTorch model it came from); the key that opens it, or None for a model that
        cannot be kept (a file outside its main file's folder)."""
        folder = self._folder(record.id)
        if folder is None:
            return None
        self.sweep()
        kept_record = _copied(record, folder / "model")
        kept_from = (
            _copied(exported_from, folder / f"from-{exported_from.id[:16]}") if exported_from is not None else None
        )
        if kept_record is None or (exported_from is not None and kept_from is None):
            return None
        key = secrets.token_urlsafe(18)
        link = self._link(folder, key)
        link.parent.mkdir(parents=True, exist_ok=True)
        link.write_bytes(msgspec.msgpack.encode(Kept(kept_record, kept_from)))
        (folder / _USED).touch()
        return key

    def open(self, model_id: str, key: str) -> Kept | None:
        """The kept model for this id and key, or None (no such model, gone, or the wrong key)."""
        folder = self._folder(model_id)
        if folder is None or not key:
            return None
        try:
            kept = msgspec.msgpack.decode(self._link(folder, key).read_bytes(), type=Kept)
        except (OSError, msgspec.DecodeError, msgspec.ValidationError):
            return None
        if not Path(kept.record.path).is_file():
            return None
        (folder / _USED).touch()  # in use: the retention counts from now
        return kept

    def _result(self, model_id: str, key: str, name: str) -> Path | None:
        """Where this keeper's result ``name`` lies, when the model was kept under this key."""
        folder = self._folder(model_id)
        if folder is None or not key or not re.match(r"^\w+$", name) or not self._link(folder, key).is_file():
            return None
        return self._link(folder, key).with_suffix("") / f"{name}.msgpack"

    def keep_result(self, model_id: str, key: str, name: str, data: bytes) -> None:
        """Keep a page's result (``data``, as the job boundary encodes it) for this keeper of the model, so that
        a reload shows it at once."""
        target = self._result(model_id, key, name)
        if target is not None:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)

    def result(self, model_id: str, key: str, name: str) -> bytes | None:
        """The result kept under ``name`` for this keeper of the model, or None."""
        target = self._result(model_id, key, name)
        try:
            return target.read_bytes() if target is not None else None
        except OSError:
            return None

    def sweep(self, now: float | None = None) -> list[Path]:
        """Remove models unused for longer than the retention (as workspaces are)."""
        return sweep_workspaces(self.root, self.max_age_s, now)


def _copied(record: ModelRecord | None, folder: Path) -> ModelRecord | None:
    """``record`` with its files linked (or copied) into ``folder``, side by side as they were; a record with
    no files (a built-in sample) as it is."""
    if record is None or not record.path:
        return record
    main = Path(record.path)
    base = main.parent
    files = [Path(f) for f in (record.files or [record.path])]
    if not all(f.resolve().is_relative_to(base.resolve()) for f in files):
        return None
    moved = {}
    for source in files:
        target = folder / source.resolve().relative_to(base.resolve())
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists():  # the same bytes kept before (the id is their hash)
            try:
                os.link(source, target)
            except OSError:
                shutil.copy2(source, target)
        moved[str(source)] = str(target)
    return dataclasses.replace(
        record, path=moved.get(record.path, str(folder / main.name)), files=[moved[str(f)] for f in files]
    )
