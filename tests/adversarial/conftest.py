"""The adversarial suite runs pages through AppTest: each test gets fresh caches (settings are read per server)."""

from __future__ import annotations

from tests.app.conftest import fresh_caches  # noqa: F401 - an autouse fixture, shared with the page tests
