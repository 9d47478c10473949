"""What every test shares: which tests need the machine to themselves.

`make test` runs the suite in two parts: first every other test on two processes at once (most of their time is
spent waiting on a worker, a server or the browser), then these, one at a time, on a quiet machine: they measure
time or what else the machine does, or look for processes and files that any other test could leave. A file
whose tests all need it is listed here; a test that needs it in a file of others is marked `@pytest.mark.quiet`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

QUIET = {
    "tests/unit/test_activity.py",  # busy or idle, seen from the machine-wide counters
    "tests/unit/test_profile.py",  # the kernels' share of a call
    "tests/app/test_profile_page.py",
    "tests/e2e/test_profile_e2e.py",  # which op takes the most
    "tests/app/test_benchmark_page.py",  # a run on a busy machine, and one on a quiet one
    "tests/e2e/test_benchmark_e2e.py",
    "tests/e2e/test_many_users_e2e.py",  # eight browsers; the landing page's time while they queue
    "tests/e2e/test_upload_memory_e2e.py",  # the server's memory at its peak
    "tests/adversarial/test_leftovers.py",  # files any test run leaves in /tmp
    "tests/adversarial/test_orphans.py",  # worker processes left behind
    "tests/adversarial/test_million_initializers.py",  # a refusal within 10 s, on two cores
    "tests/cluster/test_cluster.py",  # two benchmarks at once on a two-node Ray cluster (two more servers' worth)
}
ROOT = Path(__file__).resolve().parent.parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if Path(str(item.path)).resolve().relative_to(ROOT).as_posix() in QUIET:
            item.add_marker(pytest.mark.quiet)
