"""Tune: session configurations searched within a budget with the benchmark harness, a winner only when surely
faster than ONNX Runtime's defaults, variants only within Quantize's tolerance, the run in the history and on the
Dashboard, the command line's JSON, and the SessionConfig that Deploy reads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.errors import SessionConfigError, TuneError
from core.i18n import using
from core.jobs import JOBS
from core.jobs.wire import decode, encode
from core.model.inputs import BenchInput
from core.model.measured import MeasuredModel
from core.notes import say, say_all
from core.runtime.harness import BenchResult
from core.runtime.runs import TuneRun
from core.store import Store
from core.store.dashboard import latest_per_model_machine, latest_tuned
from core.tune import Candidate, SessionConfig, TuneReport, TuneRequest, run_tune
from core.tune.saved import as_run
from core.tune.search import Space, stage_configs, stage_winner, surely_faster
from core.tune.words import BUDGET_OUT, NO_CUDA_GRAPH, TOO_SLOW, not_tried_note
from tests import builders
from tests.cli import cli
from ui.charts import latency_figure
from ui.tune_view import candidates_frame, ort_code, table_frame

PLAN = [BenchInput(name="x", dtype="float32", shape=[1, 64], batch_axis=0)]


@pytest.fixture(scope="module")
def mlp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return builders.write(builders.mlp_model(), tmp_path_factory.mktemp("mlp") / "mlp.onnx")


@pytest.fixture(scope="module")
def strict(mlp: Path, tmp_path_factory: pytest.TempPathFactory) -> TuneReport:
    """A run that reaches the variants, with a tolerance no variant can pass (cosine above 1)."""
    request = TuneRequest(
        model=MeasuredModel(path=str(mlp), inputs=PLAN, name="mlp", id="a" * 64),
        out_dir=str(tmp_path_factory.mktemp("tuned")),
        budget_s=4.0,
        batches=[4],
        held_out=2,
        min_cosine=1.01,
    )
    return decode(encode(run_tune(request)), TuneReport)  # as it comes back from the worker


@pytest.fixture(scope="module")
def short(tmp_path_factory: pytest.TempPathFactory) -> TuneReport:
    """A run with a budget too short for every stage: the shortest budget (1 s) on a perceptron whose call is 2.4
    gigaflops at batch 64 (tens of ms here, several even on a fast machine), so that no machine fits every stage (at
    1.1 gigaflops one clean run of the quiet tests fitted them all)."""
    folder = tmp_path_factory.mktemp("short")
    wide = builders.write(builders.mlp_model(width=3072), folder / "wide.onnx")
    plan = [BenchInput(name="x", dtype="float32", shape=[64, 3072], batch_axis=0)]
    request = TuneRequest(model=MeasuredModel(path=str(wide), inputs=plan), out_dir=str(folder), budget_s=1.0)
    return run_tune(request)


def test_a_session_config_round_trips_through_json_and_gives_ort_its_options() -> None:
    import onnxruntime as ort

    config = SessionConfig(intra_op_threads=1, execution_mode="parallel", level="basic", variant="fp16", batch=8)
    assert SessionConfig.from_json(config.to_json()) == config
    assert json.loads(config.to_json())["providers"] == ["CPUExecutionProvider"]
    options = config.to_session_options()
    assert options.intra_op_num_threads == 1
    assert options.execution_mode == ort.ExecutionMode.ORT_PARALLEL
    assert options.graph_optimization_level == ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    assert SessionConfig.from_json("{}") == SessionConfig()  # ORT's defaults


def test_a_bad_session_config_says_what_is_wrong_and_what_it_may_be() -> None:
    with pytest.raises(SessionConfigError, match="level must be one of disable, basic, extended, layout, all"):
        SessionConfig.from_json('{"level": "fastest"}')
    with pytest.raises(SessionConfigError, match="Unknown session configuration key threads; the keys are"):
        SessionConfig.from_json('{"threads": 2}')
    with pytest.raises(SessionConfigError, match="batch must be a whole number from 1 to 4096"):
        SessionConfig(batch=0)


def _measured(config: SessionConfig, median: float, low: float, high: float) -> Candidate:
    stats: dict[str, Any] = {"n": 100, "median_ms": median, "mean_ms": median, "p90_ms": high, "p99_ms": high}
    stats["min_ms"] = low
    stats |= {"max_ms": high, "std_ms": 0.1, "median_low_ms": low, "median_high_ms": high, "throughput": 1.0}
    result = BenchResult(
        label="", engine="ort", level="ALL", provider="CPU", threads=0, batch=config.batch, load_ms=0, first_run_ms=0,
        **stats,
    )  # fmt: skip
    return Candidate(config=config, label="", stage="threads", result=result)


def test_a_change_is_kept_only_when_its_interval_lies_wholly_below() -> None:
    best = _measured(SessionConfig(), 1.0, 0.95, 1.05)
    overlapping = _measured(SessionConfig(intra_op_threads=1), 0.9, 0.8, 0.96)
    apart = _measured(SessionConfig(intra_op_threads=2), 0.93, 0.9, 0.94)
    assert not surely_faster(overlapping, best) and surely_faster(apart, best)
    assert stage_winner(best, [overlapping]) is best
    assert stage_winner(best, [overlapping, apart]) is apart
    batched = _measured(SessionConfig(batch=8), 4.0, 3.9, 4.1)  # 0.5 ms per sample
    assert surely_faster(batched, best)
    out_of_tolerance = _measured(SessionConfig(variant="fp16"), 0.5, 0.4, 0.6)
    out_of_tolerance.accuracy_ok = False
    assert stage_winner(best, [out_of_tolerance]) is best


@pytest.mark.quiet  # how far the budget reaches depends on the machine's speed
def test_the_defaults_are_a_candidate_and_the_answer_is_never_slower(strict: TuneReport) -> None:
    assert strict.candidates[0].config == SessionConfig() and strict.default.config == SessionConfig()
    assert strict.default.measured
    if strict.changed:  # the winner's interval lies below the defaults', measured in the same rounds
        assert strict.best.ci_ms[1] < strict.default.ci_ms[0]
        assert say(strict.headline).startswith("Use ")
    else:
        assert strict.best.config == SessionConfig() and say(strict.headline).startswith("ONNX Runtime's defaults stay")
    tried = {c.stage for c in strict.candidates}
    assert {"threads", "variant"} <= tried, strict.not_tried


@pytest.mark.quiet  # how far the budget reaches depends on the machine's speed
def test_cuda_graphs_without_the_cuda_provider_are_not_tried_and_the_run_says_so(strict: TuneReport) -> None:
    stage = not_tried_note(NO_CUDA_GRAPH, "cuda_graph").values["stage"]
    said = [n.key for n in strict.not_tried if n.values.get("stage") == stage]
    assert said and said[0] in (NO_CUDA_GRAPH, BUDGET_OUT, TOO_SLOW), strict.not_tried  # why, or the budget's end


@pytest.mark.quiet  # how far the budget reaches depends on the machine's speed
def test_a_variant_outside_the_tolerance_is_judged_and_never_timed(strict: TuneReport) -> None:
    variants = [c for c in strict.candidates if c.config.variant != "fp32"]
    assert {c.config.variant for c in variants} == {"dynamic-qint8", "fp16"}
    for c in variants:
        assert c.accuracy_ok is False and "cosine" in say(c.accuracy_note) and not c.measured
    assert strict.best.config.variant == "fp32"
    assert any("variants" in line for line in say_all(strict.not_tried))


@pytest.mark.quiet  # how far the budget reaches depends on the machine's speed
def test_tune_stops_near_its_budget_and_names_what_it_did_not_try(short: TuneReport) -> None:
    assert short.seconds < short.budget_s + 1.5
    assert short.default.measured
    mode = not_tried_note(BUDGET_OUT, "mode").values["stage"]  # out of time, or too little left for one setting
    out_of_time = [n for n in short.not_tried if n.key in (BUDGET_OUT, TOO_SLOW) and n.values["stage"] == mode]
    assert out_of_time, short.not_tried  # the least promising stage comes last and is the first left out
    assert not short.per_sample or short.best.config.batch > 1


def test_the_page_charts_every_candidate_per_sample_with_its_interval(strict: TuneReport) -> None:
    frame = candidates_frame(strict)
    assert frame["label"].iloc[0].startswith("ORT defaults") and frame["label"].is_unique
    assert (frame["median_low_ms"] <= frame["median_ms"]).all() and (
        frame["median_ms"] <= frame["median_high_ms"]
    ).all()
    batched = [c for c in strict.candidates if c.config.batch == 4 and c.measured]
    for c in batched:  # per sample: the call's median over its batch
        assert c.result is not None and c.median_ms == pytest.approx(c.result.median_ms / 4)
    figure = latency_figure(frame, "milliseconds per sample")
    assert figure.layout.xaxis.title.text == "milliseconds per sample"
    table = table_frame(strict)
    assert len(table) == len(frame) + sum(1 for c in strict.candidates if not c.measured)
    # the accuracy beside the time, not past the grid's right edge (it cut "Dynamic INT8, cosine…" off)
    assert list(table.columns)[:4] == ["configuration", "stage", "median ms (95 % CI)", "accuracy"]
    assert "ort.InferenceSession('mlp.onnx'" in ort_code(strict.best.config, "mlp.onnx")


def test_a_tuning_run_is_saved_to_the_history_and_shown_on_the_dashboard(strict: TuneReport, tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'history.sqlite'}")
    store.save(as_run(strict), owner="ada@example.com", team="t")
    saved = store.load(strict.id)
    assert isinstance(saved, TuneRun) and saved.owner == "ada@example.com"
    assert saved.best == strict.best.config.to_data() and saved.best_label == strict.best.label
    assert saved.not_tried == strict.not_tried and saved.budget_s == strict.budget_s
    assert saved.results[0].label == "ORT defaults" and saved.results[0].p99_ms > 0
    runs = [saved]
    assert latest_per_model_machine(runs) == []  # a tuning run is not a benchmark's latest
    (row,) = latest_tuned(runs)
    assert row.model == "mlp" and row.run_id == strict.id
    assert row.default_ms == pytest.approx(strict.default.median_ms)
    assert SessionConfig.from_data(row.settings) == strict.best.config


def test_the_command_line_gives_default_best_and_candidates_and_writes_the_config(
    mlp: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("WORKBENCH_HISTORY_URL", "")
    out = tmp_path / "tuned" / "session.json"
    done = cli("tune", str(mlp), "--budget", "1", "--variants", "", "--json", "-o", str(out))
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    for side in ("default", "best"):
        assert set(data[side]) >= {"settings", "median_ms", "ci_ms"}
        low, high = data[side]["ci_ms"]
        assert low <= data[side]["median_ms"] <= high
    assert data["default"]["settings"] == SessionConfig().to_data()
    assert data["candidates"][0]["settings"] == SessionConfig().to_data()
    assert SessionConfig.from_json(out.read_text()).to_data() == data["best"]["settings"]
    history = Store(f"sqlite:///{tmp_path / 'data' / 'history.sqlite'}")
    assert [r.id for r in history.runs()] == [data["id"]]


def test_tune_runs_alone_like_a_benchmark() -> None:
    job = JOBS.get("tune.run")
    assert job.exclusive and job.folder == "tuned"


def test_static_variants_and_bad_budgets_are_refused_with_the_way_out(mlp: Path, tmp_path: Path) -> None:
    model = MeasuredModel(path=str(mlp), inputs=PLAN)
    with pytest.raises(TuneError, match="make it on the Quantize page"):
        run_tune(TuneRequest(model=model, out_dir=str(tmp_path), variants=["static-qdq-minmax"]))
    with pytest.raises(TuneError, match="between 1 s and 24 hours"):
        run_tune(TuneRequest(model=model, out_dir=str(tmp_path), budget_s=0.1))


def test_the_threads_stage_names_every_core_too_since_ort_pins_its_own_default_threads() -> None:
    def tried(cores: int) -> list[int]:
        space = Space(physical_cores=cores, providers=(), variants=(), batches=())
        return [c.intra_op_threads for c in stage_configs("threads", SessionConfig(), space)]

    assert tried(2) == [1, 2] and tried(8) == [1, 4, 8] and tried(1) == [1]


def test_a_provider_with_its_own_threads_and_the_cpu_provider_are_each_tried_at_every_thread_count() -> None:
    """OpenVINO sizes its own thread pool from the session's threads (its num_of_threads): left at 0 it takes every
    core and lost where one thread won, and the threads stage then varied only the CPU provider's threads. Now the
    providers stage tries it at each count, and when it wins there, the threads stage gives the CPU provider alone
    each count too."""
    ov, cuda = "OpenVINOExecutionProvider", "CUDAExecutionProvider"
    space = Space(physical_cores=8, providers=(ov, cuda), variants=(), batches=())
    tried = [(c.providers, c.intra_op_threads) for c in stage_configs("providers", SessionConfig(), space)]
    cpu = "CPUExecutionProvider"
    assert tried == [((ov, cpu), 0), ((ov, cpu), 1), ((ov, cpu), 4), ((ov, cpu), 8), ((cuda, cpu), 0)]
    one = [c.intra_op_threads for c in stage_configs("providers", SessionConfig(intra_op_threads=1), space)]
    assert one == [1, 4, 8, 1]  # the best's own count first, each count once
    # OpenVINO won at one thread: the threads stage tries its other counts, and the CPU provider alone at each count
    won = SessionConfig(providers=(ov, cpu), intra_op_threads=1)
    after = [(c.providers, c.intra_op_threads) for c in stage_configs("threads", won, space)]
    assert after == [((ov, cpu), 4), ((ov, cpu), 8), ((cpu,), 1), ((cpu,), 4), ((cpu,), 8)]
    cuda_won = SessionConfig(providers=(cuda, cpu))
    assert [c.providers for c in stage_configs("threads", cuda_won, space)] == [(cuda, cpu)] * 3


def test_the_headline_says_slower_when_the_runner_up_lost_the_final_round_and_overlap_only_when_it_did() -> None:
    from types import SimpleNamespace

    from core.tune.words import headline

    default = _measured(SessionConfig(), 5.77, 5.56, 5.86)
    for runner_up, said in (
        (_measured(SessionConfig(intra_op_threads=1), 7.79, 7.69, 7.91), "was slower when timed beside them"),
        (_measured(SessionConfig(intra_op_threads=1), 5.7, 5.5, 5.9), "the intervals overlap"),
    ):
        report = SimpleNamespace(best=default, default=default, runner_up=runner_up, per_sample=False, candidates=[])
        verdict = headline(report)  # type: ignore[arg-type]
        text = say(verdict)
        assert said in text and "intra-op 1" in text
        with using("zh"):  # kept as data, the configuration's words too: a Chinese reader of the history reads Chinese
            chinese = say(verdict)
        assert "算子内 1" in chinese and "intra-op" not in chinese and "ONNX Runtime" in chinese


def test_a_batch_that_wins_per_sample_says_what_it_costs_each_request() -> None:
    """Batch 8 at 0.231 ms per sample beat the defaults' 0.283 ms; a call of 8 takes 1.85 ms, and a request that
    waits for its batch is answered later: the headline says so, not only "1.23× as fast"."""
    from types import SimpleNamespace

    from core.tune.words import headline

    default = _measured(SessionConfig(), 0.283, 0.28, 0.29)
    best = _measured(SessionConfig(batch=8), 1.85, 1.82, 1.87)
    report = SimpleNamespace(best=best, default=default, runner_up=best, per_sample=True, candidates=[])
    text = say(headline(report))  # type: ignore[arg-type]
    assert text.startswith("Use batch 8: 1.22× as fast") and "takes 1.85 ms, against 0.283 ms" in text
    assert "where each request must be answered at once, keep batch 1" in text


def test_the_sessions_timed_in_turn_stop_spinning_when_a_call_returns(mlp: Path) -> None:
    """Sessions alive together in one process, timed one call each in turn, slow each other while their threads
    spin after a call (1.3-2.9x on two cores: benchmarks/interleaved_sessions.py); the benchmark harness's and
    Tune's sessions stop spinning when a call returns, and keep ONNX Runtime's other settings."""
    from core.runtime.harness import timed_session
    from core.runtime.ort import STOP_SPINNING
    from core.tune.sessions import open_session

    key, value = STOP_SPINNING
    benchmark, _ms = timed_session(str(mlp), "basic", "CPUExecutionProvider", 1)
    tuned, _ms = open_session(str(mlp), SessionConfig(intra_op_threads=2, level="extended"))
    for session in (benchmark, tuned):
        assert session.get_session_options().get_session_config_entry(key) == value
    assert tuned.get_session_options().intra_op_num_threads == 2


@pytest.fixture(scope="module")
def wide(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A perceptron whose call at batch 64 is a gigaflop (tens of ms here): its search fills any budget."""
    return builders.write(builders.mlp_model(width=2048), tmp_path_factory.mktemp("wide") / "wide.onnx")


@pytest.mark.quiet  # how far the budget reaches depends on the machine's speed
def test_a_budget_past_the_worker_limit_is_capped_and_said_and_the_search_ends_within_the_limit(
    wide: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`tune --budget 60` under a 12 s worker limit was killed at the limit and lost the whole search."""
    monkeypatch.setenv("WORKBENCH_WORKER_TIMEOUT_S", "12")
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    done = cli("tune", str(wide), "--input", "x=64,2048", "--budget", "60", "--variants", "", "--no-save", "--json")
    assert done.returncode == 0, done.stderr
    assert "budget capped to 9 s: the worker limit is 12 s" in done.stderr  # as the Deploy page caps it
    data = json.loads(done.stdout)
    assert data["budget_s"] == 9 and data["seconds"] < 12 and data["default"]["median_ms"] > 0


def test_a_search_the_worker_limit_ends_keeps_what_it_measured(
    wide: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Were the job stopped all the same (the budget not capped here), what each stage measured is written into the
    job's folder as it goes, and the command line prints it before the error.

    A search keeps its budget on any machine (each stage is sized by its share of it), so the job outlives the
    worker's limit whatever the machine's speed; the budget is short, so that the threads stage (an eighth of it)
    ends within the limit even when the worker is slow to start (a budget of 60 s gave that stage 7.4 s of the 8:
    at load 13 the job was stopped before it, and nothing was written)."""
    import core.cli.tune

    monkeypatch.setattr(core.cli.tune, "longest_budget", lambda limit: 10_000)
    monkeypatch.setenv("WORKBENCH_WORKER_TIMEOUT_S", "8")
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    done = cli("tune", str(wide), "--input", "x=64,2048", "--budget", "16", "--variants", "", "--no-save", "--json")
    assert done.returncode == 2 and "ran longer than its limit of 8 s" in done.stderr
    data = json.loads(done.stdout)
    assert data["complete"] is False and "ran longer than its limit" in data["error"]
    assert data["stages_done"][:2] == ["providers", "threads"] and data["budget_s"] == 16
    measured = [c for c in data["candidates"] if c["median_ms"] is not None]
    assert measured and {"threads"} <= {c["stage"] for c in measured}
    assert data["best_so_far"]["settings"] in [c["settings"] for c in data["candidates"]] + [SessionConfig().to_data()]


def test_a_partial_search_reads_back_typed_and_prints_as_what_it_is(
    strict: TuneReport, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from core.cli.tune import _print_partial
    from core.tune.budget import PARTIAL, TunePartial, longest_budget, read_partial, write_partial

    measured = [c for c in strict.candidates[1:] if c.measured]
    partial = TunePartial(budget_s=60.0, seconds=7.5, stages_done=["providers", "threads"], best=measured[0],
                          candidates=measured)  # fmt: skip
    write_partial(str(tmp_path), partial)
    again = read_partial(str(tmp_path))
    assert again is not None and again.best.config == measured[0].config and again.stages_done == partial.stages_done
    _print_partial(again)
    shown = capsys.readouterr().out
    assert shown.startswith("The search was stopped before its answer, 7.5 s into its 60 s")
    assert "none was timed beside the defaults" in shown and "best so far  " in shown
    (tmp_path / PARTIAL).write_bytes(b"\x93not a partial")  # the worker's file: decoded into its type, or nothing
    assert read_partial(str(tmp_path)) is None and read_partial(str(tmp_path / "none")) is None
    assert (longest_budget(20), longest_budget(600), longest_budget(1)) == (16, 480, 1)  # the Deploy page's cap


def test_a_language_models_batch_is_not_chosen_from_one_prefill_call_and_the_reason_is_said(
    gpt2_past: Any,  # tests.lm_models.LanguageModel, a fixture of tests/unit/conftest.py
) -> None:
    done = cli("tune", str(gpt2_past.onnx), "--budget", "2", "--variants", "", "--no-save", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["best"]["settings"]["batch"] == 1
    assert all(c["settings"]["batch"] == 1 for c in data["candidates"])
    assert any("batch is a serving choice" in line and "tokens/s" in line for line in data["not_tried"])


def test_tune_o_writes_a_variant_with_the_data_file_its_weights_are_in(tmp_path: Path) -> None:
    """A large variant keeps its weights in NAME.onnx.data, named inside the model: ``tune -o`` copies it beside the
    renamed model, so the copy ``deploy`` reads finds its weights."""
    from types import SimpleNamespace

    from core.cli.tune import _write
    from core.runtime.session_config import SessionConfig

    made = tmp_path / "made" / "dynamic-qint8.onnx"
    made.parent.mkdir()
    made.write_bytes(b"model")
    Path(f"{made}.data").write_bytes(b"weights")
    config = SessionConfig(variant="dynamic-qint8")
    report = SimpleNamespace(best=SimpleNamespace(config=config), variant_paths={"dynamic-qint8": str(made)})
    out = tmp_path / "out" / "chosen.json"
    _write(report, out)  # type: ignore[arg-type]
    assert (out.parent / "chosen.dynamic-qint8.onnx").read_bytes() == b"model"
    assert (out.parent / "dynamic-qint8.onnx.data").read_bytes() == b"weights"
