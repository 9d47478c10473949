"""The title of every page, by its step: one table read by the pages' table (ui/pages.py: the navigation, the links)
and by the notebook, whose headings are the pages' own names (core/notebook)."""

from __future__ import annotations

from core.i18n import N_

__all__ = ["PAGE_TITLES"]

# step -> its title, marked for the catalog and translated where shown (_); in the walk-through's order
PAGE_TITLES: dict[str, str] = {
    "model": N_("Model"),
    "export": N_("Export"),
    "decode": N_("Decode"),
    "partition": N_("Partition"),
    "benchmark": N_("Benchmark"),
    "profile": N_("Profile"),
    "quantize": N_("Quantize"),
    "compare": N_("Compare"),
    "deploy": N_("Deploy"),
    "history": N_("History"),
    "dashboard": N_("Dashboard"),
    "classroom": N_("Classroom"),
}
