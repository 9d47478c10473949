"""No job writes outside its own folders: after every kind of job, the server's working directory and the
system's temporary folder hold what they held before (ORT's quantization tools, for one, write scratch files
into the working directory). Checked without the sandbox, where only the worker's private folder stops them."""

from __future__ import annotations

import dataclasses
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from core.bench import BenchRequest
from core.decode import DecodeRequest
from core.export import ExportRequest, default_options
from core.jobs import (
    BENCH,
    CALIBRATION,
    DECODE,
    EXPORT,
    INTAKE,
    OPTIMIZE,
    PARTITION,
    QUANTIZE,
    SAMPLE,
    Job,
    ProcessBackend,
    run,
    submit,
)
from core.model.inputs import BenchInput
from core.model.intake import IntakeRequest
from core.model.measured import MeasuredModel
from core.model.torchload import source_of
from core.model.zoo import SampleRequest
from core.partition import LevelsRequest, PartitionRequest
from core.quantize import CalibrationRequest, QuantizeRequest
from core.settings import PROJECT_ROOT, load_settings
from tests import builders

pytestmark = pytest.mark.slow


def _listing(folder: Path) -> set[str]:
    return {entry.name for entry in os.scandir(folder)}


def test_every_kind_of_job_leaves_the_working_directory_and_temp_folder_as_they_were(tmp_path: Path) -> None:
    settings = dataclasses.replace(load_settings(environ={}), data_dir=str(tmp_path / "data"), sandbox=False)
    backend = ProcessBackend(settings)
    (tmp_path / "in").mkdir()
    model = builders.exported_sample("classifier", tmp_path / "in")
    npz = tmp_path / "in" / "calibration.npz"
    np.savez(npz, input=np.random.default_rng(0).standard_normal((8, 768)).astype(np.float32))
    inputs = [BenchInput(name="input", dtype="float32", shape=[1, 768], batch_axis=0)]
    out = tmp_path / "out"
    before = (_listing(PROJECT_ROOT), _listing(Path(tempfile.gettempdir())))

    sample = run(SAMPLE, SampleRequest(name="classifier"), backend)
    legacy = dataclasses.replace(default_options(sample), exporter="legacy")
    measured = MeasuredModel(path=str(model), inputs=inputs)
    jobs: list[tuple[Job[Any, Any], Any]] = [
        (INTAKE, IntakeRequest(paths=[str(model)], unpack_dir=str(out / "unpacked"))),
        (EXPORT, ExportRequest(source=source_of(sample), options=legacy, out_dir=str(out / "export"))),
        (DECODE, DecodeRequest(path=str(model))),
        (PARTITION, PartitionRequest(path=str(model), simulate=["nnapi"])),
        (OPTIMIZE, LevelsRequest(path=str(model), out_dir=str(out / "levels"))),
        (BENCH, BenchRequest(model=measured, iterations=5, warmup=1)),
        (CALIBRATION, CalibrationRequest(path=str(npz), inputs=inputs)),
        (QUANTIZE, QuantizeRequest(model=measured, out_dir=str(out / "q"), iterations=5,
                                   variants=["dynamic-qint8", "static-qdq-minmax", "fp16"], calibration_file=str(npz))),
    ]  # fmt: skip
    for handle in [submit(job, request, backend) for job, request in jobs]:  # side by side, as a server runs them
        handle.result()
    after = (_listing(PROJECT_ROOT), _listing(Path(tempfile.gettempdir())))
    assert after[0] == before[0], f"written into the working directory: {after[0] - before[0]}"
    assert after[1] - before[1] <= {p.name for p in Path(tempfile.gettempdir()).glob("pytest-*")}, after[1] - before[1]
    assert not list((tmp_path / "data" / "scratch").iterdir()), "a job's private folder was left behind"
