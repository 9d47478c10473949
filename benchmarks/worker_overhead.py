"""What isolation costs: a job in a fresh worker process, and in a pre-started one (core.jobs.warm), against the
same call in this process.

Run: .venv/bin/python benchmarks/worker_overhead.py [--repeat N]
Prints the median wall time of each, side by side in one run, and how much the pre-started worker saves. The
pre-started worker is given each job once it is ready, as in the app a second after the last job ended; the
models lie in the backend's data folder, as uploads do, so their folders are staged into its sandbox.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.decode import DecodeRequest
from core.jobs import DECODE, INTAKE, JOBS, PARTITION, Job, JobSpec, ProcessBackend
from core.jobs.sandbox import sandbox_state
from core.model import intake, zoo
from core.model.intake import IntakeRequest
from core.partition import PartitionRequest
from core.settings import load_settings


def _median_ms(fn: Callable[[], object], repeat: int, before: Callable[[], None] = lambda: None) -> float:
    times = []
    for _ in range(repeat):
        before()
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    registry = JOBS.with_jobs(Job(name="bench.noop", target="core.model.zoo:get_sample"))
    settings = dataclasses.replace(load_settings(environ={}), data_dir=tempfile.mkdtemp())
    fresh = ProcessBackend(settings, registry)
    warm = ProcessBackend(settings, registry, warm=1)
    assert warm.pool is not None
    pool = warm.pool

    def ready() -> None:
        while pool.ready_count() == 0:
            time.sleep(0.01)

    folder = Path(settings.data_dir) / "workspaces" / "bench" / "upload-1"
    folder.mkdir(parents=True)
    import onnx
    import torch

    model = zoo.build_model("tinycnn")
    onnx_path = folder / "tinycnn.onnx"
    torch.onnx.export(model, tuple(zoo.example_inputs("tinycnn").values()), str(onnx_path), dynamo=False)
    state_path = folder / "tinycnn.pt"
    torch.save(model.state_dict(), state_path)
    onnx.load(str(onnx_path))
    from core.decode import decode_model
    from core.partition import partition_model

    def job(backend: ProcessBackend, name: str, job_args: dict[str, object]) -> Callable[[], object]:
        return lambda: backend.submit(JobSpec(name=name, args=job_args)).result()

    onnx_file = IntakeRequest(paths=[str(onnx_path)])
    state_file = IntakeRequest(paths=[str(state_path)])
    decode, partition = DecodeRequest(path=str(onnx_path)), PartitionRequest(path=str(onnx_path))
    cases: dict[str, tuple[Callable[[], object], str, dict[str, object]]] = {
        "empty job (process start + protocol)": (lambda: None, "bench.noop", {"name": "tinycnn"}),
        "describe tinycnn.onnx": (lambda: intake.describe_files(onnx_file), INTAKE.name, {"request": onnx_file}),
        "describe tinycnn state_dict (torch)": (lambda: intake.describe_files(state_file), INTAKE.name,
                                                {"request": state_file}),
        "decode tinycnn.onnx": (lambda: decode_model(decode), DECODE.name, {"request": decode}),
        "partition tinycnn.onnx": (lambda: partition_model(partition), PARTITION.name, {"request": partition}),
    }  # fmt: skip
    print(f"sandbox: {'on' if sandbox_state(settings)[0] else 'off'}; median of {args.repeat} runs each")
    print(f"{'case':<38} {'in process ms':>14} {'fresh worker ms':>16} {'pre-started ms':>15} {'saved':>6}")
    for label, (direct, name, job_args) in cases.items():
        direct()  # warm the in-process imports so the comparison is the isolation cost only
        d = _median_ms(direct, args.repeat)
        f = _median_ms(job(fresh, name, job_args), args.repeat)
        w = _median_ms(job(warm, name, job_args), args.repeat, before=ready)
        print(f"{label:<38} {d:>14.1f} {f:>16.1f} {w:>15.1f} {f / w:>5.1f}×")
    pool.close()


if __name__ == "__main__":
    main()
