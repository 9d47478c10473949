"""Fixtures the unit tests share: a PostgreSQL server for the store's tests (tests/postgres.py)."""

from __future__ import annotations

from tests.postgres import postgres_server

__all__ = ["postgres_server"]
