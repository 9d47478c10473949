"""The generated server's latency against ONNX Runtime in-process (issue #31, Deploy: "within 1 ms plus JSON cost
for small inputs").

For each model: Deploy writes the server (ONNX Runtime's default session options but one intra-op thread, so
the server and the in-process session run alike and leave a core to the load generator), the load test starts it
with uvicorn on a loopback port and loads it at each concurrency, after measuring the same session in-process one
call at a time. Printed per model and body: the p50 at concurrency 1 over HTTP, in-process, their difference (the
HTTP and encoding overhead), and requests/s at each concurrency. Models: a tiny one (the relu of tests/builders.py:
1×4 floats, where the overhead is HTTP alone), the zoo's TinyCNN (1×3×112×112 floats: JSON costs) and a real
packaged model (RapidOCR's text-direction classifier, 1×3×48×192 floats), each with a JSON and an .npy body.

Run (on a quiet machine; it uses two cores): nice -n 19 .venv/bin/python benchmarks/serve.py [--duration 5]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.deploy import DeployRequest, LoadtestRequest
from core.deploy.loadtest import run_loadtest
from core.deploy.server import generate_server
from core.model.inputs import BenchInput
from core.model.measured import MeasuredModel
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=5.0, help="seconds per concurrency")
    parser.add_argument("--concurrency", default="1,4", help="concurrencies, e.g. 1,4,16")
    args = parser.parse_args()
    concurrency = [int(c) for c in args.concurrency.split(",")]
    print(f"{'model':<24} {'body':<5} {'HTTP p50':>16} {'in-process':>11} {'overhead':>9}  requests/s by concurrency")
    with tempfile.TemporaryDirectory() as tmp:
        for name, path, inputs in _models(Path(tmp)):
            folder = Path(tmp) / f"server-{path.stem}"
            tuned = {"intra_op_threads": 1}
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
