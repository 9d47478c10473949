"""How many of each thing a model holds, counted before anything is done per item, and held to this instance's
limits: a 15 MB file can hold a million empty initializers, and every step after parsing (checks, the checker,
shape inference, records per tensor) costs microseconds each. Counting costs next to nothing (a repeated field
knows its length); a count past its limit is refused with the count, what it counts and the way out.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from core.errors import LimitExceededError, brief
from core.model.proto import attribute_subgraphs, walk_graphs
from core.settings import IntakeLimits

__all__ = ["FIXED_LIMITS", "ModelCounts", "check_counts", "count_model"]

# What no real model comes near, whatever the instance: a fixed cap, not a setting. (Exporters write one opset
# import per domain and a few metadata entries; a large torch.export model has a few thousand local functions.)
FIXED_LIMITS = {
    "local functions": 10_000,
    "metadata entries": 10_000,
    "opset imports": 1_000,
    "attributes on one node": 1_000,  # a page lists a node's attributes in one table
}


@dataclass(frozen=True, kw_only=True)
class ModelCounts:
    """What a model holds, every graph at any depth and every local function's body counted."""

    nodes: int
    initializers: int  # sparse initializers included
    value_infos: int  # the graphs' inputs, outputs and value_info entries
    attributes: int
    subgraphs: int  # If/Loop/Scan bodies, in the graphs and in the functions
    most_attributes: int  # on any one node

    def limited(self, limits: IntakeLimits) -> list[tuple[str, int, int, str]]:
        """(what, count, limit, setting) for each count a setting limits."""
        return [
            ("nodes", self.nodes, limits.max_nodes, "WORKBENCH_MAX_NODES"),
            ("initializers", self.initializers, limits.max_initializers, "WORKBENCH_MAX_INITIALIZERS"),
            ("value infos (graph inputs, outputs and value_info)", self.value_infos, limits.max_value_infos,
             "WORKBENCH_MAX_VALUE_INFOS"),
            ("node attributes", self.attributes, limits.max_attributes, "WORKBENCH_MAX_ATTRIBUTES"),
        ]  # fmt: skip


def _fixed_counts(model: Any) -> Iterator[tuple[str, int]]:
    """The counts with fixed caps, in an order that never walks a list before its length has been checked."""
    yield "local functions", len(model.functions)
    yield "metadata entries", len(model.metadata_props)
    yield "opset imports", len(model.opset_import) + sum(len(f.opset_import) for f in model.functions)


def _graph_counts(graph: Any, totals: dict[str, int]) -> None:
    totals["nodes"] += len(graph.node)
    totals["initializers"] += len(graph.initializer) + len(graph.sparse_initializer)
    totals["value_infos"] += len(graph.input) + len(graph.output) + len(graph.value_info)
    per_node = [len(node.attribute) for node in graph.node]
    totals["attributes"] += sum(per_node)
    totals["most_attributes"] = max(totals["most_attributes"], max(per_node, default=0))


def count_model(model: Any) -> ModelCounts:
    """The counts of ``model`` (a ModelProto): time linear in its nodes, nothing per tensor or value."""
    totals = dict.fromkeys(("nodes", "initializers", "value_infos", "attributes", "subgraphs", "most_attributes"), 0)
    for visit in walk_graphs(model):
        _graph_counts(visit.graph, totals)
        totals["subgraphs"] += visit.owner is not None
    for function in model.functions:
        totals["nodes"] += len(function.node)
        per_node = [len(node.attribute) for node in function.node]
        totals["attributes"] += sum(per_node) + len(function.attribute_proto)
        totals["most_attributes"] = max(totals["most_attributes"], max(per_node, default=0))
        totals["value_infos"] += len(getattr(function, "value_info", ()))
        for node in function.node:
            for _, sub in attribute_subgraphs(node):
                for visit in walk_graphs(sub):
                    _graph_counts(visit.graph, totals)
                    totals["subgraphs"] += 1
    return ModelCounts(**totals)


def check_counts(model: Any, name: str, limits: IntakeLimits) -> ModelCounts:
    """The model's counts, or a LimitExceededError naming the first one past its limit. The fixed caps are
    checked first, from the lengths of top-level fields alone, so that a million local functions are not walked."""
    for what, count in _fixed_counts(model):
        _refuse_fixed(name, what, count)
    counts = count_model(model)
    for what, count, limit, setting in counts.limited(limits):
        if count > limit:
            raise LimitExceededError(
                f"'{brief(name)}' holds {count:,} {what}; this instance accepts at most {limit:,}. Its operator "
                f"can raise that with the setting {setting}; a model that really has this many is best run locally."
            )
    _refuse_fixed(name, "attributes on one node", counts.most_attributes)
    return counts


def _refuse_fixed(name: str, what: str, count: int) -> None:
    if count > FIXED_LIMITS[what]:
        raise LimitExceededError(
            f"'{brief(name)}' holds {count:,} {what}; no model needs more than {FIXED_LIMITS[what]:,}, so it was "
            "not read further. The file may be crafted; re-export the model from its source."
        )
