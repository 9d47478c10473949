"""The whole walk-through of the TinyCNN sample, in English, run as Jupyter runs it (nbclient), with numbers
that agree with the app's own: the same parameter count, node count, op histogram and partition, and latencies
of the same order as the app's benchmark."""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path
from typing import Any

import onnx
import pytest

from core.bench.benchmark import run_benchmark
from core.bench.records import BenchRequest
from core.export import ExportRequest, default_options
from core.export.exporter import export_model
from core.model import cards
from core.model.measured import MeasuredModel
from core.model.torchload import source_of
from core.notebook import STEPS, default_plan, notebook_bytes
from core.runtime.placement import nodes_per_provider
from tests.notebook.kernel import execute, results, set_parameters


@pytest.fixture(scope="module")
def walked(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Any]:
    """The executed notebook's RESULTS and the notebook itself (run once for the module)."""
    import nbformat

    record = cards.known("tinycnn")
    assert record is not None
    plan = dataclasses.replace(default_plan(record, list(STEPS), "en"), repeat=30, warmup=3)
    notebook = nbformat.reads(notebook_bytes(plan).decode(), as_version=4)
    set_parameters(notebook, REPEAT=30, WARMUP=3)
    folder = tmp_path_factory.mktemp("walk")
    execute(notebook, folder)
    return results(notebook), notebook


@pytest.fixture(scope="module")
def app_export(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The app's own export of the sample, with the Export page's defaults."""
    record = cards.known("tinycnn")
    assert record is not None
    folder = tmp_path_factory.mktemp("app")
    request = ExportRequest(source=source_of(record), options=default_options(record), out_dir=str(folder))
    report = export_model(request)
    assert report.usable and report.record is not None
    return report


def test_every_step_ran_and_printed_what_it_measured(walked: tuple[dict[str, Any], Any]) -> None:
    found, notebook = walked
    assert {"parameters", "export_max_abs_diff", "node_count", "partition", "latency_ms", "profile_ops"} <= set(found)
    assert "quantized" in found and found["quantized"]["bytes"] > 0
    images = [o for c in notebook.cells if c.cell_type == "code" for o in c.outputs if "image/png" in o.get("data", {})]
    assert len(images) >= 2  # the benchmark's bar chart and the profile's


def test_the_model_is_the_apps_and_exports_to_the_same_graph(
    walked: tuple[dict[str, Any], Any], app_export: Any
) -> None:
    found, _ = walked
    app = onnx.load(app_export.onnx_path, load_external_data=False)
    assert found["parameters"] == 256_074 == cards.known("tinycnn").parameter_count  # type: ignore[union-attr]
    assert found["export_max_abs_diff"] < 1e-4
    assert found["node_count"] == len(app.graph.node) == app_export.record.node_count
    assert found["op_counts"] == dict(Counter(n.op_type for n in app.graph.node))


def test_the_partition_and_latencies_agree_with_the_apps(walked: tuple[dict[str, Any], Any], app_export: Any) -> None:
    found, _ = walked
    path = app_export.onnx_path
    assert found["partition"] == nodes_per_provider(path, ["CPUExecutionProvider"], "all")
    record = cards.known("tinycnn")
    assert record is not None
    plan = default_plan(app_export.record).inputs
    measured = MeasuredModel(path=path, inputs=plan, torch_source=source_of(record))
    report = run_benchmark(BenchRequest(model=measured, iterations=30, warmup=3, time_budget_s=20))
    app = {("PyTorch eager" if r.engine == "eager" else f"ORT {r.level}"): r.median_ms for r in report.results}
    for label, ms in found["latency_ms"].items():
        assert app[label] / 10 <= ms <= app[label] * 10, (label, ms, app[label])
    assert Path(path).is_file()
