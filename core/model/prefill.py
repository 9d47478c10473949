"""A language model's input plan at prefill, from its cache's layout (core.model.generative): the prompt's ids
drawn inside the vocabulary, a past of length 0 (empty arrays, never uninitialised memory), a mask of past + new
length, positions from the past length; and, in every plan, a dim the model writes as a sum of others
(``past_sequence_length + sequence_length``) computed from its parts, never guessed.

Used by core.model.inputs, which keeps the plan; nothing here knows the plan's own records.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from core.i18n import N_
from core.model.generative import CACHE_SOURCE, PROMPT_LENGTH, GenerativeLayout
from core.notes import Note, note

if TYPE_CHECKING:
    from core.model.inputs import BenchInput

__all__ = [
    "COMPUTED",
    "PARTS",
    "PROMPT",
    "cache_dims",
    "cache_roles",
    "cache_values",
    "derive_dims",
    "evaluate",
    "formula_of",
    "parts_of",
]

# why a prefill plan holds what it holds, and where a size came from (core.notes; translated where shown)
PROMPT = N_("a prompt's length")  # where the new tokens' count came from: a choice the user can change
PROMPT_TOKENS = N_("prompt length: {value} tokens, run at once (prefill)")
EMPTY_PAST = N_("past length: 0, prefill starts from an empty cache")
STATIC_PAST = N_("the cache's capacity: {value} positions, fixed in the graph")
KV_HEADS = N_("key/value heads: {value}")
HEAD_SIZE = N_("head size: {value}")
COMPUTED = N_("{formula} = {value}, computed from its parts")
PARTS = N_("its parts")  # where a computed size came from
PAST_VALUES = N_("the cache's past: zeros (empty at prefill)")
POSITIONS_WHY = N_("positions: from the past length on")
MASK_ON = N_("a mask: everything on")
PROMPT_IDS = N_("token ids: drawn inside the vocabulary of {count}")

_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][\w.]*)|([-+*]))")
MAX_TERMS = 16


def parts_of(formula: str) -> list[str | int] | None:
    """The terms and operators of a dim written as arithmetic over other dims (``a + b``, ``2 * s0 - 1``): names,
    whole numbers and + - *; None when ``formula`` is a plain name or is not such a sum."""
    tokens: list[str | int] = []
    position = 0
    text = formula.strip()
    while position < len(text) and len(tokens) <= 2 * MAX_TERMS:
        found = _TOKEN.match(text, position)
        if found is None:
            return None
        number, name, operator = found.groups()
        tokens.append(int(number) if number is not None else name or operator)
        position = found.end()
    operands, operators = tokens[0::2], tokens[1::2]
    well_formed = (
        position == len(text)
        and len(tokens) % 2 == 1
        and all(isinstance(t, int) or t not in "+-*" for t in operands)
        and all(t in ("+", "-", "*") for t in operators)
    )
    return tokens if well_formed and operators else None


def evaluate(formula: str, sizes: dict[str, int]) -> int | None:
    """The value of ``formula`` (see ``parts_of``) from ``sizes`` of its names; None when one is not known."""
    tokens = parts_of(formula)
    if tokens is None:
        return None
    values: list[int] = []
    for token in tokens[0::2]:
        if isinstance(token, int):
            values.append(token)
        elif token in sizes:
            values.append(sizes[token])
        else:
            return None
    operators = [str(t) for t in tokens[1::2]]
    terms, signs = [values[0]], [1]  # products first, then the sum
    for operator, value in zip(operators, values[1:], strict=True):
        if operator == "*":
            terms[-1] *= value
        else:
            terms.append(value)
            signs.append(1 if operator == "+" else -1)
    return sum(sign * term for sign, term in zip(signs, terms, strict=True))


def formula_of(layout: GenerativeLayout | None, name: str, axis: int, symbol: str) -> str:
    """What a dim is computed from: its own name when that is a sum of others, the past + the new tokens for a
    language model's mask; "" for a dim that is its own size."""
    if parts_of(symbol) is not None:
        return symbol
    if layout is not None and name == layout.mask and axis == 1 and layout.past_symbol and layout.new_symbol:
        return f"{layout.past_symbol} + {layout.new_symbol}"
    return ""


def cache_dims(
    layout: GenerativeLayout, prompt_length: int = PROMPT_LENGTH
) -> dict[tuple[str, int], tuple[int, Note, Note]]:
    """(input, axis) -> (size, why, source) of the dims a cache's layout fixes at prefill: the prompt's length, a
    past of 0 (a static cache's capacity), the heads and the head size; the batch is the plan's own."""
    sized: dict[tuple[str, int], tuple[int, Note, Note]] = {
        (layout.ids, 1): (prompt_length, note(PROMPT_TOKENS, value=str(prompt_length)), note(PROMPT)),
    }
    if layout.positions:
        sized[(layout.positions, 1)] = sized[(layout.ids, 1)]
    if layout.cache_position:
        sized[(layout.cache_position, 0)] = sized[(layout.ids, 1)]
    past = (0, note(EMPTY_PAST), note(CACHE_SOURCE))
    if layout.capacity is not None:
        past = (layout.capacity, note(STATIC_PAST, value=str(layout.capacity)), note(CACHE_SOURCE))
    if layout.mask and layout.capacity is None:  # past 0 + the prompt (recomputed from its parts where named)
        total = str(prompt_length)
        sized[(layout.mask, 1)] = (prompt_length, note(COMPUTED, formula=f"0 + {total}", value=total), note(PARTS))
    heads = (layout.kv_heads, note(KV_HEADS, value=str(layout.kv_heads)), note(CACHE_SOURCE))
    size = (layout.head_size, note(HEAD_SIZE, value=str(layout.head_size)), note(CACHE_SOURCE))
    for name in layout.past_names:
        sized[(name, layout.sequence_axis)] = past
        sized[(name, layout.heads_axis)] = heads
        sized[(name, 3)] = size
    return sized


def cache_values(layout: GenerativeLayout) -> dict[str, tuple[str, float, float, Note]]:
    """Input name -> (kind, low, high, why) of its values at prefill (core.model.values' kinds): ids inside the
    vocabulary, a mask all on, positions from a past of 0, an empty past."""
    values: dict[str, tuple[str, float, float, Note]] = {
        layout.ids: ("integers", 0, layout.vocabulary, note(PROMPT_IDS, count=layout.vocabulary)),
        **dict.fromkeys(layout.past_names, ("constant", 0, 1, note(PAST_VALUES))),
    }
    if layout.mask:
        values[layout.mask] = ("constant", 1, 2, note(MASK_ON))
    for name in (layout.positions, layout.cache_position):
        if name:
            values[name] = ("positions", 0, 1, note(POSITIONS_WHY))
    return values


def cache_roles(layout: GenerativeLayout) -> dict[str, str]:
    """Input name -> its role (core.model.generative.ROLES) in a language model's plan."""
    roles = {layout.ids: "ids", **dict.fromkeys(layout.past_names, "past")}
    roles.update({name: role for name, role in ((layout.mask, "mask"), (layout.positions, "positions")) if name})
    if layout.cache_position:
        roles[layout.cache_position] = "cache_position"
    return roles


def derive_dims(plan: list[BenchInput]) -> list[BenchInput]:
    """``plan`` with every dim written as a sum of others (a language model's mask: past + new) computed from
    their sizes now, never guessed, and a language model's positions starting at its past length."""
    sizes = {d.symbol: d.value for spec in plan for d in spec.free if not d.formula and d.symbol != "?"}
    for spec in plan:
        for dim in spec.free:
            value = evaluate(dim.formula, sizes) if dim.formula else None
            if value is not None and value >= 0:
                dim.give(value, note(COMPUTED, formula=dim.formula, value=str(value)), note(PARTS))
                spec.shape[dim.axis] = value
    by_role = {spec.role: spec for spec in plan if spec.role}
    if "mask" in by_role and "ids" in by_role:  # the positions of the new tokens follow the past's
        past = by_role["mask"].shape[-1] - by_role["ids"].shape[-1]
        for spec in plan:
            if spec.role in ("positions", "cache_position"):
                spec.low, spec.high = max(past, 0), max(past, 0) + 1
    return plan
