"""The new version against the original, on the input plan: ONNX Runtime runs the new version; the original runs in
ONNX Runtime where it still opens, else in onnx's reference evaluator (pure numpy, every opset, slow: within a time
budget), else nowhere, and the report says so."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.model.onnx_file import read_external_data
from core.notes import Check, Note, clauses, note, warning
from core.runtime.ort import NUMPY_TYPES, ort_message
from core.runtime.outputs import ATOL, RTOL, OutputDiff, compare_outputs
from core.upgrade import sentences as say
from core.upgrade.repairs import reference_misreads

if TYPE_CHECKING:
    import onnx

__all__ = ["REFERENCE_MAX_BYTES", "Comparison", "compare_versions"]

REFERENCE_MAX_BYTES = 512 << 20  # past this, onnx's reference evaluator is not tried on the original


class _OutOfTime(Exception):
    """The reference evaluator ran past its budget."""


def _typed(session: Any, feed: dict[str, Any]) -> dict[str, Any]:
    """The feed cast to what the session's inputs take."""
    return {
        i.name: feed[i.name].astype(NUMPY_TYPES[i.type]) if i.type in NUMPY_TYPES else feed[i.name]
        for i in session.get_inputs()
        if i.name in feed
    }


def _in_ort(path: str, feed: dict[str, Any]) -> list[Any]:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3  # an old model's warnings are the point, not news
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    return list(session.run(None, _typed(session, feed)))


def _in_reference(model: onnx.ModelProto, folder: Path, feed: dict[str, Any], budget_s: float) -> list[Any]:
    """The original's outputs from onnx's reference evaluator, stopped between two nodes once past ``budget_s``."""
    import onnx
    from onnx.reference import ReferenceEvaluator

    class Timed(ReferenceEvaluator):  # type: ignore[misc]
        deadline = float("inf")

        def _log(self, level: int, pattern: str, *args: Any) -> None:  # called before every node runs
            if time.monotonic() > self.deadline:
                raise _OutOfTime
            super()._log(level, pattern, *args)

    full = onnx.ModelProto()
    full.CopyFrom(model)
    read_external_data(full, Path(folder))  # onnx's loader refuses an upload's data: it has a second hard link
    evaluator = Timed(full)
    evaluator.deadline = time.monotonic() + budget_s
    initializers = {t.name for t in full.graph.initializer}
    names = [i.name for i in full.graph.input if i.name not in initializers]
    return list(evaluator.run(None, {n: feed[n] for n in names if n in feed}))


@dataclass(kw_only=True)
class Comparison:
    """What ran the original (None when nothing could), the checks the comparison adds, the differences, notes."""

    compared_with: Note | None = None
    checks: list[Check] = field(default_factory=list)
    diffs: list[OutputDiff] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)


def _original_outputs(
    original: onnx.ModelProto, path: Path, size_bytes: int, feed: dict[str, Any], budget_s: float, result: Comparison
) -> list[Any] | None:
    try:
        outputs = _in_ort(str(path), feed)
        result.compared_with = note(say.IN_ORT)
        return outputs
    except Exception as exc:
        refused = ort_message(exc)
    if size_bytes > REFERENCE_MAX_BYTES:
        result.notes.append(warning(say.TOO_LARGE, refused=refused[:200], size=round(size_bytes / 2**20)))
        return None
    misread = reference_misreads(original)
    if misread:
        result.notes.append(warning(say.REFERENCE_MISREADS, refused=refused[:200], misread=clauses(misread)))
        return None
    started = time.monotonic()
    try:
        outputs = _in_reference(original, path.parent, feed, budget_s)
    except _OutOfTime:
        why = note(say.OUT_OF_TIME, seconds=f"{budget_s:g}")
    except Exception as exc:
        first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
        why = note(say.REFERENCE_FAILED, error=f"{type(exc).__name__}: {first}")
    else:
        result.compared_with = note(say.IN_REFERENCE)
        result.notes.append(note(say.REFERENCE_RAN, seconds=f"{time.monotonic() - started:.1f}"))
        return outputs
    result.notes.append(warning(say.RUNS_NOWHERE, refused=refused[:200], why=why))
    return None


def compare_versions(
    original: onnx.ModelProto,
    original_path: Path,
    size_bytes: int,
    new_path: Path,
    feed: dict[str, Any],
    budget_s: float,
) -> Comparison:
    """The new version run in ONNX Runtime on ``feed``, and compared with the original (``size_bytes`` with its
    external data) where it runs."""
    import onnx

    from core.runtime.refusals import explain_refusal

    result = Comparison()
    converted = onnx.load_model(str(new_path), load_external_data=False)
    try:
        produced = _in_ort(str(new_path), feed)
    except Exception as exc:
        words = str(explain_refusal(exc, converted, "run the new version"))
        result.checks.append(Check(note(say.RUNS_IN_ORT), False, Note.kept(words[:800], "warning")))
        return result
    result.checks.append(Check(note(say.RUNS_IN_ORT), True, note(say.OPENS_AND_RUNS)))
    expected = _original_outputs(original, original_path, size_bytes, feed, budget_s, result)
    if expected is None or result.compared_with is None:
        return result
    result.diffs = compare_outputs(expected, produced, [o.name for o in converted.graph.output])
    worst = max((d.max_abs for d in result.diffs), default=0.0)
    ok = all(d.ok for d in result.diffs) and len(expected) == len(produced)
    said = say.OUTPUTS_DIFF if ok else say.OUTPUTS_BEYOND
    detail = note(said, count=len(result.diffs), worst=f"{worst:.2e}", atol=f"{ATOL:g}", rtol=f"{RTOL:g}")
    result.checks.append(Check(note(say.MATCHES, what=result.compared_with), ok, detail))
    return result
