"""What Partition says of the optimizer's levels: grouped by kind, only what a level adds, fused ops explained."""

from __future__ import annotations

from core.partition import LevelResult, Rewrite, fusions_used, level_changes, rewrite_text


def _rw(kind: str, before: list[str], after: list[str]) -> Rewrite:
    return Rewrite(kind=kind, before=before, after=after, nodes_before=[], nodes_after=[])


def _level(key: str, rewrites: list[Rewrite]) -> LevelResult:
    return LevelResult(key=key, name=key.upper(), node_count=10, op_counts={}, rewrites=rewrites, transformers=[],
                       path="", files=[], size_bytes=0)  # fmt: skip


SILU = _rw("fused", ["Sigmoid", "Mul"], ["com.microsoft:QuickGelu"])
GONE = _rw("removed", ["Identity"], [])
LAYOUT = _rw("layout", ["Conv", "Relu"] * 25, ["com.microsoft.nchwc:Conv"] * 25 + ["com.microsoft.nchwc:ReorderOutput"])


def test_each_level_shows_only_what_it_adds_over_the_level_before_grouped_by_kind() -> None:
    levels = [_level("basic", [GONE, GONE, SILU]), _level("extended", [GONE, GONE, SILU, SILU]),
              _level("all", [GONE, GONE, SILU, SILU, LAYOUT])]  # fmt: skip
    basic, extended, every = level_changes(levels)
    assert basic.by_kind == {"fused": [(SILU.text, 1)], "removed": [("Identity removed", 2)]}
    assert extended.by_kind == {"fused": [(SILU.text, 1)]} and extended.same_as_before == 3
    assert list(every.by_kind) == ["layout"] and every.same_as_before == 4


def test_a_level_that_undoes_a_rewrite_keeps_a_share_of_the_level_befores() -> None:
    """DISABLE_ALL removes 342 Constants; BASIC folds ten of them into what uses them: it keeps 332 of the 342,
    and the page says so rather than "the 332 rewrites of the level before" after a list of 342."""
    levels = [_level("disable", [GONE] * 5), _level("basic", [GONE] * 3 + [SILU])]
    _plain, basic = level_changes(levels)
    assert (basic.same_as_before, basic.before_total) == (3, 5) and basic.by_kind == {"fused": [(SILU.text, 1)]}


def test_a_long_chain_of_ops_is_counted_by_op_not_spelled_out() -> None:
    text = rewrite_text(LAYOUT)
    assert text.startswith("50 ops (Conv ×25, Relu ×25) → 26 ops") and " + " not in text
    assert rewrite_text(SILU) == "Sigmoid + Mul → com.microsoft:QuickGelu"


def test_the_fused_ops_ort_introduces_are_explained() -> None:
    found = fusions_used([_level("all", [SILU, LAYOUT])])
    assert list(found) == ["QuickGelu", "ReorderOutput"] and "SiLU" in found["QuickGelu"]
