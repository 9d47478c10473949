"""The adversarial suite runs pages through AppTest: each test gets fresh caches (settings are read per server)."""

from __future__ import annotations

import pytest

from core.jobs.process import ProcessBackend
from tests.app.conftest import fresh_caches  # noqa: F401 - an autouse fixture, shared with the page tests


@pytest.fixture
def jobs_run(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the jobs started from here on, in order: what a refusal let run after it."""
    started: list[str] = []
    submit = ProcessBackend.submit

    def recording(self: ProcessBackend, spec):  # type: ignore[no-untyped-def]
        started.append(spec.name)
        return submit(self, spec)

    monkeypatch.setattr(ProcessBackend, "submit", recording)
    return started
