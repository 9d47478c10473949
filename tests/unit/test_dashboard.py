"""The Dashboard's figures from saved runs: latest per model and machine, trends across versions, regressions."""

from __future__ import annotations

from core.bench import BenchReport
from core.runtime.activity import Activity
from core.runtime.harness import BenchResult
from core.store.dashboard import busy_runs, latest_per_model_machine, regressions, trend
from tests.reports import made_environment


def _result(label: str, engine: str, median: float, spread: float = 0.02) -> BenchResult:
    return BenchResult(
        label=label, engine=engine, level="" if engine == "eager" else "ALL", provider="CPUExecutionProvider",
        threads=1, batch=1, n=100, median_ms=median, mean_ms=median, p90_ms=median, p99_ms=median, min_ms=median,
        max_ms=median, std_ms=0.0, median_low_ms=median * (1 - spread), median_high_ms=median * (1 + spread),
        throughput=1000 / median, load_ms=0.0, first_run_ms=median, speedup=None,
    )  # fmt: skip


def _run(
    run_id: str,
    when: str,
    version: str,
    ort_ms: float,
    machine: str = "box-a",
    model: str = "det",
    *,
    torch: str = "",
    eager_ms: float = 10.0,
    busy: bool = False,
) -> BenchReport:
    environment = made_environment(machine)
    results = [_result("PyTorch eager", "eager", eager_ms), _result("ORT ALL", "ort", ort_ms)]
    results[1].speedup = eager_ms / ort_ms
    activity = Activity(seconds=1.0, cores=2, others_cores=1.5 if busy else 0.0, own_cores=1.0, load_before=0.0,
                        load_after=0.0, busy=busy)  # fmt: skip
    return BenchReport(
        id=run_id, model=model, model_id=version * 8, created_at=f"2026-11-{when}T10:00:00+00:00",
        settings={"torch_model_id": torch * 16} if torch else {}, environment=environment, results=results,
        baseline="PyTorch eager", headline="", notes=[], seconds=1.0, activity=activity, owner="alice@acme.test",
    )  # fmt: skip


def test_a_new_version_surely_slower_is_flagged_and_noise_within_a_version_is_not() -> None:
    runs = [
        _run("r1", "01", "aaaa", 2.0),
        _run("r2", "02", "aaaa", 2.6),  # the same export measured again: noise, compared with nothing
        _run("r3", "08", "bbbb", 3.0),  # the new export: slower than the version before
        _run("r4", "09", "cccc", 3.02),  # within the interval of the one before: not flagged
    ]
    found = regressions(runs)
    assert [(g.after_run, g.before_run, g.configuration) for g in found] == [("r3", "r2", "ORT ALL")]
    assert found[0].text.startswith("ORT ALL on box-a: 2.6 → 3 ms (1.15×)")


def test_eager_rows_follow_the_pytorch_originals_versions_and_busy_runs_are_compared_with_nothing() -> None:
    runs = [
        _run("r1", "01", "aaaa", 2.0, torch="t1"),
        _run("r2", "02", "bbbb", 2.0, torch="t1", eager_ms=20.0),  # a new export; eager ran the same module, slower
        _run("r3", "03", "cccc", 2.0, torch="t2", eager_ms=30.0),  # a new PyTorch original: eager is its version
        _run("r4", "04", "dddd", 8.0, torch="t2", eager_ms=30.0, busy=True),  # slower while the machine was busy
        _run("r5", "05", "eeee", 2.0, eager_ms=90.0),  # saved before runs recorded the PyTorch version
    ]
    found = regressions(runs)
    assert [(g.after_run, g.before_run, g.configuration) for g in found] == [("r3", "r2", "PyTorch eager")]
    assert found[0].text == (
        "PyTorch eager on box-a: 20 → 30 ms (1.50×) from the PyTorch original's version t1t1t1t1t1t1 to t2t2t2t2t2t2"
    )
    assert [run.id for run in busy_runs(runs)] == ["r4"]
    assert not any(row.regressed for row in latest_per_model_machine(runs))  # r5, the newest, surely slower nowhere
    versions = {(p.run_id, p.configuration): p.version for p in trend(runs)}
    assert versions[("r2", "PyTorch eager")] == "t1t1t1t1t1t1" and versions[("r2", "ORT ALL")] == "bbbbbbbbbbbb"
    assert versions[("r5", "PyTorch eager")] == "?"


def test_the_latest_run_per_model_and_machine_with_its_fastest_configuration() -> None:
    runs = [
        _run("r1", "01", "aaaa", 2.0),
        _run("r2", "08", "bbbb", 3.0),
        _run("r3", "05", "aaaa", 1.5, machine="box-b"),
        _run("r4", "06", "aaaa", 4.0, model="cls"),
    ]
    rows = latest_per_model_machine(runs)
    assert [(r.model, r.machine, r.run_id, r.runs, r.regressed) for r in rows] == [
        ("cls", "box-a", "r4", 1, False),
        ("det", "box-a", "r2", 2, True),
        ("det", "box-b", "r3", 1, False),
    ]
    assert (rows[1].fastest, rows[1].fastest_ms, rows[1].speedup) == ("ORT ALL", 3.0, 10 / 3)


def test_one_file_under_two_names_is_said_to_be_one_model() -> None:
    from ui.dashboard_view import same_file_notes

    rows = latest_per_model_machine(
        [_run("r1", "01", "aaaa", 2.0, model="cls"), _run("r2", "02", "aaaa", 2.1, model="方向分类")]
    )
    (line,) = same_file_notes(rows)
    assert (
        line
        == "**cls**, **方向分类** are one file under 2 names (version aaaaaaaaaaaa): their rows measure the same model."
    )
    assert same_file_notes(latest_per_model_machine([_run("r3", "03", "bbbb", 1.0, model="det")])) == []


def test_a_trend_is_every_configuration_of_every_run_oldest_first() -> None:
    points = trend([_run("r2", "08", "bbbb", 3.0, torch="t1"), _run("r1", "01", "aaaa", 2.0, torch="t1")])
    assert [(p.run_id, p.configuration, p.version) for p in points] == [
        ("r1", "ORT ALL", "aaaaaaaaaaaa"),
        ("r1", "PyTorch eager", "t1t1t1t1t1t1"),  # the PyTorch original's version, whatever the export
        ("r2", "ORT ALL", "bbbbbbbbbbbb"),
        ("r2", "PyTorch eager", "t1t1t1t1t1t1"),
    ]
