"""What a profile finds: where one call's time goes, node by node in ONNX Runtime and layer by layer in PyTorch
eager, and which eager layers became which ONNX Runtime nodes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from core.model.measured import MeasuredModel
from core.notes import Note
from core.runtime.activity import Activity
from core.runtime.machine import Environment
from core.runtime.runtimes import RuntimeChoice

__all__ = [
    "EagerModule",
    "EagerOp",
    "EagerProfile",
    "LayerRow",
    "NodeTime",
    "OpTypeTime",
    "PhaseProfile",
    "ProfileReport",
    "ProfileRequest",
    "ProviderTime",
]


@dataclass(frozen=True, kw_only=True)
class ProfileRequest(RuntimeChoice):
    """Profile ``iterations`` calls of each engine after ``warmup`` at one optimization level (``threads`` 0:
    every core but one); eager only when the model has its PyTorch original. On its runtime (RuntimeChoice),
    ``providers`` are in order of preference (default: the runtime's own, the CPU provider last), and with ``strict``
    a provider that leaves nodes to the CPU provider is refused (session.disable_cpu_ep_fallback). A language model
    (its cache recognised) is profiled in two phases: one prefill of the plan's prompt and one decode step after it."""

    model: MeasuredModel
    level: str = "all"
    threads: int = 0
    batch: int = 1
    iterations: int = 100
    warmup: int = 10
    seed: int = 0


@dataclass(kw_only=True)
class NodeTime:
    """One node of the graph ONNX Runtime ran (after its optimizations), per call."""

    name: str
    op_type: str
    provider: str
    mean_ms: float  # per call: its median run, times the runs per call
    share: float  # of the measured call
    calls: int  # how many times it ran per call (a node inside a Loop runs more than once)
    input_shapes: list[str] = field(default_factory=list)
    output_shapes: list[str] = field(default_factory=list)
    originals: list[str] = field(default_factory=list)  # the model's own nodes it stands for (a fusion: several)
    original_ops: list[str] = field(default_factory=list)
    module: str = ""  # the PyTorch module its first original node came from, when the exporter said so
    modules: list[str] = field(default_factory=list)  # the modules of all its original nodes
    note: Note | None = None  # "fused with its Relu", "inserted by ONNX Runtime (layout)" (core.profile.words)


@dataclass(kw_only=True)
class OpTypeTime:
    op_type: str
    mean_ms: float
    share: float
    nodes: int


@dataclass(kw_only=True)
class ProviderTime:
    """One execution provider's part of a profiled call: its nodes and their time, each as a share."""

    provider: str  # ONNX Runtime's name, e.g. OpenVINOExecutionProvider
    nodes: int
    node_share: float  # of the nodes that ran
    mean_ms: float  # its nodes' time per call
    time_share: float  # of the kernels' time


@dataclass(kw_only=True)
class PhaseProfile:
    """One phase of a language model's generation profiled on its own: the prompt at once (prefill) or one new
    token after it (decode), per op type and its slowest nodes, per call."""

    new_tokens: int  # tokens the call takes: the prompt's length, or 1
    past: int  # positions already in the cache when it runs
    call_ms: float  # the median profiled call, as the caller sees it
    run_ms: float  # ONNX Runtime's own time for it (its "model_run"), median
    kernel_ms: float
    overhead_ms: float
    op_types: list[OpTypeTime]
    nodes: list[NodeTime]  # its slowest nodes (core.profile.phases.TOP_NODES), slowest first


@dataclass(kw_only=True)
class EagerModule:
    """A leaf module of the PyTorch model, per call, in the order it first ran."""

    name: str
    kind: str  # its class, e.g. Conv2d
    mean_ms: float
    share: float
    calls: int  # per call of the model


@dataclass(kw_only=True)
class EagerOp:
    name: str  # an aten op, e.g. aten::conv2d
    mean_ms: float  # self time per call of the model
    share: float
    calls: int


@dataclass(kw_only=True)
class EagerProfile:
    call_ms: float  # one call of the model under the profiler
    modules: list[EagerModule]
    ops: list[EagerOp]
    note: Note | None = None


@dataclass(kw_only=True)
class LayerRow:
    """Eager layers side by side with the ONNX Runtime nodes they became."""

    modules: list[str]  # eager leaf modules (more than one when an exporter folded one into the next)
    kinds: list[str]
    eager_ms: float | None
    ort_ms: float | None
    nodes: list[str]  # ONNX Runtime nodes
    note: list[Note] = field(default_factory=list)  # what happened to them, clauses of one sentence


@dataclass(kw_only=True)
class ProfileReport:
    id: str
    model: str
    model_id: str
    created_at: str
    level: str  # the ONNX Runtime optimization level profiled, e.g. ALL
    provider: str
    threads: int
    batch: int
    iterations: int  # measured calls
    settings: dict[str, Any]  # the inputs, warm-up, seed
    call_ms: float  # one call as the caller sees it (Python included), median of the measured calls
    run_ms: float  # ONNX Runtime's own time for one run (its "model_run"), median
    kernel_ms: float  # the nodes' time summed
    overhead_ms: float  # call_ms - kernel_ms: the runtime around the kernels, copies, Python
    nodes: list[NodeTime]
    op_types: list[OpTypeTime]
    eager: EagerProfile | None
    matched: list[LayerRow]
    environment: Environment
    activity: Activity
    notes: list[Note]
    headline: Note = field(default_factory=lambda: Note(""))  # where the time goes (core.profile.profiler.headline)
    seconds: float = 0.0
    cpu_ms: float = 0.0  # the median call's CPU time, all our threads: beside call_ms, how much it waited or spread
    node_ms: list[float] = field(default_factory=list)  # per node of that graph: the time of what it became
    runtime: str = "default"  # the build of ONNX Runtime that ran it (core.runtime.runtimes)
    providers: list[ProviderTime] = field(default_factory=list)  # each provider's nodes and time, most time first
    # a language model: "prefill" (the call above) and "decode" (one step after it), each profiled apart
    phases: dict[str, PhaseProfile] = field(default_factory=dict)
    eager_decode: EagerProfile | None = None  # and PyTorch eager's decode step after its prefill (``eager``)
