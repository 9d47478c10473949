"""What Upgrade takes and gives: the model and the opset to go to; the new version, what changed, and how it was
checked against the original."""

from __future__ import annotations

from dataclasses import dataclass, field

from core.access import ReadPath, WritePath
from core.model.inputs import BenchInput
from core.runtime.outputs import OutputDiff
from core.runtime.refusals import DEFAULT_UPGRADE_OPSET

__all__ = ["DEFAULT_UPGRADE_OPSET", "OpChange", "UpgradeCheck", "UpgradeReport", "UpgradeRequest"]


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
    text: str  # the change in words


@dataclass(frozen=True)
class UpgradeCheck:
    name: str
    ok: bool
    detail: str = ""


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
    checks: list[UpgradeCheck]
    compared_with: str  # what ran the original ("" when nothing could)
    diffs: list[OutputDiff] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def summary(self) -> str:
        """One line: the opsets, how much changed, and how it was checked."""
        changed = sum(c.nodes for c in self.changes if c.kind in ("replaced", "version", "removed"))
        added = sum(c.nodes for c in self.changes if c.kind == "added")
        verdict = "checked" if self.ok else "did NOT pass its checks"
        how = (
            f"against {self.compared_with}"
            if self.compared_with
            else "by onnx's checker and shape inference only (the original runs nowhere here)"
        )
        return (
            f"opset {self.opset_before} → {self.opset_after}: {changed} node(s) changed, {added} added, "
            f"{self.unchanged_nodes} unchanged; {verdict} {how}"
        )
