"""The sample zoo and the command line over it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from core import zoo
from core.model import ModelRecord
from core.records import from_jsonable, to_jsonable
from core.settings import PROJECT_ROOT
from tests import builders


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "core", *args], capture_output=True, text=True, cwd=PROJECT_ROOT, timeout=120
    )


@pytest.mark.parametrize("name", list(zoo.SAMPLES))
def test_every_sample_runs_on_its_example_inputs_and_is_reproducible(name: str) -> None:
    inputs = zoo.example_inputs(name)
    with torch.no_grad():
        a = zoo.build_model(name)(*inputs.values())
        b = zoo.build_model(name)(*zoo.example_inputs(name).values())
    assert torch.equal(a, b)
    assert zoo.describe_sample(name).id == zoo.describe_sample(name).id


def test_tinycnn_is_the_reference_article_model() -> None:
    record = zoo.describe_sample("tinycnn")
    assert record.parameter_count == 256_074
    assert record.inputs[0].shape == [1, 3, 112, 112]
    assert record.outputs[0].shape == [1, 10]


def test_transformer_has_dynamic_batch_and_sequence() -> None:
    record = zoo.describe_sample("transformer")
    assert record.inputs[0].dynamic_axes == {"0": "batch", "1": "seq"}
    model = zoo.build_model("transformer")
    with torch.no_grad():
        assert model(torch.randn(3, 21, 64)).shape == (3, 21, 64)


def test_records_survive_a_json_round_trip() -> None:
    record = zoo.describe_sample("resnet")
    again = from_jsonable(ModelRecord, json.loads(json.dumps(to_jsonable(record))))
    assert again == record


def test_cli_info_reports_the_tinycnn_parameters_and_input_shape() -> None:
    result = cli("info", "sample:tinycnn", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["parameter_count"] == 256_074
    assert data["inputs"][0]["shape"] == [1, 3, 112, 112]
    assert data["format"] == "sample"


def test_cli_samples_lists_the_zoo() -> None:
    result = cli("samples", "--json")
    assert [s["name"] for s in json.loads(result.stdout)] == list(zoo.SAMPLES)


def test_cli_info_on_an_onnx_file_and_its_errors(tmp_path: Path) -> None:
    path = builders.write(builders.mixed_inputs_model(), tmp_path / "m.onnx")
    result = cli("info", str(path))
    assert result.returncode == 0, result.stderr
    assert "input_ids: int64 batch×-1" in result.stdout
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"")
    result = cli("info", str(bad), "--json")
    assert result.returncode == 2 and "is empty" in result.stderr and result.stdout == ""
