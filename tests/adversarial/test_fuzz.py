"""Fuzzing: valid models' bytes mutated at random and fed to intake and decode in the worker. The worker may
refuse or even crash; the caller never sees anything but the documented error types. JobFailed, the error for
an unexpected exception inside a job, is a bug here: every way a file can be wrong must have its own message."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from core.decode import DecodeRequest
from core.errors import JobFailed, WorkbenchError
from core.jobs import DECODE, INTAKE, Job, run
from core.model.intake import IntakeRequest
from tests import builders

SEEDS = {
    "chain": builders.chain_model(12).SerializeToString(),
    "control_flow": builders.control_flow_model().SerializeToString(),
    "constant_weights": builders.constant_weights_model().SerializeToString(),
    "mixed_inputs": builders.mixed_inputs_model().SerializeToString(),
}


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    data = bytearray(SEEDS[draw(st.sampled_from(sorted(SEEDS)))])
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["flip", "set", "cut", "insert", "delete"]))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if kind == "flip" and data:
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif kind == "set" and data:
            data[at] = draw(st.sampled_from([0x00, 0xFF, 0x7F, 0x80, 0x08, 0x12, 0x3A]))
        elif kind == "cut":
            del data[at:]
        elif kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=16))
        elif kind == "delete":
            del data[at : at + draw(st.integers(1, 8))]
    return bytes(data)


def _only_documented_errors(job: Job[Any, Any], request: Any) -> None:
    try:
        run(job, request)
        event("accepted")
    except JobFailed as exc:  # an exception the job did not expect: a bug, not a message for the user
        raise AssertionError(f"{job.name} failed unexpectedly: {exc}\n{exc.details}") from exc
    except WorkbenchError as exc:
        event(type(exc).__name__)


FUZZ = settings(
    max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@FUZZ
@given(data=mutated())
def test_intake_raises_only_documented_errors(data: bytes, tmp_path_factory: pytest.TempPathFactory) -> None:
    path = tmp_path_factory.mktemp("fuzz") / "model.onnx"
    path.write_bytes(data)
    _only_documented_errors(INTAKE, IntakeRequest(paths=[str(path)]))


@FUZZ
@given(data=mutated())
def test_decode_raises_only_documented_errors(data: bytes, tmp_path_factory: pytest.TempPathFactory) -> None:
    path = Path(tmp_path_factory.mktemp("fuzz")) / "model.onnx"
    path.write_bytes(data)
    _only_documented_errors(DECODE, DecodeRequest(path=str(path), with_text=True))
