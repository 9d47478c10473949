"""The sample zoo and the command line over it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from core.jobs.wire import decode, encode, from_data, to_data
from core.model import ModelRecord, zoo
from tests import builders
from tests.cli import cli, cli_process


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


def test_records_survive_the_worker_boundary_and_json() -> None:
    record = zoo.describe_sample("resnet")
    assert decode(encode(record), ModelRecord) == record
    assert from_data(json.loads(json.dumps(to_data(record))), ModelRecord) == record


def test_python_m_core_runs_on_its_own_and_reports_the_tinycnn_parameters() -> None:
    result = cli_process("info", "sample:tinycnn", "--json")
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


def test_cli_resolves_a_relative_path_against_the_callers_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    builders.write(builders.relu_model(), tmp_path / "here.onnx")
    monkeypatch.chdir(tmp_path)  # the worker runs in the project's folder; the path is the caller's
    result = cli("info", "here.onnx", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["name"] == "here"
    missing = cli("info", "nowhere.onnx")
    assert missing.returncode == 2 and "No such file" in missing.stderr and "nowhere.onnx" in missing.stderr
