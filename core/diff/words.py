"""A diff's changes in words, in the reader's language: the Compare page's tables and ``python -m core diff``."""

from __future__ import annotations

from core.diff.records import CHANGE_WORDS, NodeDiff, WeightChange
from core.i18n import _, number, pgettext
from core.notes import say

__all__ = ["change_text", "weight_text"]


def weight_text(w: WeightChange) -> str:
    if w.note:
        return f"{w.tensor}: {say(w.note)}"
    said = (
        _(
            "{tensor}: stored as {dtype}; dequantized, {differing} of {elements} values differ from A's; max |Δ| "
            "{max_abs}, mean |Δ| {mean_abs}, relative {relative}"
        )
        if w.dequantized
        else _(
            "{tensor}: {differing} of {elements} values differ; max |Δ| {max_abs}, mean |Δ| {mean_abs}, relative "
            "{relative}"
        )
    )
    return said.format(
        tensor=w.tensor,
        dtype=w.dequantized,
        differing=number(w.differing),
        elements=number(w.elements),
        max_abs=f"{w.max_abs:.3g}",
        mean_abs=f"{w.mean_abs:.3g}",
        relative=f"{w.relative:.2%}" if w.relative is not None else "—",
    )


def change_text(n: NodeDiff) -> str:
    """What changed on a matched node, in one line."""
    parts = []
    for c in n.changes:
        if c.what == "body":
            parts.append(_("its body {name} differs (listed under its path)").format(name=c.detail))
        elif c.what == "input" and c.detail:
            parts.append(_("input {slot}: {before} → {after}").format(slot=c.detail, before=c.before, after=c.after))
        elif c.what == "input":
            parts.append(_("inputs: {before} → {after}").format(before=c.before, after=c.after))
        elif c.what == "attribute":
            parts.append(
                _("attribute {name}: {before} → {after}").format(
                    name=c.detail, before=c.before or "∅", after=c.after or "∅"
                )
            )
        else:
            what = _(CHANGE_WORDS[c.what]) if c.what in CHANGE_WORDS else c.what
            parts.append(f"{what}: {c.before or '∅'} → {c.after or '∅'}")
    parts += [weight_text(w) for w in n.weights]
    return pgettext("list", "; ").join(parts)
