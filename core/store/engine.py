"""The connection to the history's database: an engine that notices dropped connections and gives up on a dead
server quickly, which errors mean the database could not be reached, and how to name it without its password."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from core.extras import require

__all__ = ["CONNECT_TIMEOUT_S", "connection_lost", "describe", "open_engine", "reason", "safe"]

CONNECT_TIMEOUT_S = 5  # a server that does not answer is given up on after this long (PostgreSQL)
_NAMES = {"postgresql": "PostgreSQL", "mysql": "MySQL", "mariadb": "MariaDB", "mssql": "SQL Server"}


def open_engine(url: str) -> Engine:
    """An engine for ``url``; a SQLite file's folder is made, and its connections set up for many writers."""
    if url.startswith("sqlite"):
        path = make_url(url).database
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, pool_pre_ping=True, connect_args={"timeout": 30})
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    if url.startswith("postgresql"):
        require("team", "psycopg", "A PostgreSQL history (history_url)")
    args = {"connect_timeout": CONNECT_TIMEOUT_S} if url.startswith("postgresql") else {}
    return create_engine(url, pool_pre_ping=True, connect_args=args)


def connection_lost(exc: BaseException) -> bool:
    """Whether ``exc`` says the database could not be reached (worth trying again), not that it refused the data."""
    if isinstance(exc, PoolTimeout):
        return True
    return isinstance(exc, DBAPIError) and (exc.connection_invalidated or isinstance(exc, OperationalError))


def safe(url: str) -> str:
    """The URL without its password, for messages."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return "the configured URL"


def describe(url: str) -> str:
    """Where the history is, in words: the database and its server, or the SQLite file (never the password)."""
    try:
        parsed = make_url(url)
    except Exception:
        return "the configured history_url"
    if parsed.get_backend_name() == "sqlite":
        return f"the SQLite file {parsed.database}" if parsed.database else "an in-memory SQLite database"
    server = f"{parsed.host or 'localhost'}{f':{parsed.port}' if parsed.port else ''}"
    kind = _NAMES.get(parsed.get_backend_name(), parsed.get_backend_name())
    return f"the {kind} database {parsed.database or '(default)'!r} on {server}"


def reason(exc: BaseException, url: str) -> str:
    """What the driver said, in a line, with the password (should a driver echo it) blanked out."""
    original = exc.orig if isinstance(exc, DBAPIError) and exc.orig is not None else exc
    lines = [line.strip() for line in str(original).splitlines() if line.strip()]
    text = lines[0] if lines else type(original).__name__  # SQLAlchemy's own link to its docs is on a later line
    try:
        password = make_url(url).password
    except Exception:
        password = None
    return text.replace(str(password), "***") if password else text


def _sqlite_pragmas(connection: Any, _record: Any) -> None:
    cursor = connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")  # readers never block the writer
    cursor.execute("PRAGMA busy_timeout=30000")  # writers wait for each other instead of failing
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()
