"""The static checks a model the app wrote passes before anything runs it (Export's model, Upgrade's new version):
onnx's full checker and strict shape inference, each kept as a Check whose words are notes (core.notes)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from core.i18n import N_
from core.notes import Check, Note, note

if TYPE_CHECKING:
    import onnx

__all__ = ["CHECKER", "SHAPES_FAILED", "STRICT_SHAPES", "library_said", "onnx_checks"]

CHECKER = N_("onnx.checker (full check)")
STRICT_SHAPES, INFERRED = N_("strict shape inference"), N_("every node's output type and shape can be inferred")
SHAPES_FAILED = N_("shape inference failed: {error}")  # Decode's note, and the graph view's


def library_said(exc: Exception) -> Note:
    """What a library said, in its own words (shown as it is): its first line, or the exception's name."""
    return Note.kept(str(exc).strip().splitlines()[0][:400] if str(exc).strip() else type(exc).__name__, "warning")


def onnx_checks(path: Path, valid: str) -> tuple[list[Check], onnx.ModelProto | None]:
    """The full checker and strict shape inference of the model at ``path`` (``valid``: the note a model the checker
    passes gets); returns the checks and the model proto (weights left out), None where onnx cannot read the file
    (the shape inference check then says why)."""
    import onnx

    checks: list[Check] = []
    try:
        onnx.checker.check_model(str(path), full_check=True)
        checks.append(Check(note(CHECKER), True, note(valid)))
    except Exception as exc:
        checks.append(Check(note(CHECKER), False, library_said(exc)))
    proto = None
    try:
        proto = onnx.load_model(str(path), load_external_data=False)
        onnx.shape_inference.infer_shapes(proto, check_type=True, strict_mode=True)
        checks.append(Check(note(STRICT_SHAPES), True, note(INFERRED)))
    except Exception as exc:
        checks.append(Check(note(STRICT_SHAPES), False, library_said(exc)))
    return checks, proto
