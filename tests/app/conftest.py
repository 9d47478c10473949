"""AppTest fixtures: each test is a fresh server process with its own data folder and caches."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import streamlit as st

from tests.lm_models import gpt2_past, qwen_genai  # language models built once per session (tests/lm_models.py)

__all__ = ["APP", "as_person", "fresh_caches", "gpt2_past", "qwen_genai"]

APP = str(Path(__file__).resolve().parents[2] / "streamlit_app.py")


@pytest.fixture(autouse=True)
def fresh_caches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Settings are cached per server process; each test is a fresh server with its own environment. The data
    caches stay: a sample's record, the providers' table and a saved run are the same for every server of one
    process (a saved run is keyed by its history's address, which is each test's own), and keeping them spares
    every test a worker that imports torch to build the start sample again (about 4 CPU-seconds each)."""
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    # every test is a new backend; a pre-started worker each would be ~250 MB and a CPU-second, mostly unused
    # (tests/unit/test_warm.py and the browser tests, which run the real server, cover them)
    monkeypatch.setenv("WORKBENCH_WARM_WORKERS", "0")
    # the next step's job started at the end of a page would run beside every test of that page, unasked;
    # tests/app/test_start_ahead.py turns it on, and the browser tests run the real server, where it is on
    monkeypatch.setenv("WORKBENCH_START_AHEAD", "false")
    st.cache_resource.clear()


@pytest.fixture
def as_person(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """Sign-in by a trusted proxy, whose header names the person: set ``person["email"]`` to switch people. The
    people of acme.test and of other.test are two teams named by their domains."""
    monkeypatch.setenv("WORKBENCH_AUTH", "proxy")
    monkeypatch.setenv("WORKBENCH_PROXY_USER_HEADER", "X-Forwarded-Email")
    monkeypatch.setenv("WORKBENCH_TEAM_DOMAINS", "acme.test, other.test")
    person = {"email": ""}
    monkeypatch.setattr("ui.auth._headers", lambda: {"x-forwarded-email": [person["email"]]})
    yield person
