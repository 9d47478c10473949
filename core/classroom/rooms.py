"""Rooms of a workshop, kept in the history's database (core/store's tables, Alembic revision 4): the teacher's
saved settings, rooms opened from them with a random code that expires with the room, and the results
participants' runs pool into a room."""

from __future__ import annotations

import secrets
import unicodedata
import uuid
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Engine, delete, insert, select, update
from sqlalchemy.exc import IntegrityError

from core.errors import RoomError
from core.i18n import LANGUAGES, _, pgettext, using
from core.store.schema import room_results, room_setups, rooms

__all__ = [
    "ALPHABET",
    "CODE_LENGTH",
    "MAX_MARKS",
    "MAX_NAME",
    "Entry",
    "Room",
    "RoomSetup",
    "Rooms",
    "clean_code",
    "clean_name",
    "new_code",
    "new_participant",
]

ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I/L: read aloud and typed from a projector
CODE_LENGTH = 6
MAX_NAME = 40
MAX_MARKS = 2  # combining marks on one letter: Vietnamese stacks two (ệ); a pile of them spills over the board


def new_code() -> str:
    """A random room code (``secrets``: not guessable from earlier ones)."""
    return "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))


def new_participant() -> str:
    """A random id for one joined browser session: two people who type the same name stay two."""
    return uuid.uuid4().hex


def clean_code(text: str) -> str:
    """A typed code as stored: spaces and dashes out, upper case."""
    return "".join(c for c in text.upper() if c not in " -\t")


def clean_name(text: str) -> str:
    """A display name as typed, trimmed; refused (never cleaned) when empty, too long, holding invisible characters
    or more than MAX_MARKS combining marks on one letter, or when it is the name the pages give the teacher."""
    name = text.strip()
    if not name:
        raise RoomError(_("Type a display name: the one the room board shows for your results."))
    if len(name) > MAX_NAME:
        raise RoomError(_("A display name has at most {limit} characters; type a shorter one.").format(limit=MAX_NAME))
    if any(unicodedata.category(c) in {"Cc", "Cf", "Zl", "Zp"} for c in name):
        raise RoomError(_("A display name cannot hold control or invisible characters; type it again."))
    if _most_marks(name) > MAX_MARKS:
        raise RoomError(
            _("A display name has at most {limit} accents or other marks on one letter; type it again with fewer.")
            .format(limit=MAX_MARKS)
        )  # fmt: skip
    if _compared(name) in _teachers_names():
        raise RoomError(
            _("“{name}” is what the pages call the teacher, so no participant takes it: choose another display name.")
            .format(name=name)
        )  # fmt: skip
    return name


def _most_marks(name: str) -> int:
    """The most combining marks on one character of ``name``, counted decomposed (ệ is e and two marks)."""
    most = run = 0
    for char in unicodedata.normalize("NFD", name):
        marked = unicodedata.combining(char) != 0 or unicodedata.category(char) in {"Mn", "Me"}
        run = run + 1 if marked else 0
        most = max(most, run)
    return most


def _compared(name: str) -> str:
    """``name`` as two names are told apart here: compatibility forms folded (full-width letters), case folded,
    only its letters and digits, and no leading "the" ("The Teacher", "ＴＥＡＣＨＥＲ" and "t-e-a-c-h-e-r" are
    "teacher")."""
    folded = unicodedata.normalize("NFKC", name).casefold()
    kept = "".join(c for c in unicodedata.normalize("NFD", folded) if unicodedata.category(c)[0] in "LN")
    return kept.removeprefix("the") if kept != "the" else kept


def _teachers_names() -> set[str]:
    """What the pages call the one who runs the room, in every language they speak."""
    names = set()
    for code in LANGUAGES:
        with using(code):
            names |= {pgettext("who runs the room", "teacher"), pgettext("who runs the room", "facilitator")}
    return {_compared(n) for n in names}


@dataclass(frozen=True, kw_only=True)
class RoomSetup:
    """What the teacher sets: the model everyone starts from, the pages open to them, their language."""

    name: str
    model: str  # "sample:<name>", or "library:<model id>:<key>" (a model kept in the library)
    pages: tuple[str, ...]  # the steps of ui/pages.py open to participants
    language: str  # "" (each browser's own), "en" or "zh"

    def settings(self) -> dict[str, Any]:
        return {"model": self.model, "pages": list(self.pages), "language": self.language}

    @classmethod
    def from_settings(cls, name: str, settings: dict[str, Any]) -> RoomSetup:
        return cls(
            name=name,
            model=str(settings.get("model", "")),
            pages=tuple(str(p) for p in settings.get("pages") or ()),
            language=str(settings.get("language", "")),
        )


@dataclass(frozen=True, kw_only=True)
class Room:
    code: str
    setup: RoomSetup
    opened_at: datetime
    expires_at: datetime
    closed_at: datetime | None = None

    def open_at(self, now: datetime) -> bool:
        return self.closed_at is None and now < self.expires_at


@dataclass(frozen=True, kw_only=True)
class Entry:
    """One result pooled into a room: never the participant's model, only what the board shows."""

    name: str
    participant: str
    kind: str  # "benchmark" or "quantize"
    created_at: datetime
    machine: str = ""
    value: float | None = None  # a benchmark's eager→ORT speedup, a quantization's speedup
    low: float | None = None
    high: float | None = None
    detail: dict[str, Any] = field(default_factory=dict)


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)  # stored naive, in UTC, as the history's times


class Rooms:
    """The rooms in one database (the history's engine: SQLite, or PostgreSQL for a team)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    # -- the teacher's saved settings ---------------------------------------------------------------------------
    def save_setup(self, setup: RoomSetup) -> None:
        with self.engine.begin() as conn:
            conn.execute(delete(room_setups).where(room_setups.c.name == setup.name))
            conn.execute(insert(room_setups).values(name=setup.name, settings=setup.settings(), updated_at=_now()))

    def setups(self) -> list[RoomSetup]:
        """The saved settings, the latest changed first."""
        with self.engine.connect() as conn:
            rows = conn.execute(select(room_setups).order_by(room_setups.c.updated_at.desc())).all()
        return [RoomSetup.from_settings(r.name, r.settings) for r in rows]

    # -- rooms --------------------------------------------------------------------------------------------------
    def open(self, setup: RoomSetup, hours: float, now: datetime | None = None) -> Room:
        """Save ``setup`` and open a room from it with a fresh code, open for ``hours``."""
        self.save_setup(setup)
        opened = now or _now()
        for _attempt in range(20):
            room = Room(code=new_code(), setup=setup, opened_at=opened, expires_at=opened + timedelta(hours=hours))
            try:
                with self.engine.begin() as conn:
                    conn.execute(
                        insert(rooms).values(
                            code=room.code,
                            setup=setup.name,
                            settings=setup.settings(),
                            opened_at=room.opened_at,
                            expires_at=room.expires_at,
                        )
                    )
                return room
            except IntegrityError:  # the code was taken (one in 887 million): draw again
                continue
        raise RoomError(_("No free room code was found; try again."))

    def room(self, code: str, now: datetime | None = None) -> Room | None:
        """The open room of ``code``; None when there is none, or it expired or was closed."""
        with self.engine.connect() as conn:
            row = conn.execute(select(rooms).where(rooms.c.code == clean_code(code))).first()
        if row is None:
            return None
        room = Room(
            code=row.code,
            setup=RoomSetup.from_settings(row.setup, row.settings),
            opened_at=row.opened_at,
            expires_at=row.expires_at,
            closed_at=row.closed_at,
        )
        return room if room.open_at(now or _now()) else None

    def latest(self, setup: str, now: datetime | None = None) -> Room | None:
        """The newest room still open of the settings called ``setup``."""
        with self.engine.connect() as conn:
            codes = conn.execute(
                select(rooms.c.code).where(rooms.c.setup == setup).order_by(rooms.c.opened_at.desc())
            ).scalars()
            for code in codes:
                found = self.room(code, now)
                if found is not None:
                    return found
        return None

    def join(self, code: str, name: str, now: datetime | None = None) -> Room:
        """The room a participant joins by ``code`` under ``name`` (both checked)."""
        clean_name(name)
        room = self.room(code, now)
        if room is None:
            raise RoomError(
                _("There is no open room with the code {code}: check it on the teacher's screen.").format(
                    code=clean_code(code)[:16]
                )
            )
        return room

    def close(self, code: str) -> None:
        with self.engine.begin() as conn:
            conn.execute(update(rooms).where(rooms.c.code == code).values(closed_at=_now()))

    # -- results ------------------------------------------------------------------------------------------------
    def add(self, code: str, entry: Entry) -> None:
        """Pool ``entry`` into the room ``code``, if it is still open (a closed room takes nothing)."""
        if self.room(code) is None:
            return
        with self.engine.begin() as conn:
            conn.execute(
                insert(room_results).values(
                    room=code,
                    participant=entry.participant,
                    name=clean_name(entry.name),
                    kind=entry.kind,
                    created_at=entry.created_at,
                    machine=entry.machine[:256],
                    value=entry.value,
                    low=entry.low,
                    high=entry.high,
                    detail=entry.detail,
                )
            )

    def entries(self, code: str) -> list[Entry]:
        """The results pooled into the room ``code``, oldest first: an entry is its row's columns of the same names."""
        columns = [room_results.c[f.name] for f in fields(Entry)]
        with self.engine.connect() as conn:
            rows = conn.execute(select(*columns).where(room_results.c.room == code).order_by(room_results.c.id)).all()
        return [Entry(**{**r._mapping, "detail": dict(r.detail or {})}) for r in rows]

    def clear(self, code: str) -> int:
        """Forget every result of the room ``code``; how many there were."""
        with self.engine.begin() as conn:
            return conn.execute(delete(room_results).where(room_results.c.room == code)).rowcount or 0
