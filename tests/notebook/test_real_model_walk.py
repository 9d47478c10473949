"""A real third-party ONNX model (PaddleOCR's text detector, 672 nodes, at its own 640×640) walked in Chinese:
the zip job packs the notebook beside the model, and the notebook, run from the unpacked zip, finds the app's node
count, op histogram and partition, and latencies of the same order as the app's benchmark."""

from __future__ import annotations

import dataclasses
import re
import zipfile
from pathlib import Path
from typing import Any

import pytest

from core.bench.benchmark import run_benchmark
from core.bench.records import BenchRequest
from core.decode.decoder import decode_model
from core.decode.records import DecodeRequest
from core.model.intake import IntakeRequest, describe_files
from core.model.measured import MeasuredModel
from core.notebook import NotebookRequest, default_plan, model_files
from core.notebook.archive import notebook_archive
from core.runtime.placement import nodes_per_provider
from tests.notebook.kernel import execute, results, set_parameters
from tests.real_models import real_model

STEPS = ["decode", "partition", "benchmark"]


@pytest.fixture(scope="module")
def detector(tmp_path_factory: pytest.TempPathFactory) -> Any:
    path = real_model("ocr_det")
    return describe_files(IntakeRequest(paths=[str(path)], unpack_dir=str(tmp_path_factory.mktemp("unpacked"))))


@pytest.fixture(scope="module")
def walked(detector: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Any, list[str]]:
    import nbformat

    plan = dataclasses.replace(default_plan(detector, STEPS, "zh"), repeat=3, warmup=1)
    out = tmp_path_factory.mktemp("zip")
    made = notebook_archive(NotebookRequest(plan=plan, files=model_files(detector, plan.inputs), out_dir=str(out)))
    folder = tmp_path_factory.mktemp("unzipped")
    with zipfile.ZipFile(made.path) as zf:
        zf.extractall(folder)
    notebook = nbformat.read(folder / made.notebook, as_version=4)
    set_parameters(notebook, REPEAT=3, WARMUP=1)
    execute(notebook, folder)
    return results(notebook), notebook, made.members


def test_the_zip_holds_the_notebook_and_the_model_beside_it(walked: tuple[dict[str, Any], Any, list[str]]) -> None:
    _, _, members = walked
    assert members == ["walk-through.ipynb", "ch_PP-OCRv4_det_infer.onnx"]


def test_the_lessons_are_chinese_and_the_plan_is_the_models_own_size(
    walked: tuple[dict[str, Any], Any, list[str]],
) -> None:
    _, notebook, _ = walked
    lessons = [c.source for c in notebook.cells if c.cell_type == "markdown"]
    assert all(re.search(r"[\u4e00-\u9fff]", text) for text in lessons), lessons
    assert "执行提供者" in "\n".join(lessons)
    assert any("[1, 3, 640, 640]" in c.source for c in notebook.cells if c.cell_type == "code")


def test_its_numbers_are_the_apps(detector: Any, walked: tuple[dict[str, Any], Any, list[str]]) -> None:
    found, _, _ = walked
    decoded = decode_model(DecodeRequest(path=detector.path, with_text=False))
    assert found["node_count"] == decoded.node_count == 672
    assert found["op_counts"] == decoded.op_counts
    assert found["partition"] == nodes_per_provider(detector.path, ["CPUExecutionProvider"], "all")
    measured = MeasuredModel(path=detector.path, inputs=default_plan(detector).inputs)
    report = run_benchmark(BenchRequest(model=measured, iterations=3, warmup=1, time_budget_s=30))
    app = {f"ORT {r.level}": r.median_ms for r in report.results}
    assert set(found["latency_ms"]) == set(app)
    for label, ms in found["latency_ms"].items():
        assert app[label] / 10 <= ms <= app[label] * 10, (label, ms, app[label])
    assert Path(detector.path).is_file()
