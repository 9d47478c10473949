"""Bars written as text: each count beside a bar of block characters, in an escaped Markdown table.

A few bars on the pages a person opens first (Decode's op types, Partition's providers and levels) do not need a
charting library: a Plotly chart made the browser fetch and parse 4.7 MB of JavaScript before the page was done
(issue #51). Markdown is drawn by the code every page has loaded already; names from the model are escaped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from core.i18n import number, pgettext
from ui.text import md_escape

__all__ = ["BAR_WIDTH", "COLOURS", "bar", "bar_table", "stacked_bar_table"]

BAR_WIDTH = 24  # characters of the longest bar
_EIGHTHS = "▏▎▍▌▋▊▉"  # one to seven eighths of a block
COLOURS = ("blue", "orange", "green", "violet", "red", "gray")  # Streamlit's Markdown colours, in turn


def bar(value: float, largest: float, width: int = BAR_WIDTH) -> str:
    """A bar of ``value`` against ``largest`` (which takes ``width`` blocks), to an eighth of a block; a value
    above zero shows at least a sliver."""
    if value <= 0 or largest <= 0:
        return ""
    full, part = _blocks(value, largest, width)
    return "█" * full + (_EIGHTHS[part - 1] if part else "")


def _blocks(value: float, largest: float, width: int = BAR_WIDTH) -> tuple[int, int]:
    """How long a bar of ``value`` (above zero) against ``largest`` is: whole blocks, then eighths of one."""
    return divmod(max(1, round(8 * width * min(value, largest) / largest)), 8)


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def bar_table(
    rows: Sequence[tuple[str, Sequence[float]]], headers: Sequence[str], *, bar_of: int = 0, colour: str = "blue"
) -> str:
    """A Markdown table: each row's name, its figures (written the reader's way) and a bar of its figure
    ``bar_of``, all bars against the largest. ``headers``: the name's and each figure's column, escaped; the bar's
    column has no header."""
    largest = max((values[bar_of] for _name, values in rows), default=0)
    # the figures right-aligned, as in every other table of the app, so their digits line up
    lines = [_row([md_escape(h, 80) for h in headers] + [" "]), "|---|" + "---:|" * (len(headers) - 1) + "---|"]
    for name, values in rows:
        drawn = bar(values[bar_of], largest)
        cells = [md_escape(name, 200), *(number(v) for v in values), f":{colour}[{drawn}]" if drawn else ""]
        lines.append(_row(cells))
    return "\n".join(lines)


def stacked_bar_table(
    rows: Sequence[tuple[str, Mapping[str, int]]],
    headers: Sequence[str],
    *,
    colours: Mapping[str, str] | None = None,
    faint: str = "",
) -> str:
    """A Markdown table of one stacked bar per row: its name, its parts with their counts ("CPU 6, NNAPI 2") and
    the bar, each part in its own colour (the same part in the same colour on every row), against the longest
    row. ``headers``: the name's and the parts' column. ``colours``: a part's own colour where it has one (a
    provider's, core.graph.palette.PROVIDER_TEXT); a part without one, or whose colour an earlier part took, gets
    the next free one. The part ``faint`` (the nodes that run nowhere) is drawn in light blocks."""
    colour: dict[str, str] = {}
    for _name, parts in rows:
        for part in parts:
            if part in colour or part == faint:
                continue
            own = (colours or {}).get(part, "")
            free = [c for c in COLOURS if c not in colour.values()] or list(COLOURS)
            colour[part] = own if own and own not in colour.values() else free[0]
    if faint:
        colour[faint] = "gray"
    largest = max((sum(parts.values()) for _name, parts in rows), default=0)
    lines = [_row([md_escape(h, 80) for h in headers] + [" "]), "|---|---|---|"]
    for name, parts in rows:
        said = pgettext("list", ", ").join(f":{colour[p]}[{md_escape(p, 80)}] {number(n)}" for p, n in parts.items())
        drawn = "".join(f":{colour[p]}[{blocks}]" for p, blocks in _stack(parts, largest, faint))
        lines.append(_row([md_escape(name, 200), said, drawn]))
    return "\n".join(lines)


def _stack(parts: Mapping[str, int], largest: float, faint: str) -> list[tuple[str, str]]:
    """Each part's blocks of one stacked bar. Only the bar's end may be a part of a block: an eighth block drawn
    between two parts leaves a gap in the bar, and each part rounded on its own made bars of the same total end
    at different lengths. The whole blocks are shared by largest remainder, each part taking at least one."""
    shown = [(p, n) for p, n in parts.items() if n > 0]
    total = sum(n for _p, n in shown)
    if not shown or largest <= 0:
        return []
    full, part = _blocks(total, largest)
    if full < len(shown):
        full, part = len(shown), 0
    quota = [full * n / total for _p, n in shown]
    blocks = [max(1, int(q)) for q in quota]
    while sum(blocks) > full:  # the minimum of one took a block: take it back where it is least deserved
        i = max((i for i, b in enumerate(blocks) if b > 1), key=lambda i: blocks[i] - quota[i])
        blocks[i] -= 1
    while sum(blocks) < full:
        i = max(range(len(shown)), key=lambda i: quota[i] - blocks[i])
        blocks[i] += 1
    drawn = []
    for i, ((p, _n), b) in enumerate(zip(shown, blocks, strict=True)):
        end = _EIGHTHS[part - 1] if part and i == len(shown) - 1 else ""
        if p == faint:  # light blocks have no eighths: the end rounds to a whole one
            drawn.append((p, "░" * (b + (1 if end and part >= 4 else 0))))
        else:
            drawn.append((p, "█" * b + end))
    return drawn
