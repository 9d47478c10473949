"""What Upgrade takes and gives: the model and the opset to go to; the new version, what changed, and how it was
checked against the original."""

from __future__ import annotations

from dataclasses import dataclass, field

from core.access import ReadPath, WritePath
from core.model.inputs import BenchInput
from core.notes import Check, Note, note
from core.runtime.outputs import OutputDiff
from core.runtime.refusals import DEFAULT_UPGRADE_OPSET
from core.upgrade import sentences as say

__all__ = ["DEFAULT_UPGRADE_OPSET", "OpChange", "UpgradeReport", "UpgradeRequest"]


@dataclass(frozen=True, kw_only=True)
class UpgradeRequest:
    """Upgrade the ONNX model at ``path`` to ai.onnx opset ``opset`` with onnx's version converter, into
    ``out_dir``; check the new version against the original on ``inputs`` (the input plan)."""

    path: ReadPath
    opset: int = DEFAULT_UPGRADE_OPSET
    inputs: list[BenchInput] = field(default_factory=list)
    out_dir: WritePath = ""
    file_name: str = ""  # the new file's name; else the original's stem with ".opsetN"
    reference_budget_s: float = 30.0  # how long onnx's reference evaluator may run the original when ORT cannot


@dataclass(frozen=True, kw_only=True)
class OpChange:
    """One line of "what changed": nodes of one kind replaced, added, removed, or given a newer version."""

    kind: str  # "replaced", "added", "removed", "version", "repaired"
    op: str  # the op (or "Upsample → Resize")
    nodes: int
    text: Note  # the change in words (core.upgrade.sentences)


@dataclass(kw_only=True)
class UpgradeReport:
    """The new version of the model, what the converter changed, and how the new version was checked."""

    ok: bool  # every check passed: the new version may replace the original
    path: str  # the new version
    files: list[str]  # every file of it (the model, its external data)
    model: str  # the original's file name
    opset_before: int
    opset_after: int
    ir_before: int
    ir_after: int
    changes: list[OpChange]
    unchanged_nodes: int  # nodes the converter left as they were
    checks: list[Check]  # what was checked (core.upgrade.sentences)
    compared_with: Note | None  # what ran the original (None when nothing could)
    diffs: list[OutputDiff] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)  # said where shown (core.notes)
    seconds: float = 0.0

    @property
    def summary(self) -> Note:
        """One line: the opsets, how much changed, and how it was checked."""
        changed = sum(c.nodes for c in self.changes if c.kind in ("replaced", "version", "removed"))
        added = sum(c.nodes for c in self.changes if c.kind == "added")
        counts = {
            "before": self.opset_before,
            "after": self.opset_after,
            "changed": changed,
            "added": added,
            "unchanged": self.unchanged_nodes,
        }
        if self.compared_with is None:
            return note(say.SUMMARY_UNCOMPARED if self.ok else say.SUMMARY_UNCOMPARED_FAILED, **counts)
        return note(say.SUMMARY if self.ok else say.SUMMARY_FAILED, **counts, compared=self.compared_with)
