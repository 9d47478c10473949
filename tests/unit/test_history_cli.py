"""``python -m core history``: the saved runs for a pipeline, newest first, filtered, as JSON or a table."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from core.store import Store
from tests.cli import cli, cli_process
from tests.reports import made_report

NOW = datetime.now(UTC)


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A data folder whose history (where the settings put it) holds three runs."""
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("WORKBENCH_HISTORY_URL", "")
    store = Store(f"sqlite:///{tmp_path / 'history.sqlite'}")
    store.save(made_report("old", when=NOW - timedelta(days=10)), owner="alice@acme.test", team="acme.test")
    store.save(made_report("gpu", machine="gpu-box", when=NOW - timedelta(days=1)))
    store.save(made_report("new", model="resnet", when=NOW))
    return tmp_path


def _ids(*args: str) -> list[str]:
    done = cli("history", "--json", *args)
    assert done.returncode == 0, done.stderr
    return [row["id"] for row in json.loads(done.stdout)]


def test_history_as_a_process_prints_the_runs_newest_first_as_json(data_dir: Path) -> None:
    done = cli_process("history", "--json", env=dict(os.environ), timeout=60)
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert [r["id"] for r in rows] == ["new", "gpu", "old"]
    assert rows[2] == {
        "id": "old",
        "created_at": (NOW - timedelta(days=10)).replace(microsecond=0).isoformat(timespec="seconds"),
        "model": "tinycnn",
        "machine": "box-a",
        "owner": "alice@acme.test",
        "team": "acme.test",
        "headline": "ORT ALL is 4× faster than PyTorch eager on tinycnn",
        "configurations": 3,
        "inputs": "input 1×3×112×112 (random normal)",
        "kind": "benchmark",  # a tuning's "tune", a load test's "loadtest", a browser's result's "browser"
        "imported_at": None,  # measured here; an imported browser result says when it came in
    }


def test_history_filters_by_model_machine_day_and_count(data_dir: Path) -> None:
    assert _ids("--model", "tinycnn") == ["gpu", "old"]
    assert _ids("--model", "tinycnn", "--model", "resnet", "--limit", "2") == ["new", "gpu"]
    assert _ids("--machine", "box-a") == ["new", "old"]
    assert _ids("--since", (NOW - timedelta(days=3)).strftime("%Y-%m-%d")) == ["new", "gpu"]
    assert _ids("--model", "nothing") == []
    wrong = cli("history", "--since", "last week")
    assert wrong.returncode == 2 and "YYYY-MM-DD" in wrong.stderr


def test_history_without_json_is_a_table_one_run_a_line(data_dir: Path) -> None:
    done = cli("history")
    assert done.returncode == 0, done.stderr
    header, *lines = done.stdout.splitlines()
    assert header.split() == [
        "id", "when", "(UTC)", "kind", "model", "machine", "owner", "configs", "inputs", "headline"
    ]  # fmt: skip
    assert [line.split()[0] for line in lines] == ["new", "gpu", "old"]
    assert all(line.split()[3] == "benchmark" for line in lines)
    assert (
        "alice@acme.test" in lines[2]
        and "anonymous" in lines[0]
        and lines[2].endswith("faster than PyTorch eager on tinycnn")
    )
