"""What Partition is asked and what it answers: provider partitions, real and simulated, and the graph after
each optimization level."""

from __future__ import annotations

from dataclasses import dataclass, field

from core.access import ReadPath, WritePath
from core.i18n import _, ngettext
from core.notes import Note
from core.runtime.placement import CopyNode, NodePlacement
from core.tables import RowFile

__all__ = [
    "ContribOp",
    "Declined",
    "LevelPlacement",
    "LevelResult",
    "LevelsRequest",
    "OptimizationReport",
    "PartitionReport",
    "PartitionRequest",
    "PartitionResult",
    "Rewrite",
    "Subgraph",
]


@dataclass(frozen=True, kw_only=True)
class PartitionRequest:
    """The real partition for ``providers`` (in order of preference, ORT's full names) at ``level``, and
    simulated ones for ``simulate`` (keys of SIMULATED). With ``out_dir`` each report's placements go to a file
    there instead of into the result."""

    path: ReadPath
    providers: list[str] | None = None
    level: str = "all"
    simulate: list[str] | None = None
    out_dir: WritePath = ""
    # the ONNX Runtime build that places it (core.runtime.runtimes); its providers when ``providers`` is None
    runtime: str = "default"
    strict: bool = False  # a provider asked for that is absent, takes nothing or leaves nodes to the CPU: refused
    each_level: bool = False  # the real partition at every optimization level too (``PartitionResult.levels``)
    # the model optimized at every level too, each level's graph saved here (``PartitionResult.optimization``), in
    # the same worker: the ALL level's from the partition's own session where it is the session that level builds
    # (the CPU provider alone at ALL), so that it is built once
    levels_dir: WritePath = ""


@dataclass(frozen=True, kw_only=True)
class LevelsRequest:
    """The model optimized at each of ``levels`` (every level when None), each saved in ``out_dir``."""

    path: ReadPath
    out_dir: WritePath = ""
    levels: list[str] | None = None


@dataclass(kw_only=True)
class Subgraph:
    """A connected piece of the main graph that runs on one provider."""

    index: int
    provider: str
    nodes: int
    ops: dict[str, int]
    first: str
    last: str


@dataclass(kw_only=True)
class Declined:
    """A node a provider asked for did not take, where it went, and why (core.partition.declined)."""

    name: str
    op_type: str
    provider: str  # the provider that declined it
    placed: str  # the provider that runs it
    reason: Note
    source: str  # where the reason comes from: "log" (ORT's), "alone" or "context" (tried alone), "untried"


@dataclass(kw_only=True)
class LevelPlacement:
    """The real partition at one optimization level, in numbers (the nodes as ORT has them at that level)."""

    level: str  # DISABLE_ALL, BASIC, ...
    providers: dict[str, int]  # provider -> nodes of the main graph
    pieces: dict[str, int]  # provider -> connected pieces it runs
    declined: int  # nodes a provider asked for first did not take
    copies: list[str]  # the Memcpy nodes ORT added, by name


@dataclass(kw_only=True)
class ContribOp:
    """An op of ONNX Runtime's own domains (com.microsoft: GroupQueryAttention, MatMulNBits, SkipLayerNormalization,
    the fusions of its optimizer), which no other runtime runs, and where its nodes run."""

    op: str  # "com.microsoft:GroupQueryAttention"
    nodes: int
    providers: dict[str, int] = field(default_factory=dict)  # provider ("": runs nowhere) -> nodes, the most first
    added: int = 0  # of them, put in by ONNX Runtime's optimizer (a fusion), not in the model as written


@dataclass(kw_only=True)
class PartitionReport:
    title: Note  # "This machine" or "NNAPI (simulated)" (core.partition.words)
    simulated: bool
    providers_requested: list[str]
    providers_used: list[str]
    level: str
    nodes: list[NodePlacement]  # empty when they were written to ``node_rows``
    providers: dict[str, int] = field(default_factory=dict)  # provider -> nodes of the main graph
    subgraphs: list[Subgraph] = field(default_factory=list)
    fallback: list[str] = field(default_factory=list)  # nodes that went to CPU although another provider came first
    copies: list[CopyNode] = field(default_factory=list)
    log: list[str] = field(default_factory=list)
    unsupported_ops: list[str] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)  # said where shown (core.notes)
    summary: str = ""  # in English, for the command line's JSON (the page writes it anew: core.partition.words)
    node_rows: RowFile | None = None  # every node's placement, in the job's folder (when it was given one)
    node_total: int = 0  # placements, of every graph and those ORT added
    main_providers: list[str] = field(default_factory=list)  # by main-graph node index; "" runs nowhere
    node_providers: list[str] = field(default_factory=list)  # the providers (and "") the placements name
    declined: list[Declined] = field(default_factory=list)  # with the reason each provider gave, or was found
    contrib: list[ContribOp] = field(default_factory=list)  # ONNX Runtime's own ops, and where they run


@dataclass(kw_only=True)
class PartitionResult:
    model: str
    node_count: int  # nodes of the main graph
    available: list[str]
    unavailable: dict[str, str]  # requested but not in this build -> what it would take
    reports: list[PartitionReport]
    runtime: str = "default"  # which build placed it (core.runtime.runtimes)
    onnxruntime: str = ""  # that build's version
    levels: list[LevelPlacement] = field(default_factory=list)  # with each_level: the real partition per level
    optimization: OptimizationReport | None = None  # with levels_dir: what the optimizer did at each level
    levels_failed: bool = False  # with levels_dir: the levels could not be made (the partition stands)


@dataclass(kw_only=True)
class Rewrite:
    kind: str  # "fused", "replaced", "layout" (rewritten for a blocked memory layout), "added", "removed"
    before: list[str]  # op types of the original nodes, in graph order
    after: list[str]  # op types of the new nodes ("domain:Op" outside the standard domain)
    nodes_before: list[str]
    nodes_after: list[str]

    @property
    def text(self) -> str:
        """The rewrite in a line, in the current language (op types as they are)."""
        if self.kind == "removed" and self.before == ["Constant"]:
            return _("Constant removed (its value became a weight)")
        # Constant nodes that held a fused node's weights are named by count, not one by one
        ops = [op for op in self.before if op != "Constant"] or self.before
        folded = len(self.before) - len(ops)
        before, after = " + ".join(ops), " + ".join(self.after)
        if self.kind == "added":
            return _("{ops} added").format(ops=after)
        if not folded:
            return _("{ops} removed").format(ops=before) if self.kind == "removed" else f"{before} → {after}"
        extra = ngettext("{count} Constant folded in", "{count} Constants folded in", folded).format(count=folded)
        if self.kind == "removed":
            return _("{ops} removed ({folded})").format(ops=before, folded=extra)
        return _("{before} → {after} ({folded})").format(before=before, after=after, folded=extra)


@dataclass(kw_only=True)
class LevelResult:
    key: str  # disable, basic, extended, layout, all
    name: str  # DISABLE_ALL, BASIC, ...
    node_count: int
    op_counts: dict[str, int]
    rewrites: list[Rewrite]
    transformers: list[str]  # ORT's graph transformers that changed the graph, from its log
    path: str  # the optimized model ORT wrote
    files: list[str]  # the path and, for large models, its external-data file
    size_bytes: int
    warning: Note | None = None  # what a page shows beside the level's download (core.partition.optimize)
    subgraph_nodes: int = 0  # nodes in its If/Loop/Scan bodies, which ORT optimizes too


@dataclass(kw_only=True)
class OptimizationReport:
    original_nodes: int
    original_ops: dict[str, int]
    original_subgraph_nodes: int = 0
    levels: list[LevelResult] = field(default_factory=list)
