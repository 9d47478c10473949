"""Saved torch.export programs (.pt2) with dynamic dims, exported as a person saved them (issue 50, item 6): dims
written as expressions (``2*h``, as torch.export's own suggested fixes write them) and Dim.AUTO programs whose guards
forbid the size the check at another size first picks."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest
import torch

from core.export import ExportRequest, default_options
from core.export.exporter import export_model
from core.export.verify import UNCHECKED
from core.model.intake import IntakeRequest, describe_files
from core.model.torchload import source_of
from core.notes import say
from tests.cli import cli


class _Halves(torch.nn.Module):
    """A convolution, then rows taken in pairs: the height must be even (torch.export guards it)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        b, c, h, w = y.shape
        return y.reshape(b, c, h // 2, 2, w).sum(3)


def _program(path: Path, dims: dict[int, object], model: torch.nn.Module | None = None) -> Path:
    exported = torch.export.export(model or _Halves(), (torch.randn(1, 3, 64, 64),), dynamic_shapes=(dims,))
    torch.export.save(exported, str(path))
    return path


def _export(path: Path, out: Path):  # type: ignore[no-untyped-def]
    record = describe_files(IntakeRequest(paths=[str(path)]))
    request = ExportRequest(source=source_of(record), options=default_options(record), out_dir=str(out),
                            file_name="model.onnx")  # fmt: skip
    return export_model(request)


def test_dims_written_as_expressions_export_and_every_size_is_checked(tmp_path: Path) -> None:
    """Dims written 2*h failed with "expected sympy.Symbol … try the legacy exporter" (and the legacy exporter with
    the same): the program is traced again from its module with those axes automatic, and says so."""
    h, w = torch.export.Dim("h", min=2, max=512), torch.export.Dim("w", min=2, max=512)
    report = _export(_program(tmp_path / "even.pt2", {2: 2 * h, 3: 2 * w}), tmp_path)
    assert report.usable, [say(t.error) for t in report.trials if t.error is not None]
    assert len(report.trials) == 3 and all(t.ok for t in report.trials)
    assert any("written as expressions (2*" in say(n) for n in report.warnings)
    dims = onnx.load(report.onnx_path).graph.input[0].type.tensor_type.shape.dim
    assert [d.dim_value or "dynamic" for d in dims] == [1, 3, "dynamic", "dynamic"]


def test_a_size_the_programs_guards_forbid_is_replaced_by_one_they_allow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With Dim.AUTO the export worked, but the check at another size took a height of 69, which the program's own
    guard (an even height) forbids, and reported FAIL with exit 1: the next size it allows is checked instead."""
    path = _program(tmp_path / "auto.pt2", {2: torch.export.Dim.AUTO, 3: torch.export.Dim.AUTO})
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    done = cli("export", str(path), "-o", str(tmp_path / "auto.onnx"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "FAIL" not in done.stdout and "matches PyTorch at height = 72" in done.stdout  # 69 is odd


def test_an_axis_whose_guards_allow_no_other_size_is_said_not_checked_and_the_model_stays_usable(
    tmp_path: Path,
) -> None:
    h = torch.export.Dim("h", min=64, max=65)  # the program takes a height of 64 or 65, no other
    report = _export(_program(tmp_path / "narrow.pt2", {2: h}, torch.nn.Conv2d(3, 4, 3, padding=1)), tmp_path)
    (unchecked,) = [t for t in report.trials if t.unchecked is not None]
    assert unchecked.unchecked is not None and unchecked.unchecked.key == UNCHECKED and not unchecked.ok
    assert "at every size tried (69, 72, 80, 96, 128, 56, 48, 32)" in say(unchecked.unchecked)
    assert report.usable and not report.ok  # the export is not at fault, and the axis is not proven either (exit 1)
