"""Models kept by content, so that a link (and a reload of the browser tab) opens the same model again, and
a person's (and their team's) models are listed in their library.

A session's uploads live in its workspace, which goes when the session goes; a browser reload starts a new
session. So a model that becomes current is also kept here, under the data folder, by its sha256: its files
(hard links to the workspace's copies where the file system allows) and its record, with the PyTorch model it
was exported from. Each keeping gets a random key and its own record (found by the key's hash); the model
opens only with its id and a key, so a link is a capability: whoever holds it may open the model, nobody can
guess one, and two people who upload the same bytes share the files but not each other's names for them.
A link opens; it never owns. With sign-in, a keeping also has an owner and a team: it opens for its owner, and for
their team once shared, even with the key; only its owner renames, tags, shares or deletes it. An anonymous
keeping records which browser session kept it (the hash of a secret token the session holds, never the key that
is sent to others): only that session renames, tags or deletes it, and keeps results with it (on a laptop, whose
one user owns every anonymous keeping, the caller says so with ``session=None``). Keepings unused for longer than
the retention are forgotten (anonymous ones sooner). A signed-in owner's library has a quota; anonymous keepings
share one, where a session makes room only among the keepings it made itself, within its own share of the quota:
when the quota is full of others', or the model is larger than a session's share, a new keeping is refused,
never someone else's dropped.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import os
import re
import secrets
import shutil
import time
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from core.errors import WorkbenchError
from core.i18n import _, ngettext
from core.identity import ANONYMOUS, Identity, stored_owner
from core.model.records import ModelRecord
from core.workspace import modified

__all__ = ["Entry", "Kept", "LibraryFull", "ModelLibrary", "NotYourModel", "may_open", "owns"]

_ID = re.compile(r"^[0-9a-f]{64}$")


@dataclass(kw_only=True)
class Kept:
    """What one keeping holds: the record (with the library's paths), the PyTorch model it came from, and who
    keeps it under which name. Two people who upload the same bytes share the files, never the keeping."""

    record: ModelRecord
    exported_from: ModelRecord | None = None
    key: str = ""  # what opens it, in its permalink
    owner: str = ""  # the signed-in person who kept it; "" anonymous (the key alone opens it)
    keeper: str = ""  # anonymous: the sha256 of the owner token of the session that kept it ("" a laptop's)
    team: str = ""
    title: str = ""  # the name its owner gave it; the record's name until renamed
    tags: list[str] = dataclasses.field(default_factory=list)
    shared: bool = False  # the owner's team may open it too
    kept_at: float = 0.0

    @property
    def label(self) -> str:
        return self.title or self.record.name


@dataclass
class Entry:
    """A keeping as a library list shows it."""

    kept: Kept
    used_at: float  # when it was last opened or kept (the retention counts from then)
    bytes_on_disk: int  # the files of its model folder (shared with other keepers of the same bytes)


class LibraryFull(WorkbenchError):
    """Keeping one more model would take its owner past their quota (or an anonymous session past its share)."""


class NotYourModel(WorkbenchError):
    """Renaming, tagging, sharing or deleting a kept model that someone else kept (a link opens, never owns)."""


class ModelLibrary:
    def __init__(
        self,
        root: str | Path,
        max_age_s: float,
        owned_max_age_s: float | None = None,
        quota_bytes: int = 0,
        session_share: float = 1.0,
    ) -> None:
        self.root = Path(root)
        self.max_age_s = max_age_s  # anonymous keepings
        self.owned_max_age_s = owned_max_age_s if owned_max_age_s is not None else max_age_s  # signed-in owners'
        self.quota_bytes = quota_bytes  # per owner (all anonymous keepings together); 0: none
        self.session_share = session_share  # of the anonymous keepings' quota, what one session's may take

    def _folder(self, model_id: str) -> Path | None:
        return self.root / model_id if _ID.match(model_id) else None

    @staticmethod
    def _link(folder: Path, key: str) -> Path:
        return folder / "links" / f"{hashlib.sha256(key.encode()).hexdigest()}.msgpack"

    def keep(
        self,
        record: ModelRecord,
        exported_from: ModelRecord | None = None,
        who: Identity = ANONYMOUS,
        session: str | None = "",
    ) -> str | None:
        """Keep ``record`` (and the PyTorch model it came from) for ``who``, anonymous ones for the browser
        ``session`` that holds this secret owner token (None: a laptop's one user, who owns every anonymous
        keeping); the key that opens it, or None for a model that cannot be kept (a file outside its main file's
        folder). Raises LibraryFull when a signed-in owner's library would pass the quota, or when the anonymous
        keepings' would, or the session's share of it, and dropping the least recently used of the keepings the
        session made itself does not make room."""
        folder = self._folder(record.id)
        if folder is None:
            return None
        self.sweep()
        self._make_room(who, record, exported_from, session)
        kept_record = _copied(record, folder / "model")
        kept_from = (
            _copied(exported_from, folder / f"from-{exported_from.id[:16]}") if exported_from is not None else None
        )
        if kept_record is None or (exported_from is not None and kept_from is None):
            return None
        kept_record = _in_folder_kept(kept_record, record, exported_from, kept_from)
        key = secrets.token_urlsafe(18)
        kept = Kept(
            record=kept_record,
            exported_from=kept_from,
            key=key,
            owner=who.user,
            keeper=_digest(session) if session and not who.signed_in else "",
            team=who.team,
            kept_at=time.time(),
        )
        self._write(folder, kept)
        return key

    def _write(self, folder: Path, kept: Kept) -> None:
        link = self._link(folder, kept.key)
        link.parent.mkdir(parents=True, exist_ok=True)
        partial = link.with_suffix(".partial")
        partial.write_bytes(msgspec.msgpack.encode(kept))
        partial.replace(link)  # a reader sees the old keeping or the new one, never half of one

    def open(self, model_id: str, key: str, who: Identity = ANONYMOUS) -> Kept | None:
        """The kept model for this id and key when ``who`` may open it, or None (no such model, gone, the wrong
        key, or one a signed-in owner keeps that is neither theirs nor shared with their team)."""
        found = self._find(model_id, key)
        if found is None or not may_open(found[1], who):
            return None
        found[0].touch()  # in use: the retention counts from now
        return found[1]

    def _find(self, model_id: str, key: str) -> tuple[Path, Kept] | None:
        folder = self._folder(model_id)
        if folder is None or not key:
            return None
        link = self._link(folder, key)
        kept = _read(link)
        if kept is None or not Path(kept.record.path).exists():  # a file, or a Hugging Face folder
            return None
        return link, kept

    def update(
        self,
        model_id: str,
        key: str,
        who: Identity,
        *,
        session: str | None = "",
        title: str | None = None,
        tags: list[str] | None = None,
        shared: bool | None = None,
    ) -> Kept:
        """Rename, tag or share a keeping; only its owner may (an anonymous one: the ``session`` that kept it).
        Raises NotYourModel for anyone else, whatever key they hold."""
        link, kept = self._owned(model_id, key, who, session)
        if title is not None:
            kept.title = " ".join(title.split())[:200]
        if tags is not None:
            kept.tags = sorted({" ".join(t.split())[:40] for t in tags if t.strip()})[:20]
        if shared is not None:
            kept.shared = shared and bool(kept.owner)  # an anonymous keeping has no team to share with
        self._write(link.parent.parent, kept)
        return kept

    def delete(self, model_id: str, key: str, who: Identity, session: str | None = "") -> None:
        """Forget a keeping with its kept results; the files go with the last keeping of those bytes. Only its
        owner may (an anonymous one: the ``session`` that kept it); NotYourModel for anyone else."""
        link, _ = self._owned(model_id, key, who, session)
        link.unlink(missing_ok=True)
        shutil.rmtree(link.with_suffix(""), ignore_errors=True)
        self._drop_if_unkept(link.parent.parent)

    def _owned(self, model_id: str, key: str, who: Identity, session: str | None) -> tuple[Path, Kept]:
        found = self._find(model_id, key)
        if found is None or not owns(found[1], who, session):
            raise NotYourModel(
                _(
                    "Only whoever kept this model (the person signed in, or the browser session that kept it) can "
                    "rename, tag, share or delete it: its link opens it, nothing more. To keep a copy of your own, "
                    "upload its file again."
                )
            )
        return found

    def entries(self, who: Identity, keys: set[str] | None = None) -> tuple[list[Entry], list[Entry]]:
        """What ``who`` keeps (newest use first; only the keepings with these ``keys`` when given: an anonymous
        visitor of a hosted instance sees what their own session kept, not every anonymous keeping), and what
        their team shares with them."""
        mine: list[Entry] = []
        team: list[Entry] = []
        for link, kept in self._all():  # sized only when shown: a room's library holds everyone's models
            if kept.owner == who.user and (keys is None or kept.key in keys):
                mine.append(Entry(kept, modified(link), _size(link.parent.parent)))
            elif who.signed_in and kept.shared and kept.team == who.team:
                team.append(Entry(kept, modified(link), _size(link.parent.parent)))
        return _newest_first(mine), _newest_first(team)

    def usage(self, who: Identity, keys: Collection[str] | None = None) -> int:
        """Bytes on disk of the models ``who`` keeps (only the keepings with these ``keys`` when given; bytes kept
        twice by them count once)."""
        folders = {
            link.parent.parent
            for link, kept in self._all()
            if kept.owner == who.user and (keys is None or kept.key in keys)
        }
        return sum(_size(f) for f in folders)

    def _all(self) -> Iterator[tuple[Path, Kept]]:
        for link in self.root.glob("*/links/*.msgpack"):
            kept = _read(link)
            if kept is not None:
                yield link, kept

    def session_usage(self, session: str | None) -> int:
        """Bytes on disk of the anonymous keepings this ``session`` made (None: all of them, a laptop's)."""
        folders = {link.parent.parent for link, kept in self._all() if not kept.owner and _kept_by(kept, session)}
        return sum(_size(f) for f in folders)

    def _make_room(
        self, who: Identity, record: ModelRecord, exported_from: ModelRecord | None, session: str | None
    ) -> None:
        if self.quota_bytes <= 0:
            return
        adding = record.size_bytes + (exported_from.size_bytes if exported_from is not None else 0)
        used = self.usage(who)
        # one anonymous session takes its share, never the whole room (a laptop's one user: all of it)
        share = self.quota_bytes if who.signed_in or session is None else int(self.quota_bytes * self.session_share)
        if used + adding <= self.quota_bytes and (
            share == self.quota_bytes or self.session_usage(session) + adding <= share
        ):
            return
        if who.signed_in:
            raise LibraryFull(  # raised while the app runs, so in the reader's language (core.i18n)
                _(
                    "Your library holds {used} of its {quota} (setting WORKBENCH_LIBRARY_QUOTA_MB), so this model is "
                    "not kept: it is yours for this session only. Delete models you no longer need from the library "
                    "on the Model page."
                ).format(used=_human(used), quota=_human(self.quota_bytes))
            )
        if adding > share:  # however much of its own it dropped: said first
            raise LibraryFull(
                _(
                    "This model ({size}) is larger than one browser session's share of the library's room for people "
                    "who are not signed in ({share} of {quota}, setting WORKBENCH_LIBRARY_SESSION_SHARE), so it is "
                    "not kept: you can work with it in this session, but it has no permalink and a reload loses it. "
                    "Ask whoever runs this instance to raise the share, or sign in where it offers signing in: your "
                    "models then have a library of their own."
                ).format(size=_human(adding), share=_human(share), quota=_human(self.quota_bytes))
            )
        anonymous = [(link, kept) for link, kept in self._all() if not kept.owner]
        droppable = sorted(
            (link for link, kept in anonymous if _kept_by(kept, session)), key=modified
        )  # the caller's own, least recently used first
        staying = {link.parent.parent for link, _ in anonymous if link not in droppable}  # others' stay
        if sum(_size(f) for f in staying) + adding > self.quota_bytes:
            raise LibraryFull(
                _(
                    "The library's room for models of people who are not signed in is full ({used} of {quota}, "
                    "setting WORKBENCH_LIBRARY_QUOTA_MB), so this model is not kept: you can work with it in this "
                    "session, but it has no permalink and a reload loses it. Only models this session kept make "
                    "room, never anyone else's: delete some from the Library tab of the Model page, or try again "
                    "later (a model unused for {age} is forgotten)."
                ).format(used=_human(used), quota=_human(self.quota_bytes), age=_hours(self.max_age_s))
            )
        while droppable and (
            self.usage(who) + adding > self.quota_bytes or self.session_usage(session) + adding > share
        ):
            link = droppable.pop(0)  # the session's least recently used keeping makes room
            link.unlink(missing_ok=True)
            shutil.rmtree(link.with_suffix(""), ignore_errors=True)
            self._drop_if_unkept(link.parent.parent)

    def _drop_if_unkept(self, folder: Path) -> None:
        if not any((folder / "links").glob("*.msgpack")):
            shutil.rmtree(folder, ignore_errors=True)

    def _result(self, model_id: str, key: str, name: str) -> Path | None:
        """Where this keeping's result ``name`` lies, when the model was kept under this key."""
        folder = self._folder(model_id)
        if folder is None or not key or not re.fullmatch(r"\w+(\.\w+)*", name) or not self._link(folder, key).is_file():
            return None
        return self._link(folder, key).with_suffix("") / f"{name}.msgpack"

    def keep_result(
        self, model_id: str, key: str, name: str, data: bytes, who: Identity = ANONYMOUS, session: str | None = ""
    ) -> bool:
        """Keep a page's result (``data``, as the job boundary encodes it) with this keeping of the model, so that
        a reload, the link and the library show it at once; only its owner's (an anonymous one: the ``session``
        that kept it). Whether it was kept: someone who opened it by its link keeps their results in their
        session, never in the keeping its owner and everyone with the link see."""
        target = self._result(model_id, key, name)
        found = self._find(model_id, key) if target is not None else None
        if target is None or found is None or not owns(found[1], who, session):
            return False
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        return True

    def result(self, model_id: str, key: str, name: str) -> bytes | None:
        """The result kept under ``name`` with this keeping of the model, or None."""
        target = self._result(model_id, key, name)
        try:
            return target.read_bytes() if target is not None else None
        except OSError:
            return None

    def sweep(self, now: float | None = None) -> list[Path]:
        """Forget keepings unused for longer than their retention (anonymous ones sooner than a signed-in
        owner's); the files go with the last keeping of their bytes. The folders removed."""
        now = time.time() if now is None else now
        removed = []
        for link, kept in list(self._all()):
            age = self.owned_max_age_s if kept.owner else self.max_age_s
            if now - modified(link) > age:
                link.unlink(missing_ok=True)
                shutil.rmtree(link.with_suffix(""), ignore_errors=True)
                folder = link.parent.parent
                self._drop_if_unkept(folder)
                if not folder.exists():
                    removed.append(folder)
        return removed


def may_open(kept: Kept, who: Identity) -> bool:
    """Anyone holding the key opens an anonymous keeping; a signed-in owner's opens for them, and for their team
    once shared."""
    if not kept.owner:
        return True
    return kept.owner == who.user or (kept.shared and who.signed_in and kept.team == who.team)


def owns(kept: Kept, who: Identity, session: str | None) -> bool:
    """Whether ``who``, in the browser ``session`` holding this owner token, may rename, tag, share or delete
    ``kept``: a signed-in owner's is theirs alone; an anonymous one is the session's that kept it (None: a
    laptop's one user, who owns them all). The key never owns: it is the link, sent to others."""
    if kept.owner:
        return kept.owner == who.user
    return not who.signed_in and _kept_by(kept, session)


def _kept_by(kept: Kept, session: str | None) -> bool:
    """An anonymous keeping made by this ``session`` (None: a laptop's one user, every one)."""
    return session is None or (
        bool(session) and bool(kept.keeper) and hmac.compare_digest(kept.keeper, _digest(session))
    )


def _digest(session: str) -> str:
    """What a keeping records of a session's owner token: its hash, so the files never hold the token itself."""
    return hashlib.sha256(session.encode()).hexdigest()


def _read(link: Path) -> Kept | None:
    """A keeping's record; its owner as this version keys owners (an earlier one kept emails as they came)."""
    try:
        kept = msgspec.msgpack.decode(link.read_bytes(), type=Kept)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return None
    kept.owner = stored_owner(kept.owner)
    return kept


def _size(folder: Path) -> int:
    """The model's files in ``folder``, not the keepings' records and results."""
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file() and f.relative_to(folder).parts[0] != "links")


def _newest_first(entries: list[Entry]) -> list[Entry]:
    return sorted(entries, key=lambda e: e.used_at, reverse=True)


def _hours(seconds: float) -> str:
    hours = seconds / 3600
    count = int(hours) if hours == int(hours) else 2  # a fraction of hours reads as a plural
    return ngettext("{hours} hour", "{hours} hours", count).format(hours=f"{hours:g}")


def _human(n: int) -> str:
    if n < 1 << 20:  # a share of a small quota, a small model: never "0 MB"
        return f"{n / 1024:,.0f} kB"
    return f"{n / (1 << 20):,.0f} MB" if n < 1 << 30 else f"{n / (1 << 30):,.1f} GB"


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
    code = record.code  # a model's own code: imported from where its files now lie
    if code is not None and Path(code.root).resolve().is_relative_to(base.resolve()):
        code = dataclasses.replace(code, root=str(folder / Path(code.root).resolve().relative_to(base.resolve())))
    return dataclasses.replace(
        record,
        path=moved.get(record.path, str(folder / main.name)),
        files=[moved[str(f)] for f in files],
        code=code,
        **_family_copied(record, base, folder, moved),
    )


def _in_folder_kept(
    copied: ModelRecord, record: ModelRecord, original: ModelRecord | None, kept_original: ModelRecord | None
) -> ModelRecord:
    """An ONNX file of a Hugging Face folder, kept with the folder's PyTorch model (the folder whole, under from-):
    its folder, family and files are that copy's, so a link or a reload still finds the folder's tokenizer, its
    config and the other ONNX files, and knows which of them it is."""
    if copied.folder or not record.folder or original is None or kept_original is None:
        return copied
    if original.format != "hf" or original.folder != record.folder or not kept_original.folder:
        return copied
    base, there = Path(record.folder), Path(kept_original.folder)
    files = [record.path, *record.files]
    if not all(Path(f).is_relative_to(base) for f in files):
        return copied
    return dataclasses.replace(
        copied,
        path=str(there / Path(record.path).relative_to(base)),
        files=[str(there / Path(f).relative_to(base)) for f in record.files],
        folder=kept_original.folder,
        family=kept_original.family,
    )


def _family_copied(record: ModelRecord, base: Path, folder: Path, moved: dict[str, str]) -> dict[str, Any]:
    """A Hugging Face folder's place and ONNX files where the copy put them: every file of the family was kept
    with the folder's model; one ONNX file of the folder kept alone keeps no family (its siblings were not copied)."""
    if not record.folder:
        return {}
    if not all(m.path in moved for m in record.family) or not Path(record.folder).resolve().is_relative_to(
        base.resolve()
    ):
        return {"folder": "", "family": []}
    family = [dataclasses.replace(m, path=moved[m.path]) for m in record.family]
    return {"folder": str(folder / Path(record.folder).resolve().relative_to(base.resolve())), "family": family}
