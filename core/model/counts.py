"""How many of each thing a model holds, counted before anything is done per item, and held to this instance's
limits: a 15 MB file can hold a million empty initializers, and every step after parsing (checks, the checker,
shape inference, records per tensor) costs microseconds each. Counting costs next to nothing (a repeated field
knows its length); a count past its limit is refused with the count, what it counts and the way out.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.errors import LimitExceededError, brief
from core.i18n import N_, _, number
from core.model.proto import attribute_subgraphs, walk_graphs
from core.settings import IntakeLimits

if TYPE_CHECKING:
    from collections.abc import Sequence

    from onnx import GraphProto, ModelProto, NodeProto

__all__ = ["FIXED_LIMITS", "ModelCounts", "check_counts", "count_model"]

# What no real model comes near, whatever the instance: a fixed cap, not a setting. (Exporters write one opset
# import per domain and a few metadata entries; a large torch.export model has a few thousand local functions.)
FIXED_LIMITS = {
    "local functions": 10_000,
    "training infos": 100,
    "device configurations": 100,
    "opset imports": 1_000,
    "metadata entries": 10_000,  # of the model, its graphs, functions and nodes
    "attributes on one node": 1_000,  # a page lists a node's attributes in one table
}
_SETTINGS = {  # what -> (the IntakeLimits field, the setting that raises it)
    "nodes": ("max_nodes", "WORKBENCH_MAX_NODES"),
    "initializers": ("max_initializers", "WORKBENCH_MAX_INITIALIZERS"),
    "value infos": ("max_value_infos", "WORKBENCH_MAX_VALUE_INFOS"),
    "node attributes": ("max_attributes", "WORKBENCH_MAX_ATTRIBUTES"),
}
_WHAT = {  # how a message names what a count counts (translated where the message is made)
    "nodes": N_("nodes"),
    "local functions": N_("local functions"),
    "training infos": N_("training infos"),
    "device configurations": N_("device configurations"),
    "opset imports": N_("opset imports"),
    "metadata entries": N_("metadata entries"),
    "attributes on one node": N_("attributes on one node"),
    "initializers": N_("initializers (sparse ones included)"),
    "value infos": N_(
        "value infos (graph inputs, outputs and value_info entries, quantization annotations, training bindings)"
    ),
    "node attributes": N_("node attributes"),
}


@dataclass(frozen=True, kw_only=True)
class ModelCounts:
    """What a model holds, every graph at any depth (training graphs too) and every local function counted."""

    nodes: int
    initializers: int  # sparse initializers included
    value_infos: int  # the graphs' inputs, outputs, value_info entries, quantization annotations, training bindings
    attributes: int
    metadata: int  # entries of the model, its graphs, functions and nodes
    subgraphs: int  # If/Loop/Scan bodies, in the graphs and in the functions
    most_attributes: int  # on any one node

    def by_name(self) -> dict[str, int]:
        return {
            "nodes": self.nodes,
            "initializers": self.initializers,
            "value infos": self.value_infos,
            "node attributes": self.attributes,
            "metadata entries": self.metadata,
            "attributes on one node": self.most_attributes,
        }


def _top_level(model: ModelProto) -> Iterator[tuple[str, int]]:
    """Counts read from lengths alone, in an order that never walks a list before its length has been checked:
    a million local functions, or a million nodes in the main graph, are refused before anything is walked."""
    yield "local functions", len(model.functions)
    yield "training infos", len(model.training_info)
    yield "device configurations", len(model.configuration)
    yield "opset imports", len(model.opset_import) + sum(len(f.opset_import) for f in model.functions)
    yield "metadata entries", len(model.metadata_props) + sum(len(f.metadata_props) for f in model.functions)
    graph = model.graph
    yield "nodes", len(graph.node) + sum(len(f.node) for f in model.functions)
    yield "initializers", len(graph.initializer) + len(graph.sparse_initializer)
    yield "value infos", len(graph.input) + len(graph.output) + len(graph.value_info)


def _count_nodes(nodes: Sequence[NodeProto], totals: dict[str, int]) -> None:
    attributes = most = metadata = 0
    for node in nodes:
        count = len(node.attribute)
        attributes += count
        most = max(most, count)
        metadata += len(node.metadata_props)
    totals["attributes"] += attributes
    totals["metadata"] += metadata
    totals["most_attributes"] = max(totals["most_attributes"], most)


def _count_graph(graph: GraphProto, totals: dict[str, int]) -> None:
    totals["nodes"] += len(graph.node)
    totals["initializers"] += len(graph.initializer) + len(graph.sparse_initializer)
    totals["value_infos"] += (
        len(graph.input) + len(graph.output) + len(graph.value_info) + len(graph.quantization_annotation)
    )
    totals["metadata"] += len(graph.metadata_props)
    _count_nodes(graph.node, totals)


def count_model(model: ModelProto) -> ModelCounts:
    """The counts of ``model`` (a ModelProto): time linear in its nodes, nothing per tensor or value."""
    totals = dict.fromkeys(
        ("nodes", "initializers", "value_infos", "attributes", "metadata", "subgraphs", "most_attributes"), 0
    )
    totals["metadata"] = len(model.metadata_props)
    tops = [model.graph]
    for info in model.training_info:
        tops += [getattr(info, part) for part in ("initialization", "algorithm") if info.HasField(part)]
        totals["value_infos"] += len(info.initialization_binding) + len(info.update_binding)
    for top in tops:
        for visit in walk_graphs(top):
            _count_graph(visit.graph, totals)
            totals["subgraphs"] += visit.owner is not None
    for function in model.functions:
        totals["nodes"] += len(function.node)
        totals["attributes"] += len(function.attribute_proto)
        totals["value_infos"] += len(function.value_info)
        totals["metadata"] += len(function.metadata_props)
        _count_nodes(function.node, totals)
        for node in function.node:
            for _attribute, sub in attribute_subgraphs(node):
                for visit in walk_graphs(sub):
                    _count_graph(visit.graph, totals)
                    totals["subgraphs"] += 1
    return ModelCounts(**totals)


def _refuse(name: str, what: str, count: int, limits: IntakeLimits) -> None:
    """A LimitExceededError when ``count`` of ``what`` is past its limit: the setting's, or the fixed cap."""
    if what in _SETTINGS:
        field, setting = _SETTINGS[what]
        limit = getattr(limits, field)
        if count > limit:
            raise LimitExceededError(
                _(
                    "'{name}' holds {count} {what}; this instance accepts at most {limit}. Its operator "
                    "can raise that with the setting {setting}; a model that really has this many is "
                    "best run locally."
                ).format(
                    name=brief(name),
                    count=number(count),
                    what=_(_WHAT.get(what, what)),
                    limit=number(limit),
                    setting=setting,
                )
            )
    elif count > FIXED_LIMITS[what]:
        raise LimitExceededError(
            _(
                "'{name}' holds {count} {what}; no model needs more than {most}, so it was not read "
                "further. The file may be crafted; re-export the model from its source."
            ).format(
                name=brief(name), count=number(count), what=_(_WHAT.get(what, what)), most=number(FIXED_LIMITS[what])
            )
        )


def check_counts(model: ModelProto, name: str, limits: IntakeLimits) -> ModelCounts:
    """The model's counts, or a LimitExceededError naming the first one past its limit. What the top-level
    lengths say is checked first, so that a list past its limit is never walked."""
    for what, count in _top_level(model):
        _refuse(name, what, count, limits)
    counts = count_model(model)
    for what, count in counts.by_name().items():
        _refuse(name, what, count, limits)
    return counts
