"""The model in the visitor's browser (core.browser): what is sent (inputs from the plan's seed, the server's
outputs, the size limit), a browser's result as a saved run (statistics recomputed here, hostile files refused),
the committed ONNX Runtime Web bundle matching its sources, and every word of the runner in the catalog."""

from __future__ import annotations

import dataclasses
import json
import math
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from core.browser import BrowserRequest, browser_payload, browser_report
from core.browser.page import PAGE_WORDS, page_words
from core.browser.payload import RUNTIME_DIR
from core.browser.result import COARSE, FALLBACK, MISMATCH, ONE_THREAD
from core.errors import BrowserBenchError
from core.i18n import using
from core.model.inputs import make_inputs, plan_inputs
from core.model.intake import IntakeRequest, describe_files
from core.model.measured import MeasuredModel
from core.notes import note, say
from core.runtime.stats import summarize
from core.settings import load_settings
from tests import builders
from tests.bundles import source_hash

COMPONENT = RUNTIME_DIR.parent


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> MeasuredModel:
    path = builders.write(builders.mixed_inputs_model(), tmp_path_factory.mktemp("browser") / "mixed.onnx")
    return MeasuredModel(path=str(path), inputs=plan_inputs(describe_files(IntakeRequest(paths=[str(path)]))))


def _result(**changes: Any) -> dict[str, Any]:
    calls = [4.0, 5.0, 6.0, 5.5, 4.5, 100.0]
    result = {
        "format": "onnx-workbench-browser-result", "model": "mixed", "model_id": "ab" * 32, "backend": "wasm",
        "median_ms": 1.0, "ci_ms": [0.5, 2.0], "calls_ms": calls, "max_abs_diff": 1e-7, "load_ms": 12.0,
        "first_call_ms": 3.0, "warmup": 2, "created_at": "2026-12-02T05:54:09Z",
        "inputs": {"x": {"dtype": "float32", "shape": [1, 4], "values": "normal"}},
        "environment": {"browser": "Firefox", "browser_version": "140.0", "os": "Windows", "cores": 8, "simd": True,
                        "threads": 1, "cross_origin_isolated": False, "gpu_adapter": "", "gpu_missing": "none",
                        "fallback": "none", "ort_web": "1.30.0", "clock_step_ms": 0.1},
    }  # fmt: skip
    return {**result, **changes}


def test_the_browser_is_sent_the_plans_inputs_from_its_seed_and_the_servers_outputs(mixed: MeasuredModel) -> None:
    payload = browser_payload(BrowserRequest(model=mixed, seed=3))
    made = make_inputs(mixed.inputs, 1, 3)
    assert [(t.name, t.dtype, t.shape) for t in payload.inputs] == [
        ("input_ids", "int64", [1, 128]),
        ("mask", "bool", [1, 128]),
        ("scale", "float32", [1]),
    ]
    for tensor in payload.inputs:
        assert tensor.data == made[tensor.name].tobytes()
    (out,) = payload.reference
    expected = made["input_ids"].astype(np.float32) * made["mask"] * made["scale"]
    assert np.array_equal(np.frombuffer(out.data, "<f4").reshape(out.shape), expected)
    assert payload.model == Path(mixed.path).read_bytes() and payload.plan_inputs["mask"]["dtype"] == "bool"


def test_a_model_with_external_data_is_sent_as_one_buffer(tmp_path: Path) -> None:
    path = builders.save_with_external_data(builders.chain_model(6), tmp_path)
    model = MeasuredModel(path=str(path), inputs=plan_inputs(describe_files(IntakeRequest(paths=[str(path)]))))
    payload = browser_payload(BrowserRequest(model=model))
    import onnx

    loaded = onnx.load_from_string(payload.model)
    assert all(t.data_location != onnx.TensorProto.EXTERNAL for t in loaded.graph.initializer)
    assert len(payload.model) > path.stat().st_size


def test_a_model_over_browser_model_mb_is_refused_before_anything_is_sent(mixed: MeasuredModel) -> None:
    with pytest.raises(BrowserBenchError, match=r"up to 0 MB .*browser_model_mb.*nothing was sent"):
        browser_payload(BrowserRequest(model=mixed, limit_mb=0))


def test_browser_model_mb_is_200_locally_and_50_hosted() -> None:
    assert load_settings(environ={}).browser_model_mb == 200
    assert load_settings(environ={"WORKBENCH_MODE": "hosted"}).browser_model_mb == 50


def test_a_browsers_result_is_a_run_whose_statistics_are_computed_here_from_its_call_times() -> None:
    report = browser_report(_result())
    (result,) = report.results
    summary = summarize([4.0, 5.0, 6.0, 5.5, 4.5, 100.0])
    assert result.median_ms == summary.median == 5.25  # not the 1.0 the file claims
    assert (result.median_low_ms, result.median_high_ms, result.p99_ms) == (
        summary.median_low,
        summary.median_high,
        summary.p99,
    )
    assert result.label == "ORT Web WASM" and result.max_abs_diff == 1e-7 and result.load_ms == 12.0
    assert report.environment.place == "Firefox 140 · Windows (browser)"
    assert report.environment.physical_cores == 8 and report.environment.versions["onnxruntime-web"] == "1.30.0"
    assert say(report.headline) == "ORT Web WASM: median 5.25 ms per call"
    assert report.created_at == "2026-12-02T05:54:09+00:00" and report.settings["inputs"]["x"]["shape"] == [1, 4]
    assert report.notes == [note(ONE_THREAD), note(FALLBACK)]  # no coarse clock: 5.25 ms is 52 steps of 0.1 ms
    assert "one thread" in say(report.notes[0]) and "WebGPU" in say(report.notes[1])
    coarse = browser_report(_result(calls_ms=[0.2, 0.3, 0.2]))
    assert coarse.notes[-1] == note(COARSE, step=0.1, median=0.2)
    assert "steps of 0.1 ms, and the median call took 0.2 ms" in say(coarse.notes[-1])


def test_a_browser_runs_words_are_said_in_its_readers_language() -> None:
    """The run keeps its notes, headline and threads as data: a Chinese reader of the history reads them in
    Chinese (the threads note was an English sentence a run kept)."""
    report = browser_report(_result())
    assert report.environment.threads_note is not None
    with using("zh"):
        assert say(report.environment.threads_note) == "ONNX Runtime Web，1 个线程"
        assert say(report.headline) == "ORT Web WASM：每次调用中位数 5.25 毫秒"
        assert "one thread" not in say(report.notes[0])  # the note in Chinese too
    assert say(report.environment.threads_note) == "ONNX Runtime Web on 1 thread"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([1, 2], "not a browser benchmark's result"),
        (_result(format="something"), "not a browser benchmark's result"),
        (_result(calls_ms=[]), "no call times"),
        (_result(calls_ms="1,2"), "no call times"),
        (_result(calls_ms=[1.0, "2"]), "not a time"),
        (_result(calls_ms=[1.0, -1.0]), "not a time"),
        (_result(calls_ms=[True]), "not a time"),
        (_result(calls_ms=[0.5] * 100_001), "no call times"),
        (_result(load_ms="fast"), "load_ms is not a non-negative number"),
        (_result(model=["x"]), "model is not text"),
    ],
)
def test_a_result_file_that_is_not_one_is_refused_saying_so(data: Any, message: str) -> None:
    with pytest.raises(BrowserBenchError, match=message):
        browser_report(data)


def test_text_from_a_result_file_is_cut_and_cleaned_and_a_size_mismatch_is_infinite() -> None:
    report = browser_report(
        _result(model="m\x1b[31m" + "x" * 500, model_id="../etc", outputs_differ_in_size=True, max_abs_diff=None)
    )
    assert report.model.startswith("m?[31m") and len(report.model) == 200 and report.model_id == ""
    assert report.results[0].max_abs_diff == math.inf and note(MISMATCH) in report.notes


def test_the_committed_bundle_is_built_from_the_sources_and_pins_onnxruntime_web() -> None:
    first = (RUNTIME_DIR / "bench.js").read_text(encoding="utf-8").split("\n", 1)[0]
    assert first == f"/* onnx-workbench browser bench; sources sha256 {source_hash(COMPONENT)} */", (
        "ui/browser_component/dist is older than its sources: run `make browser-bundle` and commit dist/"
    )
    lock = json.loads((COMPONENT / "package-lock.json").read_text())
    assert lock["packages"]["node_modules/onnxruntime-web"]["version"] == "1.30.0"
    assert '"1.30.0"' in (RUNTIME_DIR / "ort.wasm.mjs").read_text(encoding="utf-8")
    for name in ("ort.wasm.wasm.gz", "ort.webgpu.wasm.gz"):
        assert (RUNTIME_DIR / name).read_bytes()[:2] == b"\x1f\x8b"  # gzip, unpacked in the browser


_LITERAL = r'"(?:[^"\\]|\\.)*"'
# a say("…" + "…") call, or a stage's words (STAGES in src/page.js)
_SAID = re.compile(
    rf"(?:say\(|^\s+(?:runtime|session|first|warmup|calls): )\s*({_LITERAL}(?:\s*\+\s*{_LITERAL})*)", re.M
)


def test_every_word_the_runner_shows_is_in_the_catalog_list_and_translated() -> None:
    said = set()
    for source in (COMPONENT / "src").glob("*.js"):
        for literal in _SAID.findall(source.read_text(encoding="utf-8")):
            said.add("".join(json.loads(part) for part in re.findall(_LITERAL, literal)))
    assert len(said) > 30 and said <= set(PAGE_WORDS), sorted(said - set(PAGE_WORDS))
    bundle = (RUNTIME_DIR / "bench.js").read_text(encoding="utf-8")
    assert [word for word in PAGE_WORDS if word not in bundle] == []
    with using("zh"):
        assert set(page_words()) == set(PAGE_WORDS)


def test_a_browser_run_is_saved_and_shown_on_the_dashboard_beside_the_server(tmp_path: Path) -> None:
    from core.store.dashboard import latest_per_model_machine
    from core.store.history import Store

    store = Store(f"sqlite:///{tmp_path / 'history.sqlite'}")
    browser = browser_report(_result())
    server = browser_report(_result())
    server = dataclasses.replace(server, environment=dataclasses.replace(server.environment, machine="server-1"))
    for report in (browser, server):
        store.save(report)
    loaded = store.load(browser.id)
    assert loaded.results[0].samples_ms == [4.0, 5.0, 6.0, 5.5, 4.5, 100.0]
    rows = latest_per_model_machine([store.load(browser.id), store.load(server.id)])
    assert [(r.machine, r.fastest, r.fastest_ms) for r in rows] == [
        ("Firefox 140 · Windows (browser)", "ORT Web WASM", 5.25),
        ("server-1", "ORT Web WASM", 5.25),
    ]


def test_history_imports_a_browsers_result_file_and_refuses_one_that_is_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.cli import cli

    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    good = tmp_path / "mixed-browser.json"
    good.write_text(json.dumps(_result()))
    done = cli("history", "--import", str(good), "--json")
    assert done.returncode == 0, done.stderr
    (run,) = json.loads(done.stdout[done.stdout.index("[") :])
    assert (run["model"], run["machine"], run["headline"]) == (
        "mixed",
        "Firefox 140 · Windows (browser)",
        "ORT Web WASM: median 5.25 ms per call",
    )
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "onnx-workbench-browser-result", "calls_ms": []}')
    refused = cli("history", "--import", str(bad))
    assert refused.returncode == 2 and "no call times" in refused.stderr
    assert cli("history", "--import", str(tmp_path / "none.json")).returncode == 2


@pytest.mark.parametrize(
    ("created_at", "said"),
    [("2999-01-01T00:00:00Z", "2999-01-01 00:00 UTC"), ("2019-06-30T08:00:00Z", "2019-06-30 08:00 UTC")],
    ids=["from-the-future", "before-the-first-run"],
)
def test_an_imported_result_dated_outside_the_historys_bounds_is_refused_naming_its_date_and_the_bounds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, created_at: str, said: str
) -> None:
    """A result dated 2999 would sort first, the "latest" run forever: no run is after its import (a day of clock
    ahead allowed) or before the project's first run."""
    from tests.cli import cli

    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    dated = tmp_path / "dated.json"
    dated.write_text(json.dumps(_result(created_at=created_at)))
    refused = cli("history", "--import", str(dated))
    assert refused.returncode == 2, refused.stdout
    assert said in refused.stderr and "2024-01-01" in refused.stderr and "1 day" in refused.stderr
    assert json.loads(cli("history", "--json").stdout) == []  # nothing saved


def test_an_imported_result_says_it_was_imported_and_when_and_sorts_by_its_own_date(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.cli import cli

    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    last_week = (datetime.now(UTC) - timedelta(days=7)).replace(microsecond=0)
    ahead = datetime.now(UTC) + timedelta(hours=3)  # a device whose clock runs three hours ahead
    for name, when in (("week", last_week), ("ahead", ahead)):
        (tmp_path / f"{name}.json").write_text(json.dumps(_result(model=name, created_at=when.isoformat())))
        assert cli("history", "--import", str(tmp_path / f"{name}.json")).returncode == 0
    before = datetime.now(UTC)
    rows = json.loads(cli("history", "--json").stdout)
    assert [r["model"] for r in rows] == ["ahead", "week"] and {r["kind"] for r in rows} == {"browser"}
    week = rows[1]
    assert week["created_at"] == last_week.isoformat(timespec="seconds")  # its own date, not the import's
    assert before - timedelta(minutes=5) < datetime.fromisoformat(week["imported_at"]) <= before
    assert datetime.fromisoformat(rows[0]["created_at"]) <= datetime.fromisoformat(rows[0]["imported_at"])  # not ahead
    assert "imported" in cli("history").stdout
