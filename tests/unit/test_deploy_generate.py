"""Deploy for a language model and for a runtime: the generated server streams greedy tokens from POST /generate (the
same ids as ``python -m core generate``), refuses what passes its limits, and is loaded in tokens per second; a
server deployed for the OpenVINO runtime pins its build and runs under that runtime's Python."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from core.deploy import DeployRequest
from core.deploy.server import generate_server
from core.runtime.runtimes import RUNTIMES_DIR
from tests.builders import relu_model, write
from tests.cli import cli
from tests.lm_models import LanguageModel, byte_tokenizer, copy_model, hf_offline, word_tokenizer
from tests.unit.test_deploy import served_module

__all__ = ["hf_offline"]  # the fixture, used in this module

PROMPT = [7, 300, 11, 42, 99]


@pytest.fixture(scope="module")
def lm_server(gpt2_past: LanguageModel, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the GPT-2 with a word tokenizer beside it, the server Deploy wrote for it)."""
    root = tmp_path_factory.mktemp("lm_deploy")
    model = copy_model(gpt2_past.onnx, root / "model")
    word_tokenizer(model.parent / "tokenizer.json")
    report = generate_server(DeployRequest(model=str(model), out_dir=str(root / "out"), zip=False))
    assert report.generate and "tokenizer.json" in report.files and "generation.py" in report.files
    return model, Path(report.out_dir)


def _lines(text: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in text.splitlines()]


def test_generate_streams_the_greedy_ids_core_generate_makes_and_the_text_of_each_token(
    lm_server: tuple[Path, Path],
) -> None:
    model, out = lm_server
    ids = ",".join(map(str, PROMPT))
    done = cli("generate", str(model), "--prompt-ids", ids, "--new", "8", "--runs", "1", "--json")
    assert done.returncode == 0, done.stderr
    expected = json.loads(done.stdout)["tokens"][0]
    with TestClient(served_module(out).app) as client:
        health = client.get("/health").json()["generate"]
        answer = client.post("/generate", json={"prompt_ids": PROMPT, "max_new_tokens": 8, "stop_at_eos": False})
        text = client.post("/generate", json={"prompt": "hello world", "max_new_tokens": 3})
    assert health["vocabulary"] == 512 and health["tokenizer"] and health["max_new_tokens"] == 1024
    assert answer.headers["content-type"] == "application/x-ndjson"
    lines = _lines(answer.text)
    assert [line["token"] for line in lines[:-1]] == expected
    assert lines[-1] == {"done": True, "tokens": 8, "prompt_tokens": 5, "stopped": "length"}
    said = _lines(text.text)
    assert said[-1]["prompt_tokens"] == 2 and all(isinstance(line["text"], str) for line in said[:-1])


@pytest.mark.parametrize(
    ("body", "status", "detail"),
    [
        ({"prompt_ids": PROMPT, "max_new_tokens": 0}, 422, "from 1 to 1,024"),
        ({"prompt_ids": PROMPT, "max_new_tokens": 1025}, 422, "from 1 to 1,024"),
        ({"prompt_ids": [1, 512]}, 422, "token ids from 0 to 511"),
        ({"prompt_ids": [1, 2.5]}, 422, "token ids from 0 to 511"),
        ({"prompt_ids": PROMPT, "prompt": "hello"}, 422, "one of them"),
        ({"prompt_ids": PROMPT, "temperature": 0.7}, 422, "unknown keys ['temperature']"),
        ({"prompt_ids": list(range(8))}, 422, "the prompt is 8 tokens; this server takes 1 to 6"),
        ([1, 2, 3], 422, "must be a JSON object"),
    ],
)
def test_generate_refuses_what_passes_its_limits_saying_them(
    lm_server: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, body: object, status: int, detail: str
) -> None:
    module = served_module(lm_server[1])
    monkeypatch.setattr(module.GENERATE, "max_prompt", 6)
    with TestClient(module.app) as client:
        answer = client.post("/generate", json=body)
    assert answer.status_code == status and detail in answer.json()["detail"]


def test_generate_refuses_a_body_too_large_not_json_or_not_json_typed_and_a_stream_past_the_most_at_once(
    lm_server: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    module = served_module(lm_server[1])
    monkeypatch.setattr(module.GENERATE, "max_body", 64)
    with TestClient(module.app) as client:
        large = client.post("/generate", json={"prompt_ids": list(range(100))})
        nan = client.post("/generate", content=b'{"prompt_ids": [NaN]}', headers={"content-type": "application/json"})
        typed = client.post("/generate", content=b"{}", headers={"content-type": "text/plain"})
        module.GENERATE.streams = module.GENERATE.max_streams  # as many generations as it runs at once
        busy = client.post("/generate", json={"prompt_ids": PROMPT})
        module.GENERATE.streams = 0
        assert client.get("/health").json()["status"] == "ok"
    assert (large.status_code, nan.status_code, typed.status_code) == (413, 400, 415)
    assert busy.status_code == 503 and busy.headers["retry-after"] == "1"


def test_health_answers_while_a_slow_generation_streams(
    lm_server: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading
    import time

    module = served_module(lm_server[1])
    step = module.sys.modules[f"{module.__name__}_generation"].Generation.step

    def slow(self: object) -> int:
        time.sleep(0.05)  # a model of 50 ms a token: 20 tokens take a second
        return int(step(self))

    monkeypatch.setattr(module.sys.modules[f"{module.__name__}_generation"].Generation, "step", slow)
    with TestClient(module.app) as client:
        streamed: list[str] = []
        stream = threading.Thread(
            target=lambda: streamed.append(
                client.post("/generate", json={"prompt_ids": PROMPT, "max_new_tokens": 20}).text
            )
        )
        stream.start()
        time.sleep(0.3)
        start = time.perf_counter()
        health = client.get("/health").json()
        took = time.perf_counter() - start
        stream.join()
    assert health["generate"]["streams"] == 1 and took < 0.3  # answered during the generation, not after it
    assert _lines(streamed[0])[-1]["tokens"] == 20


def test_each_streamed_tokens_text_reads_right_in_chinese_a_character_whole_with_its_last_byte(
    lm_server: tuple[Path, Path], tmp_path: Path
) -> None:
    """Byte-level tokens as Qwen's split a Chinese character in two or three: the text of each is empty until the
    one that completes it, which says the whole character; the pieces make the text."""
    from tokenizers import Tokenizer

    module = served_module(lm_server[1])
    tokenizer = Tokenizer.from_file(str(byte_tokenizer(tmp_path / "tokenizer.json")))
    module.GENERATE.tokenizer = tokenizer
    prompt = tokenizer.encode("hello").ids
    said = []
    for text in ("你好，世界。", "hello world, 语言模型"):
        words = module.GENERATE._words(prompt)
        pieces = [words(token) for token in tokenizer.encode(text).ids]
        assert "".join(pieces) == text and not any("\ufffd" in piece for piece in pieces)
        said.append(pieces)
    assert said[0] == ["你", "好", "，", "", "世", "", "", "界", "。"]  # 世 and 界 are five tokens between them


def test_the_load_test_of_a_language_models_server_measures_tokens_per_second(lm_server: tuple[Path, Path]) -> None:
    model, out = lm_server
    done = cli(
        "loadtest", str(out), "--model", str(model), "--concurrency", "1,2", "--duration", "0.5", "--new-tokens", "6",
        "--json", "--no-save",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["results"] == [] and data["new_tokens"] == 6 and data["prompt_tokens"] == 16
    for row, concurrency in zip(data["tokens"], (1, 2), strict=True):
        assert row["concurrency"] == concurrency and row["errors"] == 0 and row["streams"] >= 1
        assert row["checked"] == row["streams"] and row["mismatched"] == 0  # the tokens of the same loop in-process
        assert row["tokens"] >= 6 * row["streams"] and row["total_tok_s"] > 0 and row["stream_tok_s"] > 0
        assert 0 < row["ttft_p50_ms"] <= row["ttft_p95_ms"] and 0 < row["itl_p50_ms"] <= row["itl_p95_ms"]


OPENVINO = RUNTIMES_DIR / "openvino"


@pytest.mark.skipif(not (OPENVINO / ".ready").is_file(), reason="no OpenVINO runtime here (make runtime-openvino)")
def test_a_server_for_the_openvino_runtime_tune_chose_pins_its_build_and_runs_under_its_python(tmp_path: Path) -> None:
    model = write(relu_model(), tmp_path / "relu.onnx")
    tuned = tmp_path / "tuned.json"  # as Tune writes the configuration it chose on the OpenVINO runtime
    tuned.write_text(json.dumps({"runtime": "openvino", "intra_op_threads": 1}))
    done = cli("deploy", str(model), "-o", str(tmp_path / "server"), "--tuned", str(tuned), "--json")
    assert done.returncode == 0, done.stderr
    server = tmp_path / "server"
    pins = (server / "requirements.txt").read_text().splitlines()
    assert "onnxruntime-openvino==1.24.1" in pins and not any(p.startswith("onnxruntime==") for p in pins)
    providers = json.loads((server / "providers.json").read_text())  # typed options: its device, the tuned threads
    assert providers[0] == ["OpenVINOExecutionProvider", {"device_type": "CPU", "num_of_threads": "1"}]
    assert providers[-1] == ["CPUExecutionProvider", {}]
    assert json.loads((server / "session.json").read_text())["runtime"] == "openvino"
    load = cli(
        "loadtest", str(server), "--model", str(model), "--concurrency", "1", "--duration", "0.5", "--json",
        "--no-save",
    )  # fmt: skip
    assert load.returncode == 0, load.stderr
    data = json.loads(load.stdout)
    assert data["served_providers"][0] == "OpenVINOExecutionProvider"  # the server imported OpenVINO's build
    assert data["results"][0]["requests"] > 0 and data["results"][0]["errors"] == 0
    assert data["results"][0]["max_abs_diff"] < 1e-5


def test_the_load_in_tokens_is_shown_in_words_where_no_stream_finished_and_kept_in_the_history(tmp_path: Path) -> None:
    from core.cli.loadtest import _print
    from core.deploy import LoadtestReport, TokenLoadResult
    from core.deploy.loadtest import headline
    from core.deploy.saved import as_run
    from core.notes import say
    from core.runtime.runs import LoadtestRun
    from core.runtime.session_config import SessionConfig
    from core.store import Store
    from tests.reports import made_environment
    from ui.serve_tokens_view import _table, token_frame, tokens_figure

    nan = float("nan")
    tokens = [
        TokenLoadResult(
            concurrency=1, streams=4, tokens=128, errors=0, ttft_p50_ms=12.0, ttft_p95_ms=15.0, itl_p50_ms=2.0,
            itl_p95_ms=3.0, stream_tok_s=480.0, total_tok_s=400.0, checked=4, mismatched=0,
        ),
        TokenLoadResult(
            concurrency=4, streams=0, tokens=0, errors=3, ttft_p50_ms=nan, ttft_p95_ms=nan, itl_p50_ms=nan,
            itl_p95_ms=nan, stream_tok_s=nan, total_tok_s=0.0, checked=0, mismatched=0, error_examples=["HTTP 503"],
        ),
    ]  # fmt: skip
    report = LoadtestReport(
        id="lt3", model="<b>lm</b>", model_id="", created_at="2026-12-04T19:00:00+00:00", target="", started_app=True,
        body="json", duration_s=1.0, results=[], in_process_p50_ms=0.5, in_process_low_ms=0.4, in_process_high_ms=0.6,
        in_process_calls=10, session=SessionConfig(), environment=made_environment(), notes=[], seconds=1.0,
        tokens=tokens, new_tokens=32, prompt_tokens=16,
    )  # fmt: skip
    assert say(headline(report)) == (
        "Streamed over HTTP: first token after 12 ms (p50) and a token every 2 ms at concurrency 1; at most 400 "
        "tokens/s in all, at concurrency 1."
    )
    table = _table(token_frame(report))
    assert table.iloc[0].tolist()[1:3] == ["12 / 15", "2 / 3"]
    assert table.iloc[1].tolist()[1:4] == ["no stream finished", "no stream finished", "—"]  # never "nan"
    figure = tokens_figure(token_frame(report))
    assert [t.y[0] for t in figure.data] == [400.0, 480.0]
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        _print(report)  # the command line's text: the tokens' table alone, no empty table of requests
    lines = printed.getvalue().splitlines()
    assert lines[3].split() == ["1", "12/15", "ms", "2/3", "ms", "480.0", "400.0", "0"]
    assert "no stream finished" in lines[4] and "requests/s" not in printed.getvalue()
    store = Store(f"sqlite:///{tmp_path / 'h.sqlite'}")  # the history keeps it as a run of kind "loadtest"
    store.save(as_run(report))
    saved = store.load("lt3")
    assert isinstance(saved, LoadtestRun) and saved.concurrency == [1, 4] and saved.errors == {"1": 0, "4": 3}
    http = next(r for r in saved.results if r.engine == "http")
    assert (http.label, http.median_ms, http.throughput, http.first_run_ms) == (
        "HTTP · 1 streams, per token",
        2.0,
        400.0,
        12.0,
    )
    assert saved.headline.english().startswith("Streamed over HTTP: first token after 12 ms")


def test_deploy_tokenizer_packages_the_one_given_so_generate_takes_text(
    gpt2_past: LanguageModel, tmp_path: Path
) -> None:
    """A model with no tokenizer beside it (a tuned variant's copy): ``--tokenizer`` (the file or its folder) puts one
    in the package, with ``tokenizers`` among its requirements; a path without one is refused with the way out."""
    model = copy_model(gpt2_past.onnx, tmp_path / "model")
    (tmp_path / "tok").mkdir()
    words = word_tokenizer(tmp_path / "tok" / "tokenizer.json")
    done = cli("deploy", str(model), "-o", str(tmp_path / "server"), "--tokenizer", str(words.parent))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "server" / "tokenizer.json").read_bytes() == words.read_bytes()
    assert "tokenizers" in (tmp_path / "server" / "requirements.txt").read_text()
    refused = cli("deploy", str(model), "-o", str(tmp_path / "other"), "--tokenizer", str(tmp_path))
    assert refused.returncode == 2 and "no tokenizer.json there" in refused.stderr


def test_a_provider_the_runtime_lacks_is_refused_naming_those_it_has(tmp_path: Path) -> None:
    model = write(relu_model(), tmp_path / "relu.onnx")
    done = cli("deploy", str(model), "-o", str(tmp_path / "server"), "--providers", "cuda,cpu")
    assert done.returncode == 2
    assert (
        "The runtime default has no CUDAExecutionProvider; it offers" in done.stderr
        and "CPUExecutionProvider" in done.stderr
    )
    assert not (tmp_path / "server" / "app.py").exists()


def test_a_server_for_the_gpu_runtime_pins_its_build_with_the_libraries_and_index_it_needs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Written where the GPU runtime runs (its worker): onnxruntime-gpu at its version, and what requirements-gpu.txt
    pins beside it (NVIDIA's index, CUDA's and cuDNN's libraries, TensorRT's), comments left out."""
    from core.deploy import served_spec
    from core.settings import PROJECT_ROOT

    monkeypatch.setattr(served_spec.metadata, "version", lambda package: {"onnxruntime-gpu": "1.31.1"}[package])
    lines = served_spec.runtime_requirements("gpu")
    listed = [
        line.strip()
        for line in (PROJECT_ROOT / "requirements-gpu.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert lines[0] == "onnxruntime-gpu==1.31.1" and "--extra-index-url https://pypi.nvidia.com" in lines
    assert sorted(lines) == sorted(listed) and any(line.startswith("nvidia-cudnn-cu13==") for line in lines)


def _generate_request(body: dict[str, object]) -> object:
    from starlette.requests import Request

    data = json.dumps(body).encode()

    async def receive() -> dict[str, object]:
        return {"type": "http.request", "body": data, "more_body": False}

    scope = {
        "type": "http", "method": "POST", "path": "/generate", "query_string": b"",
        "headers": [(b"content-type", b"application/json")],
    }  # fmt: skip
    return Request(scope, receive)


def test_a_stream_is_counted_against_the_cap_when_accepted_not_when_its_first_line_is_sent(
    lm_server: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two requests read before either's stream begins: the second is refused, where both were admitted."""
    import asyncio

    from fastapi import HTTPException

    module = served_module(lm_server[1])
    generate = module.GENERATE
    monkeypatch.setattr(generate, "max_streams", 1)
    sent: list[dict[str, object]] = []

    async def send(message: dict[str, object]) -> None:
        sent.append(message)

    async def disconnect() -> dict[str, object]:
        await asyncio.sleep(30)  # the client stays
        return {"type": "http.disconnect"}

    async def two() -> tuple[object, int, int]:
        body = {"prompt_ids": PROMPT, "max_new_tokens": 3}
        first = await generate.generate(_generate_request(body))
        try:
            await generate.generate(_generate_request(body))
            second = 200
        except HTTPException as exc:
            second = exc.status_code
        during = generate.streams
        await first({"type": "http", "asgi": {"spec_version": "2.4"}}, disconnect, send)  # the first stream, whole
        return second, during, generate.streams

    with TestClient(module.app):  # the session, made as the server starts
        second, during, after = _run_alone(two())
    assert second == 503 and during == 1 and after == 0
    streamed = b"".join(bytes(m.get("body", b"")) for m in sent)  # type: ignore[call-overload]
    assert _lines(streamed.decode())[-1]["tokens"] == 3


def _run_alone(work: Any) -> Any:
    """``asyncio.run`` of ``work`` in a thread of its own: a test process may already run an event loop (Playwright's,
    where the e2e tests share the worker), in which asyncio.run refuses to start."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, work).result()


@pytest.mark.parametrize("asgi", ["2.4", "2.0"])
def test_a_client_gone_before_its_stream_begins_is_not_left_counted(
    lm_server: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, asgi: str
) -> None:
    """Gone as uvicorn says it (ASGI 2.4: sending fails) and as an older server does (2.0: a disconnect message)."""

    module = served_module(lm_server[1])
    generate = module.GENERATE
    monkeypatch.setattr(generate, "max_streams", 1)

    async def gone_send(message: dict[str, object]) -> None:
        raise OSError("the client closed the connection")

    async def gone_receive() -> dict[str, object]:
        return {"type": "http.disconnect"}

    async def accepted_then_gone() -> tuple[int, int]:
        response = await generate.generate(_generate_request({"prompt_ids": PROMPT}))
        counted = generate.streams
        with contextlib.suppress(Exception):
            await response({"type": "http", "asgi": {"spec_version": asgi}}, gone_receive, gone_send)
        return counted, generate.streams

    with TestClient(module.app) as client:
        counted, after = _run_alone(accepted_then_gone())
        again = client.post("/generate", json={"prompt_ids": PROMPT, "max_new_tokens": 2})
    assert (counted, after) == (1, 0)
    assert again.status_code == 200 and _lines(again.text)[-1]["tokens"] == 2  # the cap's one place is free again


def test_steps_run_at_once_only_as_many_as_the_cores_hold_at_the_sessions_threads(lm_server: tuple[Path, Path]) -> None:
    from core.deploy.served_generation import step_workers

    assert step_workers(0, 16, cores=2) == 1  # ONNX Runtime's default: a thread per core, so one step at a time
    assert step_workers(1, 16, cores=2) == 2 and step_workers(2, 16, cores=8) == 4
    assert step_workers(1, 16, cores=64) == 16 and step_workers(4, 16, cores=2) == 1  # never past the streams, never 0
    assert served_module(lm_server[1]).GENERATE.pool._max_workers == step_workers(0, 16)  # the server's own pool
