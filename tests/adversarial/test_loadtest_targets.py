"""The load test aimed at addresses that are no model server, or at one that fails: refused at once, or stopped on a
run of failures, and never a "nan". ``loadtest http://…`` once fired 1,604 requests at a 404 in 2 s and printed
"p50 nan (nan–nan) ms" with exit 0. The servers here are tiny HTTP servers on 127.0.0.1 (a test reaches no other
address)."""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from core.cli.loadtest import _print, report_json
from core.deploy import LoadResult, LoadtestReport
from core.deploy.loadtest import STOP_RUN
from core.deploy.session import read_tuned
from core.notes import read_note
from tests.builders import relu_model, write
from tests.cli import cli
from tests.reports import made_environment

RELU = {"inputs": [{"name": "x", "dtype": "float32", "shape": [None, 4]}]}
RELU["outputs"] = [{"name": "y", "dtype": "float32", "shape": [None, 4]}]


class _Server(BaseHTTPRequestHandler):
    """GET /health answers ``health`` (None: 404 as every other path); POST /predict answers relu's outputs, or
    fails ``fail`` of every 4 requests with HTTP 500."""

    health: ClassVar[dict[str, Any] | None] = None
    fail: ClassVar[int] = 0
    posts: ClassVar[int] = 0

    def _send(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path == "/health" and self.health is not None:
            self._send(200, json.dumps(self.health).encode())
        else:
            self._send(404, b"not found")

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        type(self).posts += 1
        if self.path != "/predict" or self.health is None:
            self._send(404, b"not found")
        elif self.posts % 4 < self.fail:
            self._send(500, b"Internal Server Error")
        else:
            x = json.loads(body)["inputs"]["x"]
            self._send(200, json.dumps({"outputs": {"y": [[max(v, 0.0) for v in row] for row in x]}}).encode())

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[tuple[str, type[_Server]]]:
    """(its address, its handler class: set ``health`` and ``fail`` before the load test)."""
    handler = type("Handler", (_Server,), {"health": None, "fail": 0, "posts": 0})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", handler
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def relu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("WORKBENCH_HISTORY_URL", "")
    return write(relu_model(), tmp_path / "relu.onnx")


def _loadtest(url: str, model: Path, *more: str) -> Any:
    return cli("loadtest", url, "--model", str(model), "--duration", "0.5", "--no-save", *more)


def test_an_address_that_answers_404_is_refused_before_a_single_request(server: Any, relu: Path) -> None:
    url, handler = server
    done = _loadtest(url, relu, "--concurrency", "1,4")
    assert done.returncode == 2, done.stdout
    assert "error:" in done.stderr and f"{url}/health answered HTTP 404" in done.stderr
    assert "not a model server" in done.stderr and "python -m core deploy" in done.stderr
    assert handler.posts == 0 and "nan" not in done.stdout + done.stderr


def test_an_address_where_nothing_listens_is_refused_in_words(relu: Path) -> None:
    import socket

    with socket.socket() as sock:  # a port that was free a moment ago
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    done = _loadtest(url, relu)
    assert done.returncode == 2 and f"Nothing answers at {url}" in done.stderr


def test_a_server_of_another_model_is_refused_naming_both(server: Any, relu: Path) -> None:
    url, handler = server
    handler.health = {"status": "ok", **RELU, "inputs": [{"name": "image", "dtype": "float32", "shape": [1, 3]}]}
    done = _loadtest(url, relu)
    assert done.returncode == 2 and "serves another model" in done.stderr
    assert "image (float32)" in done.stderr and "x (float32)" in done.stderr and handler.posts == 0
    handler.health = {"status": "ok", "model": "not a signature"}
    done = _loadtest(url, relu)
    assert done.returncode == 2 and "does not list a model's inputs and outputs" in done.stderr


def test_a_server_that_fails_every_request_is_stopped_after_a_run_and_named(server: Any, relu: Path) -> None:
    url, handler = server
    handler.health, handler.fail = {"status": "ok", **RELU}, 4
    done = _loadtest(url, relu, "--concurrency", "1,4")
    assert done.returncode == 2, done.stdout
    assert f"The server failed every request: {STOP_RUN} of {STOP_RUN} at concurrency 1" in done.stderr
    assert "HTTP 500: Internal Server Error" in done.stderr
    assert handler.posts <= STOP_RUN + 1  # the warm-up request, then the run that stops it: never 4's load


def test_a_server_that_fails_most_requests_is_stopped_and_what_was_measured_is_kept(server: Any, relu: Path) -> None:
    url, handler = server
    handler.health, handler.fail = {"status": "ok", **RELU}, 3
    done = _loadtest(url, relu, "--concurrency", "1,4", "--json")
    assert done.returncode == 1, done.stderr  # measured, but the server failed: not a pass
    data = json.loads(done.stdout)
    assert data["stopped_at"] == 1 and [r["concurrency"] for r in data["results"]] == [1]
    (row,) = data["results"]
    assert row["requests"] > 0 and row["errors"] > row["requests"] and row["p50_ms"] > 0
    said = [read_note(n).english() for n in data["notes"]]  # notes as data: a template key and its values
    assert any(n.startswith("The load stopped at concurrency 1:") and "HTTP 500" in n for n in said)
    assert "nan" not in done.stdout


def test_a_concurrency_that_no_request_answered_says_so_in_words_and_null_in_json(
    capsys: pytest.CaptureFixture[str],
) -> None:
    nan = math.nan
    failed = LoadResult(
        concurrency=16, requests=0, errors=16, rps=0.0, p50_ms=nan, p90_ms=nan, p99_ms=nan, p50_low_ms=nan,
        p50_high_ms=nan, p90_low_ms=nan, p90_high_ms=nan, p99_low_ms=nan, p99_high_ms=nan, checked=0,
        max_abs_diff=None, error_examples=["TimeoutError: "],
    )  # fmt: skip
    answered = LoadResult(
        concurrency=1, requests=50, errors=0, rps=100.0, p50_ms=2.0, p90_ms=3.0, p99_ms=4.0, p50_low_ms=1.9,
        p50_high_ms=2.1, p90_low_ms=2.8, p90_high_ms=3.2, p99_low_ms=3.5, p99_high_ms=5.0, checked=5, max_abs_diff=0.0,
    )  # fmt: skip
    machine = made_environment("m")
    report = LoadtestReport(
        id="lt", model="relu", model_id="", created_at="2026-12-04T06:00:00+00:00", target="", started_app=True,
        body="json", duration_s=1.0, results=[answered, failed], in_process_p50_ms=0.5, in_process_low_ms=0.4,
        in_process_high_ms=0.6, in_process_calls=100, session=read_tuned("{}"), environment=machine, notes=[],
        seconds=1.0,
    )  # fmt: skip
    data = report_json(report)
    text = json.dumps(data, allow_nan=False)  # no NaN, and no "nan" string standing for one
    assert "nan" not in text.lower().replace("unmeasured", "")
    assert data["results"][1]["p50_ms"] is None and data["results"][1]["p99_high_ms"] is None
    assert data["results"][1]["unmeasured"] == "no request was answered at concurrency 16: 16 failed"
    assert data["results"][0]["p50_ms"] == 2.0 and "unmeasured" not in data["results"][0]
    _print(report)
    shown = capsys.readouterr().out
    assert "nan" not in shown and "no request answered" in shown
