"""Hostile models given to the structural diff: an external-data path that leaves the model's folder is refused
before any file is opened, and a model past the server's limits before any node is compared."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest

from core.diff import DiffRequest
from core.diff.differ import diff_models
from core.errors import LimitExceededError, UnsafeModelError
from core.settings import IntakeLimits
from tests.builders import chain_model, set_external_location
from tests.unit.test_diff import small_net


def test_weights_said_to_lie_outside_the_models_folder_are_never_read(tmp_path: Path) -> None:
    (tmp_path / "secret.bin").write_bytes(b"\x01" * 4096)
    folder = tmp_path / "models"
    folder.mkdir()
    onnx.save(small_net(), folder / "a.onnx")
    hostile = small_net()
    set_external_location(hostile, "../secret.bin", length=432)
    onnx.save(hostile, folder / "b.onnx")
    with pytest.raises(UnsafeModelError, match=r"secret\.bin"):
        diff_models(DiffRequest(path_a=str(folder / "a.onnx"), path_b=str(folder / "b.onnx")))


def test_a_model_past_the_servers_node_limit_is_refused_before_it_is_diffed(tmp_path: Path) -> None:
    onnx.save(small_net(), tmp_path / "a.onnx")
    onnx.save(chain_model(50), tmp_path / "b.onnx")
    request = DiffRequest(path_a=str(tmp_path / "a.onnx"), path_b=str(tmp_path / "b.onnx"))
    with pytest.raises(LimitExceededError, match=r"b\.onnx"):
        diff_models(request, limits=IntakeLimits(max_nodes=20))
