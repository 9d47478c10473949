"""Deploy: the generated server's folder, its app (through FastAPI's TestClient, and started for real by the load
test), the tuned session options, the Triton configuration, and a load test saved as a kind of run."""

from __future__ import annotations

import io
import json
import math
import zipfile
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
from fastapi.testclient import TestClient
from google.protobuf import text_format

from core.deploy import DeployRequest, LoadResult, LoadtestReport
from core.deploy.saved import as_run
from core.deploy.server import generate_server, pbtxt_string
from core.deploy.session import read_tuned
from core.errors import SessionConfigError
from core.runtime.runs import LoadtestRun
from core.runtime.session_config import SessionConfig
from core.store import Store
from tests.builders import mixed_inputs_model, mlp_model, relu_model, write
from tests.cli import cli
from tests.reports import made_environment

MACHINE = made_environment()
TUNED = SessionConfig(intra_op_threads=3, execution_mode="parallel", level="disable")


def served_app(folder: Path) -> Any:
    """The generated app.py's ``app``, imported from its folder as uvicorn would (``app:app``)."""
    return served_module(folder).app


def served_module(folder: Path) -> Any:
    """The generated app.py as a module."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"served_{abs(hash(str(folder)))}", folder / "app.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the model, the server folder Deploy wrote for it with TUNED, zipped)."""
    root = tmp_path_factory.mktemp("deploy")
    model = write(mixed_inputs_model(), root / "mixed.onnx")
    report = generate_server(DeployRequest(model=str(model), out_dir=str(root / "out"), tuned=TUNED))
    return model, Path(report.out_dir)


def test_the_folder_holds_the_app_the_model_its_options_pins_a_dockerfile_a_readme_and_triton(
    mixed: tuple[Path, Path],
) -> None:
    _model, out = mixed
    names = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert names == [
        "Dockerfile", "README.md", "answers.py", "app.py", "generation.py", "graph.py", "model.onnx", "providers.json",
        "requirements.txt", "session.json", "signature.json", "triton/mixed/1/model.onnx", "triton/mixed/config.pbtxt",
    ]  # fmt: skip
    pins = (out / "requirements.txt").read_text().splitlines()
    assert pins == [
        *(f"{p}=={metadata.version(p)}" for p in ("fastapi", "uvicorn", "onnxruntime", "numpy", "msgspec")),
        f'uvloop=={metadata.version("uvloop")}; sys_platform != "win32"',  # uvicorn's fast parts, with uvloop's marker
        f"httptools=={metadata.version('httptools')}",
    ]
    session = json.loads((out / "session.json").read_text())  # plain JSON: the server cannot import core
    assert session == TUNED.to_data() and SessionConfig.from_data(session) == TUNED
    config = (out / "triton" / "mixed" / "config.pbtxt").read_text()
    assert 'backend: "onnxruntime"' in config and "optimization { graph { level: 2 } }" in config  # DISABLE_ALL
    assert 'key: "intra_op_thread_count" value: { string_value: "3" }' in config
    assert 'key: "execution_mode" value: { string_value: "1" }' in config  # parallel
    assert 'name: "input_ids"\n    data_type: TYPE_INT64\n    dims: [ -1, -1 ]' in config
    with zipfile.ZipFile(out.parent / "server.zip") as zf:
        assert sorted(zf.namelist()) == [f"server/{n}" for n in names]


def test_the_app_answers_as_onnx_runtime_does_in_process_in_json_and_npz(mixed: tuple[Path, Path]) -> None:
    model, out = mixed
    ids, mask, scale = np.array([[1, 2, 3]]), np.array([[True, False, True]]), np.array([0.5], dtype=np.float32)
    expected = ort.InferenceSession(str(model)).run(None, {"input_ids": ids, "mask": mask, "scale": scale})[0]
    with TestClient(served_app(out)) as client:
        health = client.get("/health").json()
        assert health["status"] == "ok" and [i["name"] for i in health["inputs"]] == ["input_ids", "mask", "scale"]
        body = {"inputs": {"input_ids": ids.tolist(), "mask": mask.tolist(), "scale": scale.tolist()}}
        answer = client.post("/predict", json=body)
        assert answer.status_code == 200
        np.testing.assert_array_equal(np.asarray(answer.json()["outputs"]["out"], dtype=np.float32), expected)
        npz = io.BytesIO()
        np.savez(npz, input_ids=ids, mask=mask, scale=scale)
        headers = {"content-type": "application/x-npz", "accept": "application/x-npz"}
        answer = client.post("/predict", content=npz.getvalue(), headers=headers)
        np.testing.assert_array_equal(np.load(io.BytesIO(answer.content))["out"], expected)


@pytest.mark.parametrize(
    ("inputs", "status", "said"),
    [
        ({"input_ids": [[1]], "mask": [[True]]}, 422, "missing ['scale']"),
        ({"input_ids": [[1]], "mask": [[True]], "scale": [1.0], "x": [1]}, 422, "unknown ['x']"),
        ({"input_ids": [[1.5]], "mask": [[True]], "scale": [1.0]}, 422, "takes whole numbers (int64)"),
        ({"input_ids": [[1]], "mask": [[1]], "scale": [1.0]}, 422, "takes booleans"),
        ({"input_ids": [[1]], "mask": [[True]], "scale": [1.0, 2.0]}, 422, "has shape [2]; the model takes [1]"),
        ({"input_ids": [[1], [1, 2]], "mask": [[True]], "scale": [1.0]}, 422, "nested lists of equal lengths"),
        ({"input_ids": "one", "mask": [[True]], "scale": [1.0]}, 422, "must be numbers"),
    ],
)
def test_wrong_names_dtypes_and_shapes_are_answered_4xx_with_what_the_model_takes(
    mixed: tuple[Path, Path], inputs: dict[str, Any], status: int, said: str
) -> None:
    with TestClient(served_app(mixed[1])) as client:
        answer = client.post("/predict", json={"inputs": inputs})
    assert answer.status_code == status and said in answer.json()["detail"]


def test_bodies_that_are_not_what_they_say_or_too_large_are_refused(
    mixed: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    module = served_module(mixed[1])
    monkeypatch.setattr(module, "MAX_BODY", 16)
    with TestClient(module.app) as client:
        too_large = client.post("/predict", content=b"{" * 17, headers={"content-type": "application/json"})
        assert too_large.status_code == 413
        assert client.post("/predict", content=b"{", headers={"content-type": "application/json"}).status_code == 400
        assert client.post("/predict", content=b"x", headers={"content-type": "text/plain"}).status_code == 415
        npy = client.post("/predict", content=b"x", headers={"content-type": "application/x-npy"})
        assert npy.status_code == 415 and "send an .npz" in npy.json()["detail"]  # three inputs


def test_an_npy_body_serves_a_one_input_model_and_must_have_its_dtype(tmp_path: Path) -> None:
    model = write(relu_model(), tmp_path / "relu.onnx")
    out = Path(generate_server(DeployRequest(model=str(model), out_dir=str(tmp_path / "o"), zip=False)).out_dir)
    x = np.array([[-1.0, 2.0, -3.0, 4.0]], dtype=np.float32)
    with TestClient(served_app(out)) as client:
        buffer = io.BytesIO()
        np.save(buffer, x)
        answer = client.post("/predict", content=buffer.getvalue(), headers={"content-type": "application/x-npy"})
        assert answer.json()["outputs"]["y"] == [[0.0, 2.0, 0.0, 4.0]]
        buffer = io.BytesIO()
        np.save(buffer, x.astype(np.float64))
        answer = client.post("/predict", content=buffer.getvalue(), headers={"content-type": "application/x-npy"})
        assert answer.status_code == 422 and ".astype('float32')" in answer.json()["detail"]


def test_outputs_json_cannot_hold_are_answered_null_and_counted_and_kept_as_they_are_in_npz(tmp_path: Path) -> None:
    """Strict JSON both ways: a log of 0 and of -1 (-inf, NaN) is answered as null, counted, never as NaN."""
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])
    graph = helper.make_graph([helper.make_node("Log", ["x"], ["y"])], "log", [x], [y])
    model = write(helper.make_model(graph, opset_imports=[helper.make_operatorsetid("", 17)]), tmp_path / "log.onnx")
    out = Path(generate_server(DeployRequest(model=str(model), out_dir=str(tmp_path / "o"), zip=False)).out_dir)
    body = {"inputs": {"x": [[1.0, 0.0, -1.0]]}}
    with TestClient(served_app(out)) as client:
        answer = client.post("/predict", json=body)
        npz = client.post("/predict", json=body, headers={"accept": "application/x-npz"})

    def refuse(constant: str) -> None:
        raise ValueError(constant)

    strict = json.loads(answer.content, parse_constant=refuse)  # no NaN, no Infinity: JSON as RFC 8259 writes it
    assert strict["outputs"] == {"y": [[0.0, None, None]]} and strict["non_finite"] == {"y": 2}
    assert "application/x-npz" in strict["note"]
    exact = np.load(io.BytesIO(npz.content))["y"]
    assert exact[0, 1] == -np.inf and np.isnan(exact[0, 2])


def test_short_calls_run_on_the_event_loop_and_long_ones_in_a_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = write(relu_model(), tmp_path / "relu.onnx")
    module = served_module(
        Path(generate_server(DeployRequest(model=str(model), out_dir=str(tmp_path / "o"), zip=False)).out_dir)
    )
    handed: list[object] = []
    threadpool = module.run_in_threadpool

    async def counted(function: Any, *args: Any) -> Any:
        handed.append(function)
        return await threadpool(function, *args)

    monkeypatch.setattr(module, "run_in_threadpool", counted)
    body = {"inputs": {"x": [[-1.0, 2.0, -3.0, 4.0]]}}
    with TestClient(module.app) as client:
        assert client.post("/predict", json=body).json()["outputs"]["y"] == [[0.0, 2.0, 0.0, 4.0]]
        assert len(handed) == 1 and module.state["typical_s"] > 0  # the first to a thread: nothing was known yet
        # a relu takes microseconds; one call on a busy machine can take longer than the line, so its typical time
        # is set here rather than measured
        module.state["typical_s"] = module.INLINE_BELOW_S / 10
        assert client.post("/predict", json=body).json()["outputs"]["y"] == [[0.0, 2.0, 0.0, 4.0]]
        assert len(handed) == 1  # on the event loop
        options = module.state["session"].get_session_options()  # made as Tune measured it
        assert options.get_session_config_entry("session.force_spinning_stop") == "1"
        module.state["typical_s"] = 0.01  # a model whose calls take 10 ms
        client.post("/predict", json=body)
        assert len(handed) == 2
        wrong = client.post("/predict", json={"inputs": {"x": [[1.0, 2.0]]}})  # refused before the model runs
        assert wrong.status_code == 422 and "has shape [1, 2]" in wrong.json()["detail"]


def test_a_tuned_configuration_is_read_from_tunes_json_and_bad_keys_are_named() -> None:
    assert read_tuned(json.dumps({"best": {"intra_op_threads": 2}})) == SessionConfig(intra_op_threads=2)
    with pytest.raises(SessionConfigError, match="Unknown session configuration key threads; the keys are"):
        read_tuned('{"threads": 2}')
    with pytest.raises(SessionConfigError, match="level must be one of"):
        read_tuned('{"level": "max"}')
    with pytest.raises(SessionConfigError, match="providers must name at least one execution provider"):
        read_tuned('{"providers": "CPUExecutionProvider"}')  # a list, not a string read letter by letter


def test_what_tune_json_prints_is_read_as_its_best_configuration() -> None:
    from core.tune import Candidate
    from core.tune.saved import candidate_data

    chosen = SessionConfig(intra_op_threads=2, level="extended", variant="fp16", batch=4)
    printed = {"id": "run", "best": candidate_data(Candidate(config=chosen, label="intra 2", stage="final"))}
    assert read_tuned(json.dumps(printed)) == chosen  # python -m core tune --json: its best's settings
    assert read_tuned(chosen.to_json()) == chosen  # tune -o: the configuration itself


def test_names_go_into_triton_config_as_escaped_strings_that_read_back() -> None:
    for name in ['"); import os #', "a\nb", "方向", "back\\slash"]:
        literal = pbtxt_string(name)
        assert "\n" not in literal
        assert text_format.Tokenizer([literal]).ConsumeString() == name


def test_a_load_test_is_saved_as_a_kind_of_run_with_its_percentiles(tmp_path: Path) -> None:
    result = LoadResult(
        concurrency=4, requests=100, errors=1, rps=250.0, p50_ms=3.0, p90_ms=5.0, p99_ms=9.0, p50_low_ms=2.8,
        p50_high_ms=3.2, p90_low_ms=4.5, p90_high_ms=5.5, p99_low_ms=8.0, p99_high_ms=11.0, checked=5, max_abs_diff=0.0,
    )  # fmt: skip
    report = LoadtestReport(
        id="lt1", model="relu.onnx", model_id="abc", created_at="2026-12-02T06:00:00+00:00", target="",
        started_app=True, body="json", duration_s=2.0, results=[result], in_process_p50_ms=0.02,
        in_process_low_ms=0.019, in_process_high_ms=0.021, in_process_calls=500, session=read_tuned("{}"),
        environment=MACHINE, notes=[], seconds=5.0,
    )  # fmt: skip
    store = Store(f"sqlite:///{tmp_path / 'h.sqlite'}")
    store.save(as_run(report))
    saved = store.load("lt1")
    assert isinstance(saved, LoadtestRun) and saved.concurrency == [4] and saved.errors == {"4": 1}
    http = next(r for r in saved.results if r.engine == "http")
    assert (http.label, http.median_ms, http.p99_ms, http.throughput) == ("HTTP · 4 concurrent", 3.0, 9.0, 250.0)
    assert saved.headline.english().startswith("Served over HTTP: p50 3 ms at concurrency 4 against 0.02 ms in-process")
    in_process = next(r for r in saved.results if r.engine == "ort")
    assert in_process.median_ms == 0.02 and math.isnan(in_process.p99_ms)


def test_the_commands_write_a_server_start_it_for_real_and_check_its_outputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("WORKBENCH_HISTORY_URL", "")
    model = write(relu_model(), tmp_path / "relu.onnx")
    done = cli("deploy", str(model), "-o", str(tmp_path / "server"))
    assert done.returncode == 0, done.stderr
    again = cli("deploy", str(model), "-o", str(tmp_path / "server"))
    assert again.returncode == 2 and "is not an empty folder" in again.stderr
    done = cli("loadtest", str(tmp_path / "server"), "--model", str(model), "--concurrency", "1,2", "--duration", "0.5",
               "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert [r["concurrency"] for r in report["results"]] == [1, 2]
    for r in report["results"]:
        assert r["errors"] == 0 and r["requests"] > 0 and r["rps"] > 0 and r["checked"] > 0
        assert r["max_abs_diff"] == 0.0  # the server's outputs are ONNX Runtime's in-process
        assert r["p50_low_ms"] <= r["p50_ms"] <= r["p50_high_ms"] and r["p50_ms"] <= r["p99_ms"]
    saved = cli("history", "--json")
    assert [row["id"] for row in json.loads(saved.stdout)] == [report["id"]]


def test_the_charts_draw_latency_and_throughput_against_concurrency_with_in_process_beside() -> None:
    from ui.serve_view import latency_load_figure, load_frame, throughput_figure

    results = [
        LoadResult(
            concurrency=c, requests=50, errors=0, rps=100.0 * c, p50_ms=2.0 * c, p90_ms=3.0 * c, p99_ms=4.0 * c,
            p50_low_ms=1.9 * c, p50_high_ms=2.1 * c, p90_low_ms=2.8 * c, p90_high_ms=3.2 * c, p99_low_ms=3.5 * c,
            p99_high_ms=5.0 * c, checked=5, max_abs_diff=0.0,
        )
        for c in (1, 4)
    ]  # fmt: skip
    report = LoadtestReport(
        id="lt2", model="<b>m</b>", model_id="", created_at="2026-12-02T06:00:00+00:00", target="", started_app=True,
        body="json", duration_s=1.0, results=results, in_process_p50_ms=0.5, in_process_low_ms=0.4,
        in_process_high_ms=0.6, in_process_calls=100, session=read_tuned("{}"), environment=MACHINE, notes=[],
        seconds=1.0,
    )  # fmt: skip
    frame = load_frame(report)
    latency = latency_load_figure(frame)
    assert [list(t.y) for t in latency.data] == [[2.0, 8.0], [3.0, 12.0], [4.0, 16.0], [0.5, 0.5]]
    assert list(latency.data[0].error_y.array) == pytest.approx([0.1, 0.4])  # p50's interval, above
    # 0.5 ms in-process to 20 ms: every tick written out (a bare "2" beside 0.5 ms read as 2 ms)
    assert list(latency.layout.yaxis.ticktext) == ["0.5", "1", "2", "5", "10", "20"]
    assert latency.data[3].mode == "lines" and latency_load_figure(frame.head(1)).data[3].mode == "markers"
    assert list(throughput_figure(frame).data[0].y) == [100.0, 400.0]


def test_a_tuned_variant_is_served_from_beside_the_tuned_file_or_made_again_as_tune_made_it(tmp_path: Path) -> None:
    """Tune chose dynamic INT8: the server serves that variant, never the float32 model the command was given."""
    import onnx

    model = write(mlp_model(), tmp_path / "mlp.onnx")
    tuned = tmp_path / "tuned.json"
    tuned.write_text(json.dumps({"intra_op_threads": 1, "variant": "dynamic-qint8", "batch": 8}))

    done = cli("deploy", str(model), "--tuned", str(tuned), "-o", str(tmp_path / "made"))  # made again
    assert done.returncode == 0, done.stderr
    served = onnx.load(str(tmp_path / "made" / "model.onnx"))
    assert any(n.op_type in ("MatMulInteger", "DynamicQuantizeLinear") for n in served.graph.node)
    readme = (tmp_path / "made" / "README.md").read_text()
    assert "Dynamic INT8" in readme and "made again from `mlp.onnx`" in readme and "at batch 8" in readme

    beside = tmp_path / "tuned.dynamic-qint8.onnx"  # what tune -o writes beside its JSON
    beside.write_bytes((tmp_path / "made" / "model.onnx").read_bytes())
    done = cli("deploy", str(model), "--tuned", str(tuned), "-o", str(tmp_path / "beside"))
    assert done.returncode == 0, done.stderr
    assert "serving the dynamic-qint8 variant Tune chose" in done.stdout
    assert (tmp_path / "beside" / "model.onnx").read_bytes() == beside.read_bytes()

    tuned.write_text(json.dumps({"variant": "static-qdq-minmax"}))
    refused = cli("deploy", str(model), "--tuned", str(tuned), "-o", str(tmp_path / "static"))
    assert refused.returncode != 0 and "which Tune does not make" in refused.stderr


def test_a_json_body_that_costs_more_than_the_call_says_to_send_npy_and_reads_in_chinese() -> None:
    from core.deploy.loadtest import JSON_COSTS, json_costs
    from core.i18n import using
    from core.notes import say

    def at(p50_ms: float) -> list[LoadResult]:
        return [
            LoadResult(
                concurrency=c, requests=50, errors=0, rps=10.0, p50_ms=p50_ms * c, p90_ms=p50_ms * c, p99_ms=p50_ms * c,
                p50_low_ms=p50_ms, p50_high_ms=p50_ms, p90_low_ms=p50_ms, p90_high_ms=p50_ms, p99_low_ms=p50_ms,
                p99_high_ms=p50_ms, checked=1, max_abs_diff=0.0,
            )
            for c in (4, 1)
        ]  # fmt: skip

    image = {"x": np.zeros((1, 3, 224, 224), np.float32)}
    note = json_costs(at(114.0), 8.07, image, npy=False)  # as the job keeps it in the run: a template and values
    assert note is not None and note.key == JSON_COSTS and note.severity == "warning"
    assert note.values["count"] == 150_528 and note.values["concurrency"] == 1
    english = say(note)
    assert english.startswith("HTTP and JSON took 106 ms of the 114 ms at concurrency 1: the input's 150,528 numbers")
    assert ".npy" in english and "--body npy" in english
    with using("zh"):
        chinese = say(note)
    assert "150,528" in chinese and "JSON" in chinese and "took" not in chinese
    assert json_costs(at(114.0), 8.07, image, npy=True) is None  # already .npy
    assert json_costs(at(3.0), 0.5, {"x": np.zeros((1, 4), np.float32)}, npy=False) is None  # HTTP's floor, not JSON
    assert json_costs(at(12.0), 8.0, image, npy=False) is None  # the call costs more than HTTP and JSON
    assert json_costs(at(114.0), 8.07, {**image, "y": np.zeros(3, np.float32)}, npy=False) is None  # .npy: one input


def test_a_servers_own_words_in_a_load_tests_note_are_shown_as_it_wrote_them() -> None:
    """A failed request's text comes from the server: kept as a value of the note, it is said as written inside the
    sentence, even where it repeats the template's own words or holds a placeholder. Found again with the template's
    regular expression, as an earlier version did, it was taken apart and rewritten as a Chinese sentence of its own
    ("并发 3 时 2 个请求中有 HTTP 500: 1 个失败")."""
    from core.deploy.loadtest import ERRORS
    from core.i18n import using
    from core.notes import say, warning

    example = "HTTP 500: 1 of 2 requests at concurrency 3 failed, e.g. {count}"
    said = warning(ERRORS, count=5, total=9, concurrency=4, example=example)
    with using("zh"):
        chinese = say(said)
    assert chinese == "并发 4 时 9 个请求中有 5 个失败，例如 " + example
    assert say(said) == "5 of 9 requests at concurrency 4 failed, e.g. " + example


def test_a_model_with_external_data_in_a_folder_reached_through_a_link_is_copied_into_the_server(
    tmp_path: Path,
) -> None:
    # a job's worker sees its inputs through links (the tuned variant's folder): the data file is named where it was
    # found, not where the link leads
    from core.deploy.server import _copy_model
    from tests.builders import chain_model, save_with_external_data

    real = save_with_external_data(chain_model(4), tmp_path / "real")
    (tmp_path / "seen").symlink_to(tmp_path / "real")
    _copy_model(tmp_path / "seen" / real.name, tmp_path / "server", "model.onnx")
    assert sorted(p.name for p in (tmp_path / "server").iterdir()) == ["model.onnx", "model.onnx.data"]
    ort.InferenceSession(str(tmp_path / "server" / "model.onnx"), providers=["CPUExecutionProvider"])
