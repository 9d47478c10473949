"""Bringing a history to the newest schema with Alembic (the scripts in core/store/migrations), safely when
several processes open a new history at once, and without losing a run from one an earlier version made.

Every migration runs in one transaction that holds a lock first: PostgreSQL's advisory lock (released when the
transaction ends), SQLite's write lock (``BEGIN IMMEDIATE``). Whoever waited finds the schema done and does
nothing. A history from before migrations (its tables, no ``alembic_version``) gets the columns it lacks and
is stamped as revision 1, then upgraded like any other.
"""

from __future__ import annotations

import functools
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.operations import Operations
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Column, Connection, Engine, Float, inspect, text

from core.errors import StoreError

__all__ = ["FIRST", "alembic_config", "current_revision", "head", "upgrade"]

SCRIPTS = Path(__file__).resolve().parent / "migrations"
FIRST = "0001"  # the schema the app made before it used migrations
_LOCK_KEY = int.from_bytes(b"wb-store", "big")  # the advisory lock every process takes to migrate
_WINDOW = ("started", "finished")  # columns the first versions lacked (added then by hand, now here)


def alembic_config(connection: Connection | None = None) -> Config:
    """Alembic's configuration without an alembic.ini: the scripts in the package, the store's connection."""
    config = Config()
    config.set_main_option("script_location", str(SCRIPTS).replace("%", "%%"))
    config.attributes["connection"] = connection
    return config


@functools.cache
def _scripts() -> ScriptDirectory:
    return ScriptDirectory.from_config(alembic_config())


@functools.cache
def head() -> str:
    """The newest revision."""
    newest = _scripts().get_current_head()
    assert newest is not None, f"no migration scripts in {SCRIPTS}"
    return newest


def current_revision(connection: Connection) -> str | None:
    """The revision the database is at; None for an empty one or one from before migrations."""
    return MigrationContext.configure(connection).get_current_revision()


def upgrade(engine: Engine) -> None:
    """Bring the database behind ``engine`` to the newest revision; at once when it is there already."""
    with engine.connect() as conn:
        current = current_revision(conn)
    if current == head():
        return
    if current is not None and current not in {script.revision for script in _scripts().walk_revisions()}:
        raise StoreError(
            f"The benchmark history is at schema revision {current}, which a newer version of the app made (this "
            f"one knows up to {head()}): update the app, or point history_url at another database."
        )
    with engine.connect() as conn:
        _lock(conn)
        _adopt_earlier(conn)
        command.upgrade(alembic_config(conn), "head")
        conn.commit()


def _lock(conn: Connection) -> None:
    """Begin the transaction the migration runs in, holding the lock that keeps other processes out."""
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _LOCK_KEY})
    elif conn.dialect.name == "sqlite":
        conn.exec_driver_sql("BEGIN IMMEDIATE")  # the write lock now; others wait (busy_timeout)
    else:
        conn.begin()


def _adopt_earlier(conn: Connection) -> None:
    """A history an earlier version made (tables, no revision): add what it lacks and stamp it as revision 1."""
    if current_revision(conn) is not None or not inspect(conn).has_table("runs"):
        return
    present = {c["name"] for c in inspect(conn).get_columns("runs")}
    operations = Operations(MigrationContext.configure(conn))
    for name in _WINDOW:
        if name not in present:
            operations.add_column("runs", Column(name, Float, nullable=False, server_default="0"))
    command.stamp(alembic_config(conn), FIRST)
