"""The generated server's latency against ONNX Runtime in-process (issue #31, Deploy: "within 1 ms plus JSON cost
for small inputs").

For each model: Deploy writes the server (ONNX Runtime's default session options but one intra-op thread, so
the server and the in-process session run alike and leave a core to the load generator), the load test starts it
with uvicorn on a loopback port and loads it at each concurrency, after measuring the same session in-process one
call at a time. Printed per model and body: the p50 at concurrency 1 over HTTP, in-process, their difference (the
HTTP and encoding overhead), and requests/s at each concurrency. Models: a tiny one (the relu of tests/builders.py:
1×4 floats, where the overhead is HTTP alone), the zoo's TinyCNN (1×3×112×112 floats: JSON costs) and a real
packaged model (RapidOCR's text-direction classifier, 1×3×48×192 floats), each with a JSON and an .npy body.

First, the floor: the load test's own client against a server that answers at once (a FastAPI app returning a
constant, under the same uvicorn), with aiohttp (the load test's client) and with httpx's async client (its client
until 2026-12), so that the overhead below can be read against what the client and HTTP cost by themselves.

Run (on a quiet machine; it uses two cores): nice -n 19 .venv/bin/python benchmarks/serve.py [--duration 5]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.deploy import DeployRequest, LoadtestRequest
from core.deploy.loadtest import _load, run_client, run_loadtest, started_app
from core.deploy.server import generate_server
from core.model.inputs import BenchInput
from core.model.measured import MeasuredModel
from core.runtime.session_config import SessionConfig
from tests.builders import exported_sample, relu_model, write
from tests.real_models import real_model


def _models(folder: Path) -> list[tuple[str, Path, list[BenchInput]]]:
    relu = write(relu_model(), folder / "relu.onnx")
    tinycnn = exported_sample("tinycnn", folder)
    return [
        ("relu (1×4)", relu, [BenchInput(name="x", dtype="float32", shape=[1, 4])]),
        ("tinycnn (1×3×112×112)", tinycnn, [BenchInput(name="input", dtype="float32", shape=[1, 3, 112, 112])]),
        ("ocr_cls (1×3×48×192)", real_model("ocr_cls"), [BenchInput(name="x", dtype="float32", shape=[1, 3, 48, 192])]),
    ]


_NULL_APP = """
from fastapi import FastAPI, Request
from fastapi.responses import Response

app = FastAPI()


@app.get("/health")
def health() -> dict[str, str]:
    return {"status": "ok"}


@app.post("/predict")
async def predict(request: Request) -> Response:
    await request.body()
    return Response(content=b'{"outputs": {"y": [[0.0, 1.0, 2.0, 3.0]]}}', media_type="application/json")
"""


async def _httpx_p50(url: str, body: bytes, seconds: float) -> float:
    import httpx

    async with httpx.AsyncClient(trust_env=False) as client:
        times: list[float] = []
        deadline = time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            start = time.perf_counter()
            await client.post(url, content=body, headers={"content-type": "application/json"})
            times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times[10:])


def _floor(folder: Path, seconds: float) -> None:
    """The client and HTTP alone: p50 at concurrency 1 against a server that does nothing."""
    folder.mkdir()
    (folder / "app.py").write_text(_NULL_APP)
    body = b'{"inputs": {"x": [[0.1, 0.2, 0.3, 0.4]]}}'
    with started_app(str(folder)) as url:
        load = run_client(_load(f"{url}/predict", body, "application/json", 1, seconds, 0, random.Random(0)))
        ours = statistics.median(load.latencies_ms)
        theirs = asyncio.run(_httpx_p50(f"{url}/predict", body, seconds))
    print(f"{'null server (floor)':<24} {'json':<5} aiohttp {ours:.2f} ms, httpx async {theirs:.2f} ms a request")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=5.0, help="seconds per concurrency")
    parser.add_argument("--concurrency", default="1,4", help="concurrencies, e.g. 1,4,16")
    args = parser.parse_args()
    concurrency = [int(c) for c in args.concurrency.split(",")]
    print(f"{'model':<24} {'body':<5} {'HTTP p50':>16} {'in-process':>11} {'overhead':>9}  requests/s by concurrency")
    with tempfile.TemporaryDirectory() as tmp:
        _floor(Path(tmp) / "null", args.duration)
        for name, path, inputs in _models(Path(tmp)):
            folder = Path(tmp) / f"server-{path.stem}"
            tuned = SessionConfig(intra_op_threads=1)
            app = generate_server(DeployRequest(model=str(path), out_dir=str(folder), tuned=tuned, zip=False)).out_dir
            model = MeasuredModel(path=str(path), inputs=inputs, name=name)
            for npy in (False, True):
                request = LoadtestRequest(
                    model=model, app=app, concurrency=concurrency, duration_s=args.duration, npy=npy
                )
                report = run_loadtest(request)
                first = report.results[0]
                p50 = f"{first.p50_ms:.2f} ({first.p50_low_ms:.2f}–{first.p50_high_ms:.2f})"
                rates = ", ".join(f"{r.concurrency}: {r.rps:,.0f}" for r in report.results)
                errors = sum(r.errors for r in report.results)
                diff = max((r.max_abs_diff or 0.0) for r in report.results)
                print(
                    f"{name:<24} {report.body:<5} {p50:>16} {report.in_process_p50_ms:>11.3f} "
                    f"{first.p50_ms - report.in_process_p50_ms:>9.2f}  {rates} (errors {errors}, max diff {diff:.1e})"
                )


if __name__ == "__main__":
    main()
