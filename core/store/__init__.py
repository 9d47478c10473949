"""The store: the benchmark history (SQLAlchemy + Alembic; SQLite by default, PostgreSQL by URL)."""

from __future__ import annotations

from core.store.history import SPOOL_FOLDER, RunSummary, Store, open_history

__all__ = ["SPOOL_FOLDER", "RunSummary", "Store", "open_history"]
