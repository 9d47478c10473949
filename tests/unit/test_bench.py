"""The benchmark: statistics on known samples, the method, agreement, the lock, the store, the command line."""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from core.bench import BenchReport, BenchRequest, headline, run_benchmark
from core.bench.benchmark import NOISY_FASTER, NOISY_LABELS
from core.errors import BenchmarkError
from core.jobs import BENCH, ProcessBackend, submit
from core.model import ModelRecord, TensorSpec, zoo
from core.model.inputs import BenchInput, default_inputs, make_inputs
from core.model.measured import MeasuredModel
from core.model.torchload import TorchSource
from core.notes import Note, say, warning
from core.runtime.harness import CUT_SHORT, BenchResult, Config, measure
from core.runtime.stats import median_interval, speedup_interval, summarize
from core.settings import PROJECT_ROOT, load_settings
from core.store import Store
from tests import builders
from tests.cli import cli
from ui.bench_view import results_frame, samples_frame
from ui.charts import batch_figure, distribution_figure, latency_figure, speedup_figure

TINY = TorchSource(kind="sample", name="tinycnn")


# -- statistics ---------------------------------------------------------------------------------------------
def test_summary_of_a_known_sample() -> None:
    values = list(range(1, 101))  # 1..100
    s = summarize(values)
    assert (s.n, s.median, s.mean, s.min, s.max) == (100, 50.5, 50.5, 1, 100)
    assert s.p90 == pytest.approx(np.percentile(values, 90)) == pytest.approx(90.1)
    assert s.p99 == pytest.approx(99.01)
    assert s.std == pytest.approx(np.std(values, ddof=1))
    # order statistics n/2 ± 1.96·√n/2 = 50 ± 9.8 → ranks 40 and 60 (0-based): values 41 and 61
    assert (s.median_low, s.median_high) == (41.0, 61.0)
    assert s.relative_interval == pytest.approx(20 / 50.5)


def test_median_interval_covers_the_true_median_about_95_percent_of_the_time() -> None:
    rng = np.random.default_rng(1)
    hits = 0
    for _ in range(2000):
        sample = np.sort(rng.exponential(1.0, 101))
        low, high = median_interval(sample)
        hits += low <= math.log(2) <= high
    assert 0.93 <= hits / 2000 <= 0.985


def test_a_quantiles_interval_holds_its_estimate_and_covers_the_true_p90() -> None:
    """16 requests: their p99's interval was [max, max], below its own estimate; it holds it now, and a p90's
    interval still covers the true one about 95 % of the time."""
    from core.runtime.stats import quantile_interval

    sixteen = np.sort(np.random.default_rng(3).exponential(50.0, 16))
    low, high = quantile_interval(sixteen, 0.99)
    assert low <= np.percentile(sixteen, 99) <= high and high == sixteen[-1]
    rng = np.random.default_rng(4)
    hits = 0
    for _ in range(2000):
        sample = np.sort(rng.exponential(1.0, 200))
        low, high = quantile_interval(sample, 0.9)
        hits += low <= math.log(10) <= high
    assert 0.93 <= hits / 2000 <= 0.985


def test_speedup_interval_holds_the_ratio_of_medians() -> None:
    rng = np.random.default_rng(2)
    slow = rng.normal(10.0, 0.5, 400)
    fast = rng.normal(2.0, 0.1, 400)
    ratio, low, high = speedup_interval(slow, fast)
    assert ratio == pytest.approx(np.median(slow) / np.median(fast))
    assert low < ratio < high and low > 4.7 and high < 5.3
    same = speedup_interval([3.0] * 50, [3.0] * 50)
    assert same == (1.0, 1.0, 1.0)
    assert all(math.isnan(v) for v in speedup_interval([], [1.0]))


def test_empty_and_single_samples_do_not_break_the_summary() -> None:
    assert summarize([]).n == 0 and math.isnan(summarize([]).median)
    one = summarize([2.5])
    assert (one.median, one.std, one.median_low, one.median_high) == (2.5, 0.0, 2.5, 2.5)


# -- inputs ---------------------------------------------------------------------------------------------------
def _record(inputs: list[TensorSpec]) -> ModelRecord:
    return ModelRecord(id="x", name="m", format="onnx", size_bytes=1, path="m.onnx", inputs=inputs, outputs=[])


def test_default_inputs_take_sizes_from_the_pytorch_example() -> None:
    tokens = TensorSpec(
        name="tokens", dtype="float32", shape=["batch", "seq", 64], dynamic_axes={"0": "batch", "1": "seq"}
    )
    onnx_record = _record([tokens])
    torch_record = zoo.describe_sample("transformer")
    (spec,) = default_inputs(onnx_record, torch_record)
    assert spec.shape == [1, 16, 64] and spec.batch_axis == 0
    (alone,) = default_inputs(onnx_record)  # no PyTorch original: a sequence gets a real length, and says so
    assert alone.shape == [1, 128, 64] and alone.free[1].why.english() == "sequence length: 128"
    fixed = default_inputs(_record([TensorSpec(name="x", dtype="int64", shape=[4, "?", None], dynamic_axes={})]))
    assert fixed[0].shape == [4, 1, 1] and fixed[0].batch_axis is None


def test_generated_inputs_are_seeded_and_sized_by_batch() -> None:
    specs = [
        BenchInput(name="x", dtype="float32", shape=[1, 3], batch_axis=0),
        BenchInput(name="ids", dtype="int64", shape=[1, 5], batch_axis=0),
        BenchInput(name="m", dtype="bool", shape=[2]),
    ]
    a, b = make_inputs(specs, 4, seed=7), make_inputs(specs, 4, seed=7)
    assert a["x"].shape == (4, 3) and a["ids"].shape == (4, 5) and a["m"].shape == (2,)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert a["ids"].min() >= 0 and a["ids"].max() <= 9 and a["ids"].dtype == np.int64
    assert not np.array_equal(a["x"], make_inputs(specs, 4, seed=8)["x"])


# -- the harness ----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tinycnn(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return builders.exported_sample("tinycnn", tmp_path_factory.mktemp("m"))


def _inputs() -> list[BenchInput]:
    return [BenchInput(name="input", dtype="float32", shape=[1, 3, 112, 112], batch_axis=0)]


def _tiny(path: Path, torch: bool = False) -> MeasuredModel:
    """TinyCNN's ONNX file with its input plan (and its PyTorch original, named as the app names it)."""
    if torch:
        return MeasuredModel(path=str(path), inputs=_inputs(), name="tinycnn", torch_source=TINY, torch_id="7" * 64)
    return MeasuredModel(path=str(path), inputs=_inputs())


@pytest.mark.quiet  # a speedup, a time budget or a queue measured
def test_eager_against_ort_on_tinycnn(tinycnn: Path) -> None:
    report = run_benchmark(BenchRequest(model=_tiny(tinycnn, torch=True), threads=[1], iterations=60, warmup=5))
    by = {r.label: r for r in report.results}
    assert list(by) == ["PyTorch eager", "ORT DISABLE_ALL", "ORT ALL"]
    assert all(r.n == 60 and len(r.samples_ms) == 60 for r in report.results)
    assert by["PyTorch eager"].speedup == pytest.approx(1.0)
    assert by["ORT ALL"].max_abs_diff is not None and by["ORT ALL"].max_abs_diff < 1e-4
    assert by["ORT ALL"].speedup is not None and by["ORT ALL"].speedup > 1  # FACTS: ≈ 7× on this machine
    r = by["ORT ALL"]
    assert r.min_ms <= r.median_low_ms <= r.median_ms <= r.median_high_ms <= r.max_ms
    assert r.median_ms <= r.p90_ms <= r.p99_ms
    assert r.throughput == pytest.approx(1000 / r.median_ms)
    assert r.first_run_ms > 0 and r.load_ms > 0
    said = say(report.headline)
    assert report.baseline == "PyTorch eager" and "PyTorch eager" in said and "95 % CI" in said
    assert report.environment.versions["onnxruntime"] and report.environment.physical_cores >= 1
    assert report.settings["rounds"] == 10 and report.started <= report.finished
    assert report.settings["torch_model_id"] == "7" * 64  # what eager measured: the Dashboard's version for it


def test_without_pytorch_the_baseline_is_ort_disable_all_and_batches_sweep(tinycnn: Path) -> None:
    report = run_benchmark(BenchRequest(model=_tiny(tinycnn), levels=["disable", "extended"], batches=[1, 4],
                                        threads=[1], iterations=20, warmup=2))  # fmt: skip
    assert report.baseline == "ORT DISABLE_ALL" and "torch_model_id" not in report.settings
    assert [r.label for r in report.results] == [
        "ORT DISABLE_ALL · batch 1", "ORT DISABLE_ALL · batch 4", "ORT EXTENDED · batch 1", "ORT EXTENDED · batch 4",
    ]  # fmt: skip
    b4 = next(r for r in report.results if r.label == "ORT EXTENDED · batch 4")
    assert b4.throughput == pytest.approx(4000 / b4.median_ms) and b4.max_abs_diff is not None
    assert "ONNX Runtime (EXTENDED)" in say(report.headline) and "ORT DISABLE_ALL" in say(report.headline)
    # what the page draws from it
    frame = results_frame(report)
    assert list(frame["batch"]) == [1, 4, 1, 4]
    for figure in (latency_figure(frame), distribution_figure(samples_frame(report))):
        assert figure.data
    series = frame.assign(series=frame["label"].str.replace(r" · batch \d+", "", regex=True))
    assert len(batch_figure(series[["series", "batch", "median_ms", "throughput"]]).data) == 4
    bars = frame[["label", "speedup"]].assign(low=frame["speedup_low"], high=frame["speedup_high"])
    assert speedup_figure(bars, report.baseline).data


@pytest.mark.quiet  # a speedup, a time budget or a queue measured
def test_the_time_budget_stops_measuring_and_says_so(tinycnn: Path) -> None:
    # a round is a tenth of the calls: 1,000 of about a millisecond, past the budget after the first round
    report = run_benchmark(BenchRequest(model=_tiny(tinycnn), levels=["disable"], threads=[1], iterations=10_000,
                                        warmup=0, time_budget_s=0.5))  # fmt: skip
    assert report.results[0].n < 10_000
    (cut,) = [note for note in report.notes if note.key in CUT_SHORT]  # a warning: the page shows it as one
    assert cut.severity == "warning" and "time budget" in say(cut)


def test_the_budget_note_appears_only_when_calls_were_left_out_and_never_advises_fewer_calls() -> None:
    def configs() -> list[Config]:
        return [Config(label=f"c{k}", engine="ort", level="ALL", provider="CPU", threads=1, batch=1, run=list,
                       load_ms=0.0) for k in range(2)]  # fmt: skip

    def silent(fraction: float, message: str) -> None:
        pass

    notes: list[Note] = []
    every = configs()
    measure(every, iterations=1, warmup=0, time_budget_s=0.0, notes=notes, progress=silent)
    assert all(len(c.samples) == 1 for c in every) and notes == []  # the one round ran them all, past the budget

    cut = configs()  # the clock is read after every call, not every round: one call each, then it stops
    rounds = measure(cut, iterations=100, warmup=0, time_budget_s=0.0, notes=notes, progress=silent)
    assert rounds == 1 and all(len(c.samples) == 1 for c in cut)
    assert notes == [warning(CUT_SHORT[0], budget="0", rounds=1, measured=1, asked=100)]  # data: key and values
    assert say(notes[0]) == (
        "The time budget of 0 s ran out after 1 round: 1 of the 100 calls asked for were measured per "
        "configuration. The intervals come from those calls; raise the budget to measure them all (more calls give "
        "tighter intervals)."
    )


def _slow(folder: Path) -> MeasuredModel:
    """About a third of a second a call (tests/builders.py slow_model)."""
    path = builders.write(builders.slow_model(), folder / "slow.onnx")
    return MeasuredModel(path=str(path), inputs=[BenchInput(name="x", dtype="float32", shape=[1, 1024, 1024])])


@pytest.mark.quiet  # a time budget measured
def test_the_budget_holds_the_sessions_the_warm_up_and_the_measuring_of_a_slow_model(tmp_path: Path) -> None:
    """A model of a second a call took 214 s of a 60 s budget: the sessions and 20 warm-up calls each came on top,
    and the clock was read once a round (20 calls a configuration). Now the budget holds everything from the
    request on, the warm-up stops at a fifth of it, and the clock is read after every call: past the budget by
    at most one call a configuration."""
    began = time.perf_counter()
    report = run_benchmark(BenchRequest(model=_slow(tmp_path), threads=[1], iterations=200, warmup=20,
                                        time_budget_s=3.0))  # fmt: skip
    took = time.perf_counter() - began
    call_s = max(r.median_ms for r in report.results) / 1000
    assert took < 3.0 + 2 * call_s + 1.0, (took, call_s)  # the budget, a call of each of the two, and slack
    assert all(1 <= r.n < 200 for r in report.results) and report.results[0].speedup is not None
    assert any(n.key in CUT_SHORT for n in report.notes)  # it says so


def test_sessions_that_do_not_fit_in_memory_together_are_measured_one_at_a_time(
    tinycnn: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 1.34 GB model's benchmark held its two sessions at once (and its command line 7 GB across workers). With
    no room for a second session, each is opened, measured in its share of the budget and closed before the next;
    with room, they are opened together and interleaved in rounds as before."""
    import gc
    import weakref

    from core.bench import benchmark

    def most_sessions_alive(free: int) -> tuple[int, BenchReport]:
        alive: weakref.WeakSet[Any] = weakref.WeakSet()
        most = [0]

        def counted(*args: Any, **kwargs: Any) -> tuple[Any, float]:
            gc.collect()
            session, load_ms = opened(*args, **kwargs)
            alive.add(session)
            most[0] = max(most[0], len(alive))
            return session, load_ms

        monkeypatch.setattr(benchmark, "timed_session", counted)
        monkeypatch.setattr(benchmark, "_free_memory", lambda: free)
        report = run_benchmark(BenchRequest(model=_tiny(tinycnn), levels=["disable", "basic", "all"], threads=[1],
                                            iterations=20, warmup=2))  # fmt: skip
        return most[0], report

    opened = benchmark.timed_session
    most, report = most_sessions_alive(free=0)
    assert most == 1
    assert [(r.label, r.n) for r in report.results] == [("ORT DISABLE_ALL", 20), ("ORT BASIC", 20), ("ORT ALL", 20)]
    assert all(r.speedup is not None and r.max_abs_diff is not None for r in report.results)
    (one_at_a_time,) = [n for n in report.notes if n.key == benchmark.ONE_AT_A_TIME]
    assert "measured one after another" in say(one_at_a_time) and one_at_a_time.values["count"] == 3
    most, report = most_sessions_alive(free=1 << 50)
    assert most == 3 and not any(n.key == benchmark.ONE_AT_A_TIME for n in report.notes)


def test_a_noisy_configuration_is_noted_as_a_warning_by_its_severity_not_by_its_words() -> None:
    """The page shows a note as a warning by its field: in Chinese no note starts with "Noisy", and an English
    prefix must never decide (DESIGN.md rule 6)."""
    from core.bench.benchmark import _results

    def config(label: str, engine: str, level: str, samples_ms: list[float]) -> Config:
        made = Config(label=label, engine=engine, level=level, provider="CPU", threads=1, batch=1, run=list,
                      load_ms=0.0)  # fmt: skip
        made.samples = [int(ms * 1e6) for ms in samples_ms]
        return made

    steady = [1.0 + 0.001 * (k % 3) for k in range(60)]
    spread = [0.5 + 0.05 * k for k in range(60)]  # 0.5 to 3.5 ms: its median's interval far wider than ±5 %
    notes: list[Note] = []
    _results([config("ORT DISABLE_ALL", "ort", "DISABLE_ALL", steady), config("ORT ALL", "ort", "ALL", spread)], notes)
    (noisy,) = notes
    assert noisy == warning(NOISY_LABELS, percent=5, labels="ORT ALL")
    assert say(noisy).startswith("Noisy: for ORT ALL, the 95 % CI of the median is wider than ±5 %")


def test_models_from_the_wild_are_benchmarked(tmp_path: Path) -> None:
    from core.model.intake import IntakeRequest, describe_files

    for builder in (builders.mixed_inputs_model, builders.constant_weights_model, builders.control_flow_model):
        path = builders.write(builder(), tmp_path / f"{builder.__name__}.onnx")
        record = describe_files(IntakeRequest(paths=[str(path)]))
        model = MeasuredModel(path=str(path), inputs=default_inputs(record))
        report = run_benchmark(BenchRequest(model=model, threads=[1], iterations=10, warmup=1))
        assert all(r.n == 10 and r.max_abs_diff == 0.0 for r in report.results), builder.__name__


def test_bad_configurations_are_refused_clearly(tinycnn: Path) -> None:
    cases: list[tuple[dict[str, Any], str]] = [
        ({"engines": ["eager"]}, "needs the PyTorch model"),
        ({"levels": ["max"]}, "Unknown optimization level"),
        ({"threads": [0]}, "Threads must be"),
        ({"engines": ["jax"]}, "Unknown engine jax"),
        ({"providers": ["CUDAExecutionProvider"]}, "not in this build"),
    ]
    for kwargs, message in cases:
        with pytest.raises(BenchmarkError, match=message):
            run_benchmark(BenchRequest(model=_tiny(tinycnn), iterations=5, **kwargs))
    fixed = [BenchInput(name="input", dtype="float32", shape=[1, 3, 112, 112], batch_axis=None)]
    with pytest.raises(BenchmarkError, match="batch axis is fixed"):
        run_benchmark(BenchRequest(model=MeasuredModel(path=str(tinycnn), inputs=fixed), batches=[1, 2], iterations=5))
    wrong = [BenchInput(name="input", dtype="float32", shape=[1, 3, 7, 7], batch_axis=0)]
    with pytest.raises(BenchmarkError, match="failed on the generated inputs"):
        run_benchmark(BenchRequest(model=MeasuredModel(path=str(tinycnn), inputs=wrong), iterations=5))


def _quiet_levels(tinycnn: Path) -> tuple[BenchReport, BenchResult]:
    """A short run of TinyCNN at DISABLE_ALL and ALL, every result marked quiet, and ALL's result: a test sets its
    speedup to what the headline is checked on."""
    request = BenchRequest(model=_tiny(tinycnn), levels=["disable", "all"], threads=[1], iterations=10, warmup=0)
    report = run_benchmark(request)
    for result in report.results:
        result.noisy = False
    return report, next(r for r in report.results if r.level == "ALL")


def test_headline_says_slower_with_the_interval_turned_round(tinycnn: Path) -> None:
    report, ort_all = _quiet_levels(tinycnn)
    ort_all.speedup, ort_all.speedup_low, ort_all.speedup_high = 0.5, 0.4, 0.625
    assert "2.0× slower than ORT DISABLE_ALL, 95 % CI 1.6–2.5×" in say(headline(report))


def test_a_noisy_run_gives_the_interval_not_a_settled_number(tinycnn: Path) -> None:
    """The same model within minutes on a busy machine gave 7.9×, 54.7× and 65.0×: a headline must not state
    one of them as the answer."""
    report, ort_all = _quiet_levels(tinycnn)
    ort_all.speedup, ort_all.speedup_low, ort_all.speedup_high = 54.7, 7.9, 65.0
    said = headline(report)
    assert said.key == NOISY_FASTER and said.severity == "warning"  # the page shows it as a warning: a field
    text = say(said)
    assert text.startswith("Noisy run:") and "between 7.9× and 65.0× faster than ORT DISABLE_ALL" in text
    assert "54.7×" not in text and "Noisy" in text
    ort_all.speedup, ort_all.speedup_low, ort_all.speedup_high = 1.2, 1.1, 1.3
    next(r for r in report.results if r.level == "DISABLE_ALL").noisy = True  # the baseline's own spread
    assert say(headline(report)).startswith("Noisy run:")
    for result in report.results:
        result.noisy = False
    ort_all.speedup, ort_all.speedup_low, ort_all.speedup_high = 1.02, 0.95, 1.1
    assert "as fast as each other here: 95 % CI 0.95–1.10×" in say(headline(report))
    assert headline(report).severity == "info"
    ort_all.speedup, ort_all.speedup_low, ort_all.speedup_high = 5.41, 5.38, 5.44  # narrow, on a busy machine
    ort_all.noisy = True
    assert "between 5.38× and 5.44× faster" in say(headline(report))  # never "between 5.4× and 5.4×"
    ort_all.noisy = False
    ort_all.speedup, ort_all.speedup_low, ort_all.speedup_high = 1.3, 1.27, 1.33
    assert "1.3× faster than ORT DISABLE_ALL, 95 % CI 1.27–1.33×" in say(headline(report))


# -- the lock --------------------------------------------------------------------------------------------------
@pytest.mark.quiet  # a speedup, a time budget or a queue measured
def test_two_benchmarks_never_overlap(tinycnn: Path, tmp_path: Path) -> None:
    settings = dataclasses.replace(load_settings(environ={}), data_dir=str(tmp_path / "data"))
    backend = ProcessBackend(settings)
    request = BenchRequest(model=_tiny(tinycnn), levels=["disable"], threads=[1], iterations=400, warmup=5)
    first = submit(BENCH, dataclasses.replace(request, iterations=3000), backend)  # long enough to be waited for
    while first.state != "running":
        time.sleep(0.01)
    second = submit(BENCH, request, backend)
    positions = set()
    while not second.done():
        if second.queue_position is not None:
            positions.add(second.queue_position)
        time.sleep(0.005)  # a core left to the benchmarks, not spent asking
    a = first.result(120)
    b = second.result(120)
    spans = sorted([(a.started, a.finished), (b.started, b.finished)])
    assert spans[0][1] <= spans[1][0], "two benchmarks measured at the same time"
    assert 1 in positions or 0 in positions


# -- the store: a real run saved and read back (the store itself: test_store.py) ----------------------------------
@pytest.fixture(scope="module")
def report(tinycnn: Path) -> BenchReport:
    return run_benchmark(BenchRequest(model=_tiny(tinycnn, torch=True), threads=[1], iterations=20, warmup=2))


def test_runs_survive_a_restart(report: BenchReport, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'h' / 'history.sqlite'}"
    Store(url).save(report)
    again = Store(url)  # a new engine, as after a restart of the app
    (summary,) = again.runs()
    assert (summary.id, summary.model, summary.configurations) == (report.id, "tinycnn", 3)
    loaded = again.load(report.id)
    assert loaded.headline == report.headline and loaded.environment == report.environment
    assert loaded.activity == report.activity and report.activity is not None  # what else the machine did
    assert [r.median_ms for r in loaded.results] == [r.median_ms for r in report.results]
    assert loaded.results[0].samples_ms == report.results[0].samples_ms
    assert again.distinct("model") == ["tinycnn"]
    # a fresh process sees it too
    code = f"from core.store import Store; print(len(Store({url!r}).runs()))"
    out = subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "1"


# -- the command line -----------------------------------------------------------------------------------------
@pytest.mark.quiet  # a speedup, a time budget or a queue measured
def test_cli_bench_sample_reports_a_real_speedup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("WORKBENCH_TEAM_DOMAINS", "acme.test=acme")
    done = cli("bench", "sample:tinycnn", "--iters", "100", "--threads", "1", "--owner", "CI@acme.test", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    by = {r["label"]: r for r in data["results"]}
    assert set(by) == {"PyTorch eager", "ORT DISABLE_ALL", "ORT ALL"}
    keys = {"engine", "level", "provider", "threads", "batch", "median_ms", "p90_ms", "p99_ms", "mean_ms", "std_ms",
            "throughput", "speedup", "max_abs_diff"}  # fmt: skip
    assert keys <= set(by["ORT ALL"])
    assert by["ORT ALL"]["speedup"] > 1.5 and by["ORT ALL"]["max_abs_diff"] < 1e-4
    assert data["headline"].startswith(("ONNX Runtime (ALL)", "Noisy run: ONNX Runtime (ALL)"))  # a sentence
    assert all(set(n) == {"key", "values", "severity"} for n in data["notes"])  # the run's notes, as data
    assert data["environment"]["versions"]["torch"].startswith("2.13")
    (saved,) = Store(f"sqlite:///{tmp_path / 'history.sqlite'}").runs()
    assert (saved.owner, saved.team) == ("ci@acme.test", "acme")  # a pipeline's run on its team's Dashboard


def test_a_benchmark_of_an_onnx_model_names_torchs_version_without_importing_it(tmp_path: Path) -> None:
    """The run's environment names the installed PyTorch; importing it to read its version made every benchmark,
    profile and quantization of an ONNX model 1.5-3 CPU-seconds dearer (a small model's benchmark: 1.5 s → 0.1)."""
    import torch

    path = builders.write(builders.relu_model(), tmp_path / "relu.onnx")
    code = (
        "import sys; from core.bench import BenchRequest, run_benchmark; from core.model.inputs import BenchInput; "
        "from core.model.measured import MeasuredModel; "
        f"m = MeasuredModel(path={str(path)!r}, inputs=[BenchInput(name='x', dtype='float32', shape=[1, 4])]); "
        "r = run_benchmark(BenchRequest(model=m, iterations=5, warmup=1)); "
        "print(r.environment.versions['torch'], 'torch' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.split() == [torch.__version__, "False"]


def test_a_speedup_that_rounds_to_one_is_said_as_about_as_fast_with_its_percent(tinycnn: Path) -> None:
    """ "1.0× faster" read oddly: a speedup surely above 1 that rounds to 1.0 is about as fast, by a few percent."""
    from core.bench.benchmark import NEARLY_FASTER, NEARLY_SLOWER

    report, ort_all = _quiet_levels(tinycnn)
    ort_all.speedup, ort_all.speedup_low, ort_all.speedup_high = 1.03, 1.01, 1.05
    said = headline(report)
    assert said.key == NEARLY_FASTER and "1.0×" not in say(said)
    assert "is about as fast as ORT DISABLE_ALL, faster by 3 %: 95 % CI 1.01–1.05×" in say(said)
    ort_all.speedup, ort_all.speedup_low, ort_all.speedup_high = 0.97, 0.96, 0.98
    assert headline(report).key == NEARLY_SLOWER
    assert "about as fast as ORT DISABLE_ALL, slower by 3 %: 95 % CI 0.96–0.98×" in say(headline(report))
    ort_all.speedup, ort_all.speedup_low, ort_all.speedup_high = 1.1, 1.08, 1.12
    assert "1.1× faster than ORT DISABLE_ALL" in say(headline(report))
