"""A TorchScript model whose forward() takes a Python int (a sample rate that picks a branch): exported with
the value as a constant, verified against PyTorch, and said so."""

from __future__ import annotations

import json
from pathlib import Path

import onnx
import pytest
import torch

from core.export import default_options
from core.model.intake import IntakeRequest, describe_files
from tests.cli import cli


class RateModel(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.scale = torch.nn.Linear(4, 4)

    def forward(self, x: torch.Tensor, sr: int) -> torch.Tensor:
        if sr == 16000:
            return self.scale(x).relu()
        return self.scale(x).neg()


def _archive(tmp_path: Path) -> Path:
    path = tmp_path / "rate.pt"
    torch.jit.save(torch.jit.script(RateModel().eval()), str(path))
    return path


def test_a_python_int_argument_is_a_scalar_with_a_value(tmp_path: Path) -> None:
    record = describe_files(IntakeRequest(paths=[str(_archive(tmp_path))]))
    x, sr = record.inputs
    assert (x.dtype, x.shape) == ("unknown", None) and (sr.dtype, sr.shape) == ("int", [])
    x.shape = [2, 4]
    options = default_options(record)
    assert options.input_dtypes["sr"] == "int" and options.input_values == {"sr": 16000.0}


def test_the_command_line_exports_it_with_the_value_it_is_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A scripted module keeps the int as a graph input (an int64 scalar) and its branches as an If: both
    branches agree with PyTorch in ONNX Runtime, at the value verified and at the other. Written straight into
    a home folder, which the sandbox never gives a job: the job writes into a folder of its own beside it."""
    import numpy as np
    import onnxruntime as ort

    monkeypatch.setenv("HOME", str(tmp_path))
    archive = _archive(tmp_path)
    out = tmp_path / "rate.onnx"
    done = cli("export", str(archive), "-o", str(out), "--input", "x=2,4", "--value", "sr=8000", "--json")
    assert done.returncode == 0, done.stderr + done.stdout
    report = json.loads(done.stdout)
    assert report["onnx_path"] == str(out) and not list(tmp_path.glob(".export-*"))
    assert all(t["ok"] for t in report["trials"]) and report["trials"][0]["input_shapes"]["sr"] == []
    model = onnx.load(str(out))
    assert [i.name for i in model.graph.input] == ["x", "sr"] and "If" in {n.op_type for n in model.graph.node}
    session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    scripted = torch.jit.load(str(archive))
    x = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)
    for rate in (16000, 8000):
        (got,) = session.run(None, {"x": x, "sr": np.asarray(rate, np.int64)})
        np.testing.assert_allclose(got, scripted(torch.from_numpy(x), rate).detach().numpy(), atol=1e-5)
    done = cli("export", str(archive), "-o", str(tmp_path / "x.onnx"), "--input", "x=2,4", "--value", "rate=1")
    assert done.returncode != 0 and "Python scalar arguments are: sr" in done.stderr
