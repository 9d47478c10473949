"""What the machine was doing while we measured: other processes' CPU use is seen from inside the worker's
sandbox (the kernel's counters are machine-wide), and a busy machine's benchmark says so in its headline."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.bench import BenchRequest, headline, run_benchmark
from core.jobs import BENCH, run
from core.model.inputs import BenchInput
from core.model.measured import MeasuredModel
from core.notes import note, say
from core.runtime.activity import BUSY, SHORT, Activity, ActivityMeter
from tests import builders

SPIN = "import time\nend = time.monotonic() + 60\nwhile time.monotonic() < end: pass"


@pytest.fixture
def spinner() -> Iterator[subprocess.Popen[bytes]]:
    """Another process keeping one core busy."""
    process = subprocess.Popen([sys.executable, "-c", SPIN])
    time.sleep(0.3)
    yield process
    process.kill()
    process.wait()


@pytest.fixture(scope="module")
def tinycnn(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return builders.exported_sample("tinycnn", tmp_path_factory.mktemp("activity"))


def test_another_process_using_a_core_is_seen(spinner: subprocess.Popen[bytes]) -> None:
    meter = ActivityMeter()
    time.sleep(1.0)
    activity = meter.stop()
    assert activity.known and activity.others_cores > 0.7 and activity.own_cores < 0.2
    assert activity.busy and activity.note is not None and activity.note.key == BUSY
    assert activity.note.severity == "warning" and say(activity.note).startswith("Other processes kept")


def test_a_busy_machine_is_said_in_the_headline_with_the_interval(tinycnn: Path) -> None:
    inputs = [BenchInput(name="input", dtype="float32", shape=[1, 3, 112, 112], batch_axis=0)]
    model = MeasuredModel(path=str(tinycnn), inputs=inputs)
    report = run_benchmark(BenchRequest(model=model, levels=["disable", "all"], threads=[1], iterations=20, warmup=2))
    assert report.activity is not None and all(r.cpu_median_ms is not None for r in report.results)
    assert all(len(r.cpu_samples_ms) == len(r.samples_ms) == r.n for r in report.results)  # each call's CPU time
    report.activity = Activity(
        seconds=3.0, cores=2, others_cores=1.2, own_cores=1.0, load_before=1.5, load_after=1.9, busy=True,
        note=note(BUSY, others="1.2", cores=2, before="1.5", after="1.9"),
    )  # fmt: skip
    text = say(headline(report))
    assert text.startswith("Noisy run:") and "between" in text  # the interval, never one settled number
    assert "the machine was busy: other processes kept 1.2 of 2 cores busy" in text


def test_a_benchmark_in_the_sandboxed_worker_sees_the_other_work(
    tinycnn: Path, spinner: subprocess.Popen[bytes]
) -> None:
    inputs = [BenchInput(name="input", dtype="float32", shape=[1, 3, 112, 112], batch_axis=0)]
    model = MeasuredModel(path=str(tinycnn), inputs=inputs)
    report = run(BENCH, BenchRequest(model=model, levels=["all"], threads=[1], iterations=3000))
    assert report.activity is not None and report.activity.busy, report.activity
    assert "the machine was busy" in say(report.headline) or report.baseline == ""
    assert report.activity.note in report.notes


def test_a_measurement_too_short_to_judge_says_so() -> None:
    activity = ActivityMeter().stop()
    assert not activity.known and not activity.busy and activity.note is not None and activity.note.key == SHORT
    assert "too short to tell" in say(activity.note)
