"""Why a provider declined a node: from ONNX Runtime's verbose log where the provider says so, else tried alone.

Runs in the worker, in the runtime that placed the model. A node placed on a later provider than the first one asked
for (OpenVINO first, the CPU provider last) was declined by each provider before it. Some providers name what they
refuse in ORT's verbose log (CUDA: no kernel for an op type, or a kernel that does not take the node; ORT itself:
shape computations it keeps on the CPU); their lines are matched by the rows of ``LOG_REASONS``. Others say nothing
there (OpenVINO's release builds log no reason at any verbosity): such a node is tried alone, as a one-node model
with the inputs it has here (their types and shapes, its constant inputs as constants), which tells a node the
provider cannot run at all (its op, types or shapes) from one it runs but left out of this graph. The tries are
bounded (``MAX_TRIES`` kinds of node, ``TRY_BUDGET_S``); past them a node's reason says it was not tried.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from core.i18n import N_
from core.model.proto import dtype_name, tensor_nbytes, type_spec
from core.notes import Note, note
from core.partition.records import Declined
from core.runtime.ort import ort_message, session_options, short_name
from core.runtime.placement import NodePlacement
from core.runtime.provider_options import CPU, session_providers

if TYPE_CHECKING:
    import onnx

__all__ = [
    "ALONE",
    "CONTEXT",
    "LOG_REASONS",
    "MAX_DECLINED",
    "MAX_TRIES",
    "NOT_TRIED",
    "LogReason",
    "declined_nodes",
    "log_reasons",
]

MAX_DECLINED = 2000  # nodes listed with a reason (the counts per provider cover every node)
MAX_TRIES = 12  # kinds of node (op, domain, input types and shapes) tried alone
TRY_BUDGET_S = 20.0  # for all tries together
MAX_CONSTANT_BYTES = 16 << 20  # a constant input larger than this is tried as an input of its type and shape

NO_KERNEL = N_("{provider} has no kernel for {op} (ORT's log).")
KERNEL_REFUSES = N_(
    "{provider} has a kernel for {op} but it does not take this node: its types or attributes (ORT's log)."
)
CPU_FASTER = N_(
    "ONNX Runtime kept it on the CPU: a small computation on shapes, faster there than on {provider} (ORT's log)."
)
ALONE = N_(
    "{provider} does not take {op} with inputs {inputs}, even alone: it cannot run this op, these types or these "
    "shapes (tried alone; ORT's log gives no reason)."
)
CONTEXT = N_(
    "{provider} takes {op} with inputs {inputs} alone, but left it to {placed} in this graph (tried alone; ORT's log "
    "gives no reason)."
)
UNTRIED = N_("{provider} gave no reason in ORT's log, and {op} could not be tried alone: {why}")
NOT_TRIED = N_("{provider} gave no reason in ORT's log; {op} was not tried alone (at most {limit} kinds of node are).")


@dataclass(frozen=True, kw_only=True)
class LogReason:
    """A line of ORT's verbose log in which a provider (or ORT, for any provider) says it does not take a node."""

    provider: str  # "" for a line ORT writes for whichever provider
    pattern: re.Pattern[str]  # with groups "name" (the node's) and "op" where the line names it
    reason: str  # a note's key: its values are provider and op


LOG_REASONS: tuple[LogReason, ...] = (
    LogReason(
        provider="CUDAExecutionProvider",
        pattern=re.compile(r"CUDA kernel not found in registries for Op type: (?P<op>\S+) node name: (?P<name>.*)$"),
        reason=NO_KERNEL,
    ),
    LogReason(
        provider="CUDAExecutionProvider",
        pattern=re.compile(
            r"CUDA kernel not supported\. Fallback to CPU execution provider for Op type: (?P<op>\S+) node name: "
            r"(?P<name>.*)$"
        ),
        reason=KERNEL_REFUSES,
    ),
    LogReason(
        provider="",
        pattern=re.compile(r"Force fallback to CPU execution for node: (?P<name>.*?) because the CPU execution path"),
        reason=CPU_FASTER,
    ),
)


def log_reasons(log: Iterable[tuple[int, str, str]]) -> dict[tuple[str, str], str]:
    """(provider, node name) -> the reason's key, for every line of ``log`` a row of LOG_REASONS matches ("" as the
    provider: ORT's, for whichever provider came first)."""
    found: dict[tuple[str, str], str] = {}
    for _severity, _location, message in log:
        for line in message.splitlines():
            for row in LOG_REASONS:
                matched = row.pattern.search(line)
                if matched:
                    found.setdefault((row.provider, matched.group("name").strip()), row.reason)
    return found


def _inputs_text(types: list[tuple[str, list[int | str] | None]]) -> str:
    return ", ".join(f"{dtype}{shape if shape is not None else '[?]'}".replace(" ", "") for dtype, shape in types)


class _Trials:
    """One-node models tried alone on the runtime, each kind once, within the bounds."""

    def __init__(self, model: onnx.ModelProto) -> None:
        import onnx

        self.model = model
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False)
        graph = inferred.graph
        self.types = {v.name: v.type for v in [*graph.input, *graph.value_info, *graph.output]}
        self.constants: dict[str, onnx.TensorProto] = {t.name: t for t in graph.initializer}
        for node in graph.node:  # Constant nodes: ORT makes their values weights, so they are constants alone too
            constant = node.op_type == "Constant" and node.domain in ("", "ai.onnx")
            if constant and node.attribute and node.attribute[0].name == "value":
                tensor = onnx.TensorProto()
                tensor.CopyFrom(node.attribute[0].t)
                tensor.name = node.output[0]
                self.constants[node.output[0]] = tensor
        self.results: dict[tuple[Any, ...], tuple[bool | None, str]] = {}
        self.started = time.monotonic()

    def input_types(self, node: onnx.NodeProto) -> list[tuple[str, list[int | str] | None]]:
        found: list[tuple[str, list[int | str] | None]] = []
        for name in (n for n in node.input if n):
            if name in self.constants:
                tensor = self.constants[name]
                found.append((dtype_name(tensor.data_type), list(tensor.dims)))
            elif name in self.types:
                found.append(type_spec(self.types[name]))
            else:
                found.append(("?", None))
        return found

    def taken_alone(self, node: onnx.NodeProto, provider: str) -> tuple[bool | None, str]:
        """(whether ``provider`` takes ``node`` alone, or None when it was not tried; why not tried)."""
        kind = (provider, node.op_type, node.domain, repr(self.input_types(node)), repr(node.attribute))
        if kind in self.results:
            return self.results[kind]
        if len(self.results) >= MAX_TRIES or time.monotonic() - self.started > TRY_BUDGET_S:
            return None, ""
        self.results[kind] = self._try(node, provider)
        return self.results[kind]

    def _alone(self, node: onnx.NodeProto) -> onnx.ModelProto | str:
        import onnx
        from onnx import helper

        inputs, constants, size = [], [], 0
        for name in dict.fromkeys(n for n in node.input if n):
            tensor = self.constants.get(name)
            if tensor is not None and size + tensor_nbytes(tensor) <= MAX_CONSTANT_BYTES:
                constants.append(tensor)
                size += tensor_nbytes(tensor)
            elif tensor is not None:
                inputs.append(helper.make_tensor_value_info(name, tensor.data_type, list(tensor.dims)))
            elif name in self.types:
                inputs.append(helper.make_value_info(name, self.types[name]))
            else:
                return f"the type of its input {name} is not known"
        outputs = []
        for name in (n for n in node.output if n):
            if name not in self.types or not self.types[name].HasField("tensor_type"):
                return f"the type of its output {name} is not known"
            outputs.append(helper.make_value_info(name, self.types[name]))
        copy = onnx.NodeProto()
        copy.CopyFrom(node)
        graph = helper.make_graph([copy], "alone", inputs, outputs, initializer=constants)
        return helper.make_model(graph, opset_imports=list(self.model.opset_import), ir_version=self.model.ir_version)

    def _try(self, node: onnx.NodeProto, provider: str) -> tuple[bool | None, str]:
        import onnxruntime as ort

        alone = self._alone(node)
        if isinstance(alone, str):
            return None, alone
        options = session_options("disable")
        options.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
        options.log_severity_level = 3
        try:
            session = ort.InferenceSession(
                alone.SerializeToString(), options, providers=session_providers([provider, CPU])
            )
            groups = session.get_provider_graph_assignment_info()
        except Exception as exc:  # a node that is no model on its own (it needs its graph's context)
            return None, ort_message(exc)[:200]
        return any(g.ep_name == provider and len(g.get_nodes()) > 0 for g in groups), ""


def _reason(
    trials: _Trials, node: onnx.NodeProto, provider: str, placed: str, logged: dict[tuple[str, str], str]
) -> tuple[Note, str]:
    """Why ``provider`` declined ``node`` (which went to ``placed``), and where that was learnt."""
    values = {"provider": short_name(provider), "op": node.op_type}
    key = logged.get((provider, node.name)) or logged.get(("", node.name))
    if key is not None:
        return note(key, **values), "log"
    taken, why = trials.taken_alone(node, provider)
    inputs = _inputs_text(trials.input_types(node))
    if taken is None and why:
        return note(UNTRIED, **values, why=why), "untried"
    if taken is None:
        return note(NOT_TRIED, **values, limit=MAX_TRIES), "untried"
    if taken:
        return note(CONTEXT, **values, inputs=inputs, placed=short_name(placed)), "context"
    return note(ALONE, **values, inputs=inputs), "alone"


def declined_nodes(
    model: onnx.ModelProto,
    placements: list[NodePlacement],
    requested: list[str],
    log: list[tuple[int, str, str]],
) -> list[Declined]:
    """Each main-graph node placed after a provider asked before it, once per provider that declined it, with the
    reason (at most MAX_DECLINED)."""
    order = {p: k for k, p in enumerate(requested)}
    nodes = model.graph.node
    logged = log_reasons(log)
    trials: _Trials | None = None
    found: list[Declined] = []
    for placement in placements:
        if placement.index < 0 or not placement.provider or placement.provider not in order:
            continue
        for provider in requested[: order[placement.provider]]:
            if provider == CPU or len(found) >= MAX_DECLINED:
                continue
            trials = trials or _Trials(model)
            node = nodes[placement.index]
            reason, source = _reason(trials, node, provider, placement.provider, logged)
            found.append(
                Declined(
                    name=node.name or f"{node.op_type} #{placement.index}",
                    op_type=node.op_type,
                    provider=provider,
                    placed=placement.provider,
                    reason=reason,
                    source=source,
                )
            )
    return found
