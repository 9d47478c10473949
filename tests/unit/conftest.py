"""Fixtures the unit tests share: a PostgreSQL server for the store's tests (tests/postgres.py), and language models
built once per session from configs with random weights (tests/lm_models.py)."""

from __future__ import annotations

from tests.lm_models import gpt2_past, qwen_genai
from tests.postgres import postgres_server

__all__ = ["gpt2_past", "postgres_server", "qwen_genai"]
