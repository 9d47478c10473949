"""Colour modes for the graph view beyond op type and dtype: the execution provider of each node (Partition),
what ONNX Runtime's optimizer did to it at a level, and its share of the call in a profile (a heat scale).
Pure data, shared by the app's pages and `python -m core graph --color`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from core.graph.palette import (
    DONE,
    ERROR_BINS,
    ERRORS,
    FIRST_DIVERGENCE,
    LATENCY,
    LATENCY_BINS,
    NOT_TIMED,
    NOWHERE,
    PROVIDERS,
)
from core.graph.records import GraphView
from core.i18n import N_, _

# What the colourings read of other features' reports (features do not import each other): core.profile's
# ProfileReport, core.partition's PartitionReport and OptimizationReport.


class ProfileTimes(Protocol):
    @property
    def node_ms(self) -> list[float]:  # each main-graph node's time in one call
        ...

    @property
    def call_ms(self) -> float: ...

    @property
    def level(self) -> str: ...


class Placements(Protocol):
    @property
    def main_providers(self) -> list[str]:  # by main-graph node index; "" runs nowhere
        ...


class RewriteDone(Protocol):
    @property
    def kind(self) -> str: ...

    @property
    def nodes_before(self) -> list[str]: ...


class LevelDone(Protocol):
    @property
    def key(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def rewrites(self) -> Sequence[RewriteDone]: ...


class OptimizedLevels(Protocol):
    @property
    def levels(self) -> Sequence[LevelDone]: ...


__all__ = [
    "ERROR_BINS",
    "FIRST_DIVERGENCE",
    "LATENCY_BINS",
    "NOT_TIMED",
    "NOWHERE",
    "Colouring",
    "by_index",
    "colouring_json",
    "error_colouring",
    "latency_colouring",
    "latency_colours",
    "level_colouring",
    "provider_colouring",
    "provider_colours",
]

# the latency and error bins, with their names and colours, are core.graph.palette's (ui.charts draws them too)

# what the optimizer did, in the legend's order (a node it kept has the neutral colour of nodes not listed)
_DONE = DONE


@dataclass(kw_only=True)
class Colouring:
    """A colour mode for the graph: each node's category by node name; nodes not named are ``rest``."""

    title: str
    keys: dict[str, str]  # node name -> category
    order: list[str] = field(default_factory=list)  # the legend's order (a scale's bins, fast to slow)
    colours: dict[str, str] = field(default_factory=dict)  # category -> "#rrggbb"; else the palette
    scale: bool = False  # the categories are ordered bins of a heat scale (light to dark red)
    rest: str = "—"  # the legend's name for the nodes ``keys`` does not name
    title_id: str = ""  # the title's catalog entry, when ``title`` fills one with ``title_values``
    title_values: dict[str, str] = field(default_factory=dict)
    # categories a closed group shows when it holds a node of one (the first it holds), not its most frequent
    marked: list[str] = field(default_factory=list)


# the words of the colourings' legends and titles (catalog entries: colouring_json shows them in the reader's
# language; a provider's or op's name stays as it is)
_WORDS = frozenset([NOWHERE, NOT_TIMED, *(b.label for b in LATENCY_BINS), *DONE, FIRST_DIVERGENCE])
_WORDS |= {b.label for b in ERROR_BINS}
_PROVIDER_TITLE, _LEVEL_TITLE, _LATENCY_TITLE = (
    N_("execution provider"),
    N_("what {level} did"),
    N_("latency at {level}"),
)
_IN_A_BODY, _KEPT = N_("inside a body"), N_("kept as it is")
_ERROR_TITLE, _NOT_COMPARED = N_("error against the first model"), N_("not compared")
_TITLES = frozenset([_PROVIDER_TITLE, _LEVEL_TITLE, _LATENCY_TITLE, _IN_A_BODY, _KEPT, _ERROR_TITLE, _NOT_COMPARED])


_TOP_BIN = N_("≥ {share} of the call")  # the top bin's words (a "%" in a catalog entry reads as a format)


def _word(category: str) -> str:
    if category == LATENCY_BINS[0].label:
        return _(_TOP_BIN).format(share="20 %")
    return _(category) if category in _WORDS else category


def colouring_json(c: Colouring) -> dict[str, Any]:
    """The colouring as the graph view takes it, its words in the current language (called where it is shown)."""
    title = _(c.title_id).format(**c.title_values) if c.title_id else _(c.title) if c.title in _TITLES else c.title
    return {
        "title": title,
        "keys": {name: _word(k) for name, k in c.keys.items()},
        "order": [_word(k) for k in c.order],
        "colours": {_word(k): colour for k, colour in c.colours.items()},
        "scale": c.scale,
        "rest": _(c.rest) if c.rest in _TITLES else c.rest,
        "marked": [_word(k) for k in c.marked],
    }


def by_index(view: GraphView, categories: dict[str, str]) -> dict[str, str]:
    """``categories`` keyed by the main graph's node ids ("n12", as the partition and profile results name
    nodes), keyed instead by the names the graph view draws."""
    return {n.name: categories[f"n{n.index}"] for n in view.nodes if n.index >= 0 and f"n{n.index}" in categories}


def provider_colours(report: Placements) -> dict[str, str]:
    """Graph node id -> provider short name, for colouring the main graph."""
    from core.runtime.ort import short_name

    return {f"n{i}": short_name(p) if p else NOWHERE for i, p in enumerate(report.main_providers)}


def provider_colouring(view: GraphView, report: Placements) -> Colouring:
    """The graph view's nodes by the provider that runs them: the accelerator first, CPU last. Nodes of
    bodies (If/Loop/Scan) are placed with the node that holds them."""
    keys = by_index(view, provider_colours(report))
    order = sorted(set(keys.values()), key=lambda p: (p == "CPU", p))
    colours = {p: PROVIDERS[p] for p in order if p in PROVIDERS}  # the colours of the page's provider charts
    return Colouring(title=_PROVIDER_TITLE, keys=keys, order=order, colours=colours, rest=_IN_A_BODY)


def level_colouring(report: OptimizedLevels, level: str) -> Colouring | None:
    """Each original node by what ONNX Runtime's optimizer did to it at ``level``: fused into one kernel,
    replaced, rewritten for a blocked layout, or removed (by node name); None when the level was not made."""
    found = next((lv for lv in report.levels if lv.key == level), None)
    if found is None:
        return None
    keys: dict[str, str] = {}
    for rewrite in found.rewrites:
        for name in rewrite.nodes_before:
            keys.setdefault(name, rewrite.kind if rewrite.kind in _DONE else "replaced")
    order = [k for k in _DONE if k in set(keys.values())]
    return Colouring(
        title=_LEVEL_TITLE.format(level=found.name),
        title_id=_LEVEL_TITLE,
        title_values={"level": found.name},
        keys=keys,
        order=order,
        colours=dict(_DONE),
        rest=_KEPT,
    )


def latency_colours(report: ProfileTimes) -> dict[str, str]:
    """Graph node id -> its latency bin, from the time of the node(s) it became."""
    colours = {}
    for index, ms in enumerate(report.node_ms):
        share = ms / report.call_ms if report.call_ms else 0.0
        colours[f"n{index}"] = next((b.label for b in LATENCY_BINS if share >= b.low), NOT_TIMED) if ms else NOT_TIMED
    return colours


def latency_colouring(view: GraphView, report: ProfileTimes) -> Colouring:
    """The graph view's nodes by their share of the call (what each became after the optimizer), a heat scale."""
    keys = by_index(view, latency_colours(report))
    present = set(keys.values())
    order = [b.label for b in LATENCY_BINS if b.label in present] + ([NOT_TIMED] if NOT_TIMED in present else [])
    colours = {label: LATENCY[label] for label in order}  # the colours of ui.charts' latency legends
    return Colouring(
        title=_LATENCY_TITLE.format(level=report.level),
        title_id=_LATENCY_TITLE,
        title_values={"level": report.level},
        keys=keys,
        order=order,
        colours=colours,
        scale=True,
        rest=_IN_A_BODY,
    )


def error_colouring(view: GraphView, relative: dict[int, float], first: int | None) -> Colouring:
    """The graph view's nodes by their outputs' relative error against the first model (main-graph node index ->
    error), a heat scale; the first divergence (its index) in a colour of its own. Nodes not compared keep the
    neutral colour."""
    categories = {f"n{i}": next(b.label for b in ERROR_BINS if error >= b.low) for i, error in relative.items()}
    if first is not None:
        categories[f"n{first}"] = FIRST_DIVERGENCE
    keys = by_index(view, categories)
    present = set(keys.values())
    order = [FIRST_DIVERGENCE] if FIRST_DIVERGENCE in present else []
    order += [b.label for b in ERROR_BINS if b.label in present]
    return Colouring(
        title=_ERROR_TITLE,
        keys=keys,
        order=order,
        colours={label: ERRORS[label] for label in order},
        scale=True,
        rest=_NOT_COMPARED,
    )
