"""Compare with a PyTorch model run eagerly as one side: against its own export no node diverges, whichever
exporter wrote it (they fold BatchNorm into Conv in opposite directions); a Conv's weights scaled in the export is
the first divergence; an in-place ReLU after a module does not change what that module is compared on."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from core.compare import CompareReport, CompareRequest, CompareSide, compare_models
from core.compare.eager import INSIDE_MODULE
from core.model import zoo
from core.model.inputs import BenchInput
from core.model.torchload import TorchSource
from tests.cli import cli

RESNET = TorchSource(kind="sample", name="resnet")


def _export(folder: Path, dynamo: bool, model: object = None, name: str = "resnet") -> tuple[Path, list[BenchInput]]:
    import torch

    example = zoo.example_inputs(name)
    path = folder / f"{name}-{'dynamo' if dynamo else 'legacy'}.onnx"
    torch.onnx.export(
        model or zoo.build_model(name), tuple(example.values()), str(path), dynamo=dynamo, opset_version=18,
        input_names=list(example),
    )  # fmt: skip
    inputs = [BenchInput(name=k, shape=list(v.shape), dtype="float32") for k, v in example.items()]
    return path, inputs


def _eager_against(path: Path, inputs: list[BenchInput], b: Path, source: TorchSource = RESNET) -> CompareReport:
    return compare_models(
        CompareRequest(
            a=CompareSide(path=str(path), label="eager", torch_source=source),
            b=CompareSide(path=str(b), level="disable"),
            inputs=inputs,
        )
    )


@pytest.fixture(scope="module")
def exports(tmp_path_factory: pytest.TempPathFactory) -> dict[bool, tuple[Path, list[BenchInput]]]:
    """The ResNet sample exported by each exporter (dynamo: True), made once for the file."""
    folder = tmp_path_factory.mktemp("exports")
    return {dynamo: _export(folder, dynamo) for dynamo in (False, True)}


@pytest.mark.parametrize("dynamo", [False, True], ids=["legacy", "dynamo"])
def test_a_pytorch_model_against_its_own_export_does_not_diverge(
    exports: dict[bool, tuple[Path, list[BenchInput]]], dynamo: bool
) -> None:
    path, inputs = exports[dynamo]
    report = _eager_against(path, inputs, path)
    assert report.a_level == "PyTorch eager"
    assert report.first_divergence is None
    assert all(n.within for n in report.nodes) and all(o.within for o in report.outputs)
    # each BatchNorm is compared where the export folded it (the Conv's output), each block at its output
    modules = {n.module for n in report.nodes}
    assert report.matched >= 10 and {"7"} <= modules
    assert [u.reason for u in report.uncompared] == [INSIDE_MODULE]  # the blocks' inner ReLU, used twice, and Add


def test_a_scaled_conv_in_the_export_is_the_first_divergence_against_eager(
    exports: dict[bool, tuple[Path, list[BenchInput]]], tmp_path: Path
) -> None:
    path, inputs = exports[False]
    model = onnx.load(str(path))
    conv = next(n for n in model.graph.node if n.name == "/3/conv2/Conv")  # the first block's second Conv
    weight = next(t for t in model.graph.initializer if t.name == conv.input[1])
    scaled = numpy_helper.from_array(numpy_helper.to_array(weight) * np.float32(1.5), weight.name)
    weight.CopyFrom(scaled)
    faulty = tmp_path / "faulty.onnx"
    onnx.save(model, str(faulty))
    report = _eager_against(path, inputs, faulty)
    found = report.first_divergence
    assert found is not None and found.node == "/3/conv2/Conv" and found.module == "3.conv2"
    assert not report.outputs[0].within


def test_an_in_place_relu_after_a_module_does_not_change_what_it_is_compared_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch
    from torch import nn

    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(inplace=True), nn.Conv2d(8, 4, 3), nn.ReLU(inplace=True)).eval()
    with torch.no_grad():
        model[0].bias.fill_(-0.2)  # a good share of the Conv's outputs are negative: the ReLU changes them
    example = {"image": torch.randn(1, 3, 16, 16)}
    path = tmp_path / "inplace.onnx"
    torch.onnx.export(model, (example["image"],), str(path), dynamo=False, opset_version=17, input_names=["image"])
    monkeypatch.setattr("core.compare.eager.load_module", lambda source, *names: model)
    inputs = [BenchInput(name="image", shape=[1, 3, 16, 16], dtype="float32")]
    report = _eager_against(path, inputs, path, TorchSource(kind="code", name="Sequential"))
    assert report.first_divergence is None
    assert {n.module for n in report.nodes} >= {"0", "1", "2"}  # the Conv itself, before its ReLU ran in place


def test_the_command_line_runs_a_pytorch_sample_eagerly_against_an_export(
    exports: dict[bool, tuple[Path, list[BenchInput]]],
) -> None:
    path, _inputs = exports[True]
    done = cli("compare", "sample:resnet", str(path), "--eager", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["a_level"] == "PyTorch eager" and data["first_divergence"] is None and data["matched"] >= 10
    refused = cli("compare", str(path), str(path), "--eager")
    assert refused.returncode != 0 and "A must be a PyTorch model" in refused.stderr
