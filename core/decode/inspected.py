"""The ``inspect`` command's job: a model's files recognised and, when they are ONNX, decoded, in one worker.

Recognising the files (core.model.intake) and decoding the model each need a sandboxed worker with onnx imported;
one worker doing both halves a command's fixed cost (issue #51), and the bytes are still opened only there.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.decode.records import DecodedModel, DecodeRequest
from core.model.intake_request import IntakeRequest
from core.model.records import ModelRecord
from core.settings import IntakeLimits

__all__ = ["Inspected", "inspect_files"]


@dataclass(kw_only=True)
class Inspected:
    """A model's record, and its decoding when it is an ONNX model (None for a folder's card or a PyTorch file)."""

    record: ModelRecord
    decoded: DecodedModel | None = None


def inspect_files(request: IntakeRequest, limits: IntakeLimits | None = None) -> Inspected:
    """The record of the files ``request`` names (refused as the Model page refuses them) and, for an ONNX model,
    what Decode reads of it (without the text form). As a job, ``limits`` are the settings' of whoever runs it."""
    from core.decode.decoder import decode_model
    from core.model.intake import describe_files

    record = describe_files(request, limits)
    if record.format != "onnx":
        return Inspected(record=record)
    decoded = decode_model(DecodeRequest(path=record.path, with_text=False), None, limits)
    return Inspected(record=record, decoded=decoded)
