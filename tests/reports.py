"""Benchmark reports made up for the tests of the history (core.store): shaped like real ones (three
configurations, samples, the machine and what else it did), without measuring anything."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

from core.bench import BenchReport
from core.notes import Note
from core.runtime.activity import Activity
from core.runtime.harness import BenchResult
from core.runtime.machine import Environment

__all__ = ["made_environment", "made_report"]


def _result(label: str, engine: str, level: str, median: float) -> BenchResult:
    return BenchResult(
        label=label, engine=engine, level=level, provider="CPUExecutionProvider", threads=1, batch=1, n=20,
        median_ms=median, mean_ms=median * 1.01, p90_ms=median * 1.2, p99_ms=median * 1.4, min_ms=median * 0.9,
        max_ms=median * 1.5, std_ms=median * 0.05, median_low_ms=median * 0.97, median_high_ms=median * 1.03,
        throughput=1000 / median, load_ms=12.5, first_run_ms=median * 3,
        speedup=4.0 / median, max_abs_diff=None if engine == "eager" else 2e-6,
        samples_ms=[median * (1 + i / 100) for i in range(20)], cpu_median_ms=median * 0.98,
    )  # fmt: skip


def made_environment(machine: str = "box-a") -> Environment:
    """The machine a made-up run was measured on, named ``machine``."""
    return Environment(
        machine=machine,
        cpu="Test CPU @ 3 GHz",
        physical_cores=2,
        logical_cores=4,
        os="Linux",
        python="3.11.7",
        versions={"onnxruntime": "1.32.0"},
        cpu_flags=["avx2"],
    )


def made_report(
    run_id: str = "", model: str = "tinycnn", machine: str = "box-a", when: datetime | None = None
) -> BenchReport:
    """A finished benchmark of ``model`` on ``machine`` at ``when`` (now), as run_benchmark returns one."""
    created = (when or datetime.now(UTC)).astimezone(UTC).replace(microsecond=0)
    environment = made_environment(machine)
    return BenchReport(
        id=run_id or uuid.uuid4().hex,
        model=model,
        model_id="ab" * 32,
        created_at=created.isoformat(timespec="seconds"),
        settings={"inputs": {"input": {"shape": [1, 3, 112, 112], "values": "random normal"}}, "iterations": 20},
        environment=environment,
        results=[
            _result("PyTorch eager", "eager", "", 4.0),
            _result("ORT DISABLE_ALL", "ort", "DISABLE_ALL", 2.0),
            _result("ORT ALL", "ort", "ALL", 1.0),
        ],
        baseline="PyTorch eager",
        headline=Note.kept(f"ORT ALL is 4× faster than PyTorch eager on {model}"),
        notes=[Note.kept("made up for a test")],
        seconds=3.5,
        started=created.timestamp() - 3.5,
        finished=created.timestamp(),
        activity=Activity(seconds=3.5, cores=2, others_cores=0.1, own_cores=1.0, load_before=0.5, load_after=0.6),
    )


def seed_regression(data_dir: Path) -> None:
    """Two versions of TinyCNN's benchmark saved in ``data_dir``'s history, the newer (a new export of the same
    PyTorch original) 1.5× slower: a regression for the Dashboard to flag."""
    from core.store import Store

    old, new = made_report("r-old", when=datetime.now(UTC) - timedelta(days=2)), made_report("r-new")
    new.model_id = "cd" * 32
    for r in new.results:
        r.median_ms, r.median_low_ms, r.median_high_ms = (
            v * 1.5 for v in (r.median_ms, r.median_low_ms, r.median_high_ms)
        )
    store = Store(f"sqlite:///{data_dir / 'history.sqlite'}")
    for report in (old, new):
        store.save(report, owner="", team="")
