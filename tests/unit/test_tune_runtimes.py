"""Tune across runtimes: the runtime and its providers are among the candidates, each runtime's candidates measured in
its own worker with the same harness, the winner's SessionConfig carrying its runtime and providers, and a
configuration saved before it had a runtime still reading as the default runtime's."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from core.deploy.session import read_tuned
from core.errors import SessionConfigError
from core.i18n import using
from core.model.inputs import BenchInput
from core.model.measured import MeasuredModel
from core.notes import note, say
from core.runtime.fallback import PARTLY
from core.runtime.harness import BenchResult, timed_fields
from core.runtime.machine import environment
from core.runtime.session_config import SessionConfig
from core.tune.across import RUNTIME_WON, combine, tune_across
from core.tune.records import Candidate, TuneReport, TuneRequest
from core.tune.words import NONE_FASTER
from tests import builders
from tests.cli import cli
from tests.runtimes import OPENVINO, conv_split_model, require_openvino
from ui.tune_view import ort_code

SAVED_BEFORE_RUNTIMES = (
    '{"batch": 1, "execution_mode": "sequential", "inter_op_threads": 0, "intra_op_threads": 1, "io_binding": false, '
    '"level": "all", "providers": ["CPUExecutionProvider"], "variant": "fp32"}'
)


def test_a_config_saved_before_runtimes_reads_as_the_default_runtimes_and_round_trips_with_its_runtime() -> None:
    old = SessionConfig.from_json(SAVED_BEFORE_RUNTIMES)
    assert old == SessionConfig(intra_op_threads=1) and old.runtime == "default"
    assert read_tuned(json.dumps({"best": {"settings": json.loads(SAVED_BEFORE_RUNTIMES)}})) == old  # tune --json
    openvino = SessionConfig(runtime="openvino", providers=("OpenVINOExecutionProvider", "CPUExecutionProvider"))
    assert json.loads(openvino.to_json())["runtime"] == "openvino"
    assert SessionConfig.from_json(openvino.to_json()) == openvino
    code = ort_code(openvino, "m.onnx").splitlines()  # the page's plain ONNX Runtime code names the build to install
    assert code[0] == "# the runtime openvino: pip install onnxruntime-openvino"
    assert code[-1].endswith("providers=['OpenVINOExecutionProvider', 'CPUExecutionProvider'])")
    assert not ort_code(SessionConfig(), "m.onnx").startswith("#")
    with pytest.raises(SessionConfigError, match="runtime must name a runtime"):
        SessionConfig.from_json('{"runtime": ""}')


OV, CPU = "OpenVINOExecutionProvider", "CPUExecutionProvider"


@pytest.fixture(scope="module")
def across(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The Hardmax CNN tuned on the default runtime and OpenVINO's, five seconds each (OpenVINO's first stage needs
    them on a busy machine), as the command line's JSON."""
    require_openvino()
    model = builders.write(conv_split_model(), tmp_path_factory.mktemp("across") / "conv.onnx")
    done = cli("tune", str(model), "--runtime", f"default,{OPENVINO}", "--budget", "10", "--variants", "", "--no-save",
               "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def test_tuning_across_runtimes_measures_each_runtimes_candidates_in_its_own_worker(across: dict[str, Any]) -> None:
    measured = [c for c in across["candidates"] if c["median_ms"] is not None]
    by_runtime = {name: [c for c in measured if c["settings"]["runtime"] == name] for name in ("default", OPENVINO)}
    assert by_runtime["default"] and by_runtime[OPENVINO]  # candidates from both
    # what each session kept proves where it ran: the default wheel has no OpenVINO; OpenVINO's build used it
    assert all(c["providers_used"] == [CPU] for c in by_runtime["default"])
    # OpenVINO's candidates whose session was opened (on a busy machine, one may then be too slow to time)
    opened = [c for c in across["candidates"] if c["settings"]["providers"][0] == OV and c["providers_used"]]
    tried = [c for c in opened if c["settings"]["runtime"] == OPENVINO]
    assert tried == opened and tried and all(c["providers_used"] == [OV, CPU] for c in tried)
    assert all(c["provider_nodes"] == {OV: 8, CPU: 1} and c["fell_back"] for c in tried)  # Hardmax on the CPU
    assert "OpenVINO runs 8 of the 9 nodes; the CPU provider runs the other 1." in tried[0]["placement"]
    # OpenVINO keeps its own threads: tried at one thread too, not only left to take every core (where it lost)
    threads = [
        c["settings"]["intra_op_threads"] for c in tried if c["median_ms"] is not None and c["stage"] == "providers"
    ]
    assert 1 in threads, threads
    runtimes = {r["runtime"]: r for r in across["runtimes"]}
    assert set(runtimes) == {"default", OPENVINO} and runtimes[OPENVINO]["onnxruntime"] == "1.24.1"
    assert runtimes[OPENVINO]["best"]["settings"]["runtime"] == OPENVINO
    # the answer names its runtime, and says why that runtime is the one
    assert across["best"]["settings"]["runtime"] in runtimes
    assert across["headline"].startswith(
        ("The runtime default stays: the best on openvino", "The runtime openvino wins")
    )
    assert across["default"]["settings"] == SessionConfig().to_data()


def _candidate(config: SessionConfig, median: float, spread: float, fell_back: bool = False) -> Candidate:
    """A candidate whose 100 calls lie evenly within ``spread`` around ``median``."""
    calls = [median + spread * (k / 99 - 0.5) for k in range(100)]
    result = BenchResult(label="", engine="ort", level="ALL", provider=config.providers[0], threads=0, batch=1,
                         load_ms=0, first_run_ms=0, **timed_fields(calls))  # fmt: skip
    placement = [note(PARTLY, provider="OpenVINO", count=8, total=9, rest=1)] if fell_back else []
    return Candidate(config=config, label="", stage="final", result=result, placement=placement)


def _report(best: Candidate) -> TuneReport:
    default = _candidate(SessionConfig(runtime=best.config.runtime), 2.0, 0.2)
    return TuneReport(
        id="r", model="m", model_id="i", created_at="", default=default, best=best, candidates=[default, best],
        headline=note(NONE_FASTER, count=1), not_tried=[], notes=[], tolerance="", budget_s=2, seconds=2,
        per_sample=False, environment=environment(torch=False),
    )  # fmt: skip


OPENVINO_CONFIG = SessionConfig(runtime=OPENVINO, providers=(OV, CPU))


def _across(
    home_ms: float, rival_ms: float, fell_back: bool = False
) -> tuple[list[TuneReport], list[list[TuneReport]]]:
    """Each runtime's search (the home runtime's best at 2 ms, OpenVINO's at 1 ms, both surely apart) and its best
    timed again twice in turns at ``home_ms`` and ``rival_ms``."""
    home = _report(_candidate(SessionConfig(), 2.0, 0.2))
    rival = _report(_candidate(OPENVINO_CONFIG, 1.0, 0.1, fell_back))
    again = [
        [_report(_candidate(SessionConfig(), home_ms, 2.0))] * 2,
        [_report(_candidate(OPENVINO_CONFIG, rival_ms, 2.0))] * 2,
    ]
    return [home, rival], again


def test_a_runtime_wins_on_its_turns_only_with_its_interval_apart_and_under_strict_never_when_it_fell_back() -> None:
    won = combine(*_across(2.0, 1.0, fell_back=True), strict=False)
    assert (
        won.best.config == OPENVINO_CONFIG
        and won.changed
        and [c.config.runtime for c in won.runtime_bests] == ["default", OPENVINO]
    )
    assert won.best.result is not None and won.best.result.n == 200  # the two turns' calls, pooled
    assert won.headline.values["said"].key == RUNTIME_WON  # type: ignore[union-attr]
    assert say(won.headline).startswith(
        "The runtime openvino wins: OpenVINO, CPU on openvino, median 1 ms (95 % CI "
    ) and "beats ORT defaults, the best on default (2 ms, " in say(won.headline)
    assert "by 50 %; the intervals do not overlap" in say(won.headline)
    assert "then each best timed again in jobs that took turns (default, openvino, openvino, default)" in say(
        won.headline
    )
    refused = combine(*_across(2.0, 1.0, fell_back=True), strict=True)
    assert refused.best.config == SessionConfig() and not refused.changed
    assert "under --strict it is not chosen" in say(refused.headline)
    # the searches, one after the other, found OpenVINO surely faster; timed again in turns, it is not
    kept = combine(*_across(2.0, 1.9), strict=False)
    assert kept.best.config == SessionConfig()
    assert "is 5 % faster than ORT defaults (2 ms, " in say(kept.headline) and "the intervals overlap" in say(
        kept.headline
    )
    assert [c.config.runtime for c in kept.candidates] == ["default", "default", OPENVINO, OPENVINO]
    with using("zh"):
        assert "保留运行时 default" in say(kept.headline)


def test_each_runtime_is_searched_then_the_bests_take_turns_with_the_providers_each_runtime_has(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import core.tune.across

    offered = {"default": [CPU], OPENVINO: [OV, CPU]}
    monkeypatch.setattr(core.tune.across, "_providers_of", offered.__getitem__)
    fp16 = SessionConfig(runtime=OPENVINO, providers=(OV, CPU), variant="fp16")
    found = {"default": _candidate(SessionConfig(intra_op_threads=1), 2.0, 0.2), OPENVINO: _candidate(fp16, 1.0, 0.1)}
    asked: list[TuneRequest] = []

    def tune(request: TuneRequest) -> TuneReport:  # a job on the runtime the request names
        asked.append(request)
        report = _report(found[request.runtime] if request.rematch is None else _candidate(request.rematch, 1.5, 0.2))
        return dataclasses.replace(report, variant_paths={"fp16": f"{request.out_dir}/m.fp16.onnx"})

    model = MeasuredModel(path=str(tmp_path / "m.onnx"), inputs=[])
    request = TuneRequest(model=model, out_dir=str(tmp_path), budget_s=20, providers=[OV])
    report = tune_across(request, ["default", OPENVINO], tune)
    searches, turns = asked[:2], asked[2:]
    assert [(r.runtime, r.providers, r.budget_s, r.rematch) for r in searches] == [
        ("default", [CPU], 7.0, None),
        (OPENVINO, [OV], 7.0, None),  # 70 % of the budget, shared
    ]
    assert [(r.runtime, r.rematch, r.budget_s) for r in turns] == [
        ("default", found["default"].config, 1.5), (OPENVINO, fp16, 1.5), (OPENVINO, fp16, 1.5),
        ("default", found["default"].config, 1.5),
    ]  # fmt: skip
    assert turns[1].model.path == f"{tmp_path}/{OPENVINO}/m.fp16.onnx"  # the variant the search made, read again
    assert turns[0].model.path == model.path and len({r.out_dir for r in asked}) == 6  # each job its own folder
    assert [c.result.n for c in report.runtime_bests if c.result] == [200, 200]  # each best on its two turns


@pytest.mark.parametrize("strict", [False, True])
def test_strict_within_one_runtime_measures_a_configuration_that_fell_back_but_never_chooses_it(
    strict: bool, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """One runtime's search, where one thread is surely faster (four times) but its provider left a node to the CPU
    provider: chosen without --strict; under it, measured and shown, never chosen (in its stage, nor in the final
    round), and a note names it. The session's placement and its timings are made up: the choice is what is tested."""
    import core.tune.sessions
    import core.tune.tuner
    from core.tune import run_tune
    from core.tune.words import STRICT_LEFT

    def placed(candidate: Candidate, session: object) -> None:  # one thread "fell back"
        if candidate.config.intra_op_threads == 1:
            candidate.placement = [note(PARTLY, provider="OpenVINO", count=2, total=3, rest=1)]

    def result_of(config: Any) -> BenchResult:  # one thread: 0.5 ms; every other configuration 2 ms
        median = 0.5 if config.threads == 1 else 2.0
        calls = [median * (0.95 + 0.1 * k / 99) for k in range(100)]
        said = {"label": config.label, "engine": "ort", "level": config.level, "provider": config.provider}
        return BenchResult(**said, threads=config.threads, batch=1, load_ms=0, first_run_ms=0, **timed_fields(calls))

    monkeypatch.setattr(core.tune.sessions, "placed", placed)
    monkeypatch.setattr(core.tune.tuner, "result_of", result_of)
    model = builders.write(builders.mlp_model(), tmp_path / "mlp.onnx")
    plan = [BenchInput(name="x", dtype="float32", shape=[1, 64], batch_axis=None)]
    request = TuneRequest(model=MeasuredModel(path=str(model), inputs=plan), out_dir=str(tmp_path), budget_s=1.5,
                          variants=[], strict=strict)  # fmt: skip
    report = run_tune(request)
    one = [c for c in report.candidates if c.config.intra_op_threads == 1 and c.stage == "threads"]
    assert one and one[0].measured and one[0].fell_back  # measured and shown either way
    kept = 0 if strict else 1
    later = [c for c in report.candidates if c.stage == "level"]  # the stages after it start from its winner
    assert later and all(c.config.intra_op_threads == kept for c in later)
    assert report.best.config.intra_op_threads == kept
    left = [n for n in report.notes if n.key == STRICT_LEFT]
    assert bool(left) is strict and (not strict or "intra-op 1" in say(left[0]))
