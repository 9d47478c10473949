"""The static checks Export and Upgrade run on the model they wrote (core.model.checks): one place, notes for words."""

from __future__ import annotations

from pathlib import Path

from core.model.checks import CHECKER, STRICT_SHAPES, onnx_checks
from core.notes import note
from tests.builders import relu_model, write

VALID = "the test's model is valid ONNX"


def test_a_valid_model_passes_the_checker_and_strict_shape_inference_and_comes_back_as_its_proto(
    tmp_path: Path,
) -> None:
    checks, proto = onnx_checks(write(relu_model(), tmp_path / "relu.onnx"), VALID)
    assert [(c.name.key, c.ok) for c in checks] == [(CHECKER, True), (STRICT_SHAPES, True)]
    assert checks[0].detail == note(VALID) and proto is not None and proto.graph.node[0].op_type == "Relu"


def test_a_file_onnx_cannot_read_fails_both_checks_in_onnxs_own_words_and_gives_no_proto(tmp_path: Path) -> None:
    damaged = tmp_path / "damaged.onnx"
    damaged.write_bytes(b"\x08\x07\x12\xff\xff not a model")
    checks, proto = onnx_checks(damaged, VALID)
    assert [(c.name.key, c.ok) for c in checks] == [(CHECKER, False), (STRICT_SHAPES, False)] and proto is None
    assert all(c.detail is not None and c.detail.severity == "warning" and c.detail.english() for c in checks)
