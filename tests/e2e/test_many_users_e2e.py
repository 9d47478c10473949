"""Four users at once in Chromium: each uploads its own model, decodes it and benchmarks it while the others do
the same. Everyone gets their own results, nothing crosses between sessions, benchmarks queue instead of
overlapping, and the landing page answers while the queue is full. (benchmarks/many_users.py prints the
figures of the same scenario.)"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from benchmarks.many_users import crowd, print_report
from core.store import Store

pytestmark = [pytest.mark.e2e, pytest.mark.heavy, pytest.mark.timeout(900)]

# Enough for a queue of three behind a running benchmark and a visitor while it is full; the script measures more
# (benchmarks/many_users.py --users 8 or 30). Each user costs Chromium a first page load of 6-9 CPU-s.
USERS = 4


def test_four_users_at_once(app_url: str, data_dir: Path, tmp_path: Path) -> None:
    before = {r.id for r in Store(f"sqlite:///{data_dir / 'history.sqlite'}").runs(limit=10_000)}
    report = crowd(app_url, USERS, tmp_path)
    print_report(report)
    assert [r.error for r in report.users] == [""] * USERS
    for run in report.users:
        assert run.model in run.sidebar  # the sidebar shows this user's own model...
        assert run.input_name in run.inputs_row  # ...and the benchmark measured it
        others = [u.input_name for u in report.users if u is not run]
        assert not any(f"{name}:" in run.inputs_row for name in others)
    assert report.landing_while_queued, "the benchmark queue never held two"
    assert report.landing_s < 60, f"the landing page took {report.landing_s:.0f} s while benchmarks queued"
    assert any(run.queue_seen for run in report.users), "no benchmark ever waited: they cannot have queued"

    store = Store(f"sqlite:///{data_dir / 'history.sqlite'}")
    runs = [store.load(r.id) for r in store.runs(limit=10_000) if r.id not in before]
    assert sorted(r.model for r in runs) == sorted(u.model for u in report.users)
    windows = sorted((r.started, r.finished) for r in runs)
    for (_, end), (start, _) in itertools.pairwise(windows):
        assert start >= end, "two benchmarks measured at the same time"
