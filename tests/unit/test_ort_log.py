"""ONNX Runtime's log captured while sessions build: the logger is the process's, yet captures open at the same time
in threads beside each other (Partition's session among the levels') and captures nested in one another each get
their own sessions' messages."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from core.runtime.ort import capture_ort_log, capture_session_logs
from core.runtime.placement import placement_lines

Lines = list[tuple[int, str, str]]


RELU = helper.make_model(
    helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    ),
    opset_imports=[helper.make_opsetid("", 17)],
).SerializeToString()


def _build(folder: Path, name: str, logid: str = "") -> None:
    """A session that writes its graph to ``folder``/``name``.onnx: its log's first line (the session's options)
    names that file, which tells its messages from another session's."""
    options = ort.SessionOptions()
    options.log_severity_level = 0
    options.optimized_model_filepath = str(folder / f"{name}.onnx")
    if logid:
        options.logid = logid
    ort.InferenceSession(RELU, options, providers=["CPUExecutionProvider"])


def _said(lines: Lines) -> str:
    return "\n".join(message for _sev, _where, message in lines)


def _beside(*steps: Callable[[threading.Barrier], None]) -> None:
    """Run each step in its own thread, all at once; each opens its capture, waits for the others to have opened
    theirs (the barrier), builds its session, and waits again before closing it."""
    barrier = threading.Barrier(len(steps), timeout=30)
    failed: list[BaseException] = []

    def run(step: Callable[[threading.Barrier], None]) -> None:
        try:
            step(barrier)
        except BaseException as exc:  # raised in the test's thread below
            failed.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=run, args=(step,)) for step in steps]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    if failed:
        raise failed[0]


def test_two_captures_open_at_once_in_two_threads_each_get_only_their_own_sessions_lines(tmp_path: Path) -> None:
    logs: dict[str, Lines] = {"first": [], "second": []}

    def step(name: str) -> Callable[[threading.Barrier], None]:
        def build(barrier: threading.Barrier) -> None:
            with capture_ort_log(logs[name]):
                barrier.wait()
                _build(tmp_path, f"made_by_the_{name}")
                barrier.wait()

        return build

    _beside(step("first"), step("second"))
    for name, other in (("first", "second"), ("second", "first")):
        assert f"made_by_the_{name}" in _said(logs[name]) and f"made_by_the_{other}" not in _said(logs[name])
        assert "Node placements" in "\n".join(placement_lines(logs[name]))  # what Partition reads from it
    assert len(placement_lines(logs["first"])) == len(placement_lines(logs["second"]))  # not both sessions' twice


def test_a_capture_beside_the_levels_session_logs_keeps_its_own_session_and_leaves_theirs_by_logid(
    tmp_path: Path,
) -> None:
    mine: Lines = []
    levels: dict[str, Lines] = {"level-a": [], "level-b": []}

    def partition(barrier: threading.Barrier) -> None:
        with capture_ort_log(mine):
            barrier.wait()
            _build(tmp_path, "the_partitions")
            barrier.wait()

    def level(logid: str) -> Callable[[threading.Barrier], None]:
        def build(barrier: threading.Barrier) -> None:
            barrier.wait()
            _build(tmp_path, f"made_at_{logid}", logid)
            barrier.wait()

        return build

    with capture_session_logs(levels):
        _beside(partition, level("level-a"), level("level-b"))
    assert "the_partitions" in _said(mine) and "made_at_level" not in _said(mine)
    for logid, other in (("level-a", "level-b"), ("level-b", "level-a")):
        assert f"made_at_{logid}" in _said(levels[logid]) and "the_partitions" not in _said(levels[logid])
        assert f"made_at_{other}" not in _said(levels[logid])


def test_a_capture_that_ends_inside_another_leaves_the_outer_one_capturing(tmp_path: Path) -> None:
    outer: Lines = []
    inner: Lines = []
    with capture_ort_log(outer):
        with capture_ort_log(inner, 2):
            _build(tmp_path, "inside")
        _build(tmp_path, "after_the_inner_one")
    assert "inside" in _said(outer) and "after_the_inner_one" in _said(outer)
    assert all(severity >= 2 for severity, _where, _message in inner)  # its own severity, not the outer one's


def test_a_session_built_once_every_capture_has_ended_adds_nothing_to_them(tmp_path: Path) -> None:
    lines: Lines = []
    with capture_ort_log(lines):
        _build(tmp_path, "during")
    kept = list(lines)
    _build(tmp_path, "once_ended")
    assert "during" in _said(kept) and lines == kept


def test_a_capture_whose_callback_could_not_be_set_leaves_no_trace_for_the_next_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A capture that failed to open (ORT refused the callback) stayed counted as open: every later capture in that
    process took the callback for installed already, and got nothing."""
    real = ort.set_default_logger_callback

    def refused(*args: object) -> None:
        raise RuntimeError("refused")

    monkeypatch.setattr(ort, "set_default_logger_callback", refused)
    with pytest.raises(RuntimeError), capture_session_logs({"level-a": []}):
        pass
    monkeypatch.setattr(ort, "set_default_logger_callback", real)
    lines: Lines = []
    with capture_ort_log(lines):
        _build(tmp_path, "after_the_refusal")
    assert "after_the_refusal" in _said(lines)
