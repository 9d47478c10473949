"""The whole walk-through of the TinyCNN sample, in English, run as Jupyter runs it (nbclient), with numbers
that agree with the app's own: the same parameter count, the model it exported read by the app's decoder and
partitioner (node count, op histogram, providers) and measured by the app's benchmark (latencies of the same
order)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from core.bench.benchmark import run_benchmark
from core.bench.records import BenchRequest
from core.decode.decoder import decode_model
from core.decode.records import DecodeRequest
from core.model import cards
from core.model.measured import MeasuredModel
from core.model.torchload import source_of
from core.notebook import STEPS, default_plan, notebook_bytes
from core.runtime.placement import nodes_per_provider
from tests.notebook.kernel import execute, results, set_parameters


@pytest.fixture(scope="module")
def walked(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Any, Path]:
    """The executed notebook's RESULTS, the notebook, and its folder (run once for the module)."""
    import nbformat

    record = cards.known("tinycnn")
    assert record is not None
    plan = dataclasses.replace(default_plan(record, list(STEPS), "en"), repeat=30, warmup=3)
    notebook = nbformat.reads(notebook_bytes(plan).decode(), as_version=4)
    set_parameters(notebook, REPEAT=30, WARMUP=3)
    folder = tmp_path_factory.mktemp("walk")
    execute(notebook, folder)
    return results(notebook), notebook, folder


def test_every_step_ran_and_printed_what_it_measured(walked: tuple[dict[str, Any], Any, Path]) -> None:
    found, notebook, _ = walked
    assert {"parameters", "export_max_abs_diff", "node_count", "partition", "latency_ms", "profile_ops"} <= set(found)
    assert "quantized" in found and found["quantized"]["bytes"] > 0
    images = [o for c in notebook.cells if c.cell_type == "code" for o in c.outputs if "image/png" in o.get("data", {})]
    assert len(images) >= 2  # the benchmark's bar chart and the profile's


def test_the_model_is_the_apps_and_exports_to_the_same_graph(walked: tuple[dict[str, Any], Any, Path]) -> None:
    found, _, folder = walked
    exported = folder / "model.onnx"  # what the notebook's export cell wrote, read by the app's own decoder
    decoded = decode_model(DecodeRequest(path=str(exported), with_text=False))
    assert found["parameters"] == 256_074 == cards.known("tinycnn").parameter_count  # type: ignore[union-attr]
    assert found["export_max_abs_diff"] < 1e-4
    assert found["node_count"] == decoded.node_count == 8  # BatchNorm folded into Conv, as the app's export does
    assert found["op_counts"] == decoded.op_counts == {"Conv": 2, "Relu": 2, "MaxPool": 2, "Reshape": 1, "Gemm": 1}


def test_the_partition_and_latencies_agree_with_the_apps(walked: tuple[dict[str, Any], Any, Path]) -> None:
    found, _, folder = walked
    path = str(folder / "model.onnx")
    assert found["partition"] == nodes_per_provider(path, ["CPUExecutionProvider"], "all")
    record = cards.known("tinycnn")
    assert record is not None
    plan = default_plan(record).inputs
    measured = MeasuredModel(path=path, inputs=plan, torch_source=source_of(record))
    report = run_benchmark(BenchRequest(model=measured, iterations=30, warmup=3, time_budget_s=20))
    app = {("PyTorch eager" if r.engine == "eager" else f"ORT {r.level}"): r.median_ms for r in report.results}
    assert set(found["latency_ms"]) == set(app)
    for label, ms in found["latency_ms"].items():
        assert app[label] / 10 <= ms <= app[label] * 10, (label, ms, app[label])
