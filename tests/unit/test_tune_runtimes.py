"""Tune across runtimes: the runtime and its providers are among the candidates, each runtime's candidates measured in
its own worker with the same harness, the winner's SessionConfig carrying its runtime and providers, and a
configuration saved before it had a runtime still reading as the default runtime's."""

from __future__ import annotations

import json

import pytest

from core.deploy.session import read_tuned
from core.errors import SessionConfigError
from core.runtime.session_config import SessionConfig

SAVED_BEFORE_RUNTIMES = (
    '{"batch": 1, "execution_mode": "sequential", "inter_op_threads": 0, "intra_op_threads": 1, "io_binding": false, '
    '"level": "all", "providers": ["CPUExecutionProvider"], "variant": "fp32"}'
)


def test_a_config_saved_before_runtimes_reads_as_the_default_runtimes_and_round_trips_with_its_runtime() -> None:
    old = SessionConfig.from_json(SAVED_BEFORE_RUNTIMES)
    assert old == SessionConfig(intra_op_threads=1) and old.runtime == "default"
    assert read_tuned(json.dumps({"best": {"settings": json.loads(SAVED_BEFORE_RUNTIMES)}})) == old  # tune --json
    openvino = SessionConfig(runtime="openvino", providers=("OpenVINOExecutionProvider", "CPUExecutionProvider"))
    assert json.loads(openvino.to_json())["runtime"] == "openvino"
    assert SessionConfig.from_json(openvino.to_json()) == openvino
    with pytest.raises(SessionConfigError, match="runtime must name a runtime"):
        SessionConfig.from_json('{"runtime": ""}')
