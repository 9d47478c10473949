"""The store: the benchmark history (SQLAlchemy; SQLite by default, PostgreSQL by URL)."""

from __future__ import annotations

from core.store.history import RunSummary, Store

__all__ = ["RunSummary", "Store"]
