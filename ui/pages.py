"""The table of pages: one row per page, read by the router (streamlit_app.py), the walk-through's "next steps"
and every link between pages. A page is added by adding its row."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import streamlit as st
from streamlit.navigation.page import Page as StreamlitPage

from core.i18n import N_, _
from core.page_titles import PAGE_TITLES
from ui.hooks import PAGES_SHOWN

__all__ = ["PAGES", "PAGE_ICON", "Page", "closed", "first_open", "link", "navigation", "page"]


WALK_THROUGH, TEAM = N_("Walk-through"), N_("Team")


@dataclass(frozen=True, kw_only=True)
class Page:
    step: str  # its key: "benchmark", its script app_pages/benchmark.py; its title is core.page_titles's
    # section and link are marked for the catalog (N_) and translated where shown (_)
    icon: str  # a Material icon
    link: str  # what a link to it says, at the end of another page
    needs: str = ""  # before it can start: "" (nothing), "pytorch" or "onnx" (a PyTorch one is exported in a click)
    doing: str = ""  # what it does to the model, for "Decoding needs an ONNX model"
    section: str = WALK_THROUGH  # the navigation's group: the walk-through, or the team's pages

    @property
    def path(self) -> str:
        """The script under app_pages/."""
        return f"app_pages/{self.step}.py"

    @property
    def title(self) -> str:
        """In the navigation: marked for the catalog in core.page_titles (the notebook's headings read it too),
        translated where shown (_)."""
        return PAGE_TITLES[self.step]


# the walk-through in its order, then the team's pages
PAGES: tuple[Page, ...] = (
    Page(
        step="model",
        icon=":material/deployed_code:",
        link=N_("Model: see its card, or open another"),
    ),
    Page(
        step="export",
        icon=":material/output:",
        link=N_("Export: choose the opset, shapes and dynamic axes"),
        needs="pytorch",
        doing="Export",
    ),
    Page(
        step="decode",
        icon=":material/data_object:",
        link=N_("Decode: the protobuf from the first bytes to the graph"),
        needs="onnx",
        doing="Decoding",
    ),
    Page(
        step="partition",
        icon=":material/account_tree:",
        link=N_("Partition: which provider runs each node"),
        needs="onnx",
        doing="Partitioning",
    ),
    Page(
        step="benchmark",
        icon=":material/speed:",
        link=N_("Benchmark: PyTorch eager against ONNX Runtime"),
        needs="onnx",
        doing="Benchmarking",
    ),
    Page(
        step="profile",
        icon=":material/timer:",
        link=N_("Profile: where the time goes, node by node"),
        needs="onnx",
        doing="Profiling",
    ),
    Page(
        step="quantize",
        icon=":material/compress:",
        link=N_("Quantize: INT8 and FP16 variants, size against accuracy"),
        needs="onnx",
        doing="Quantizing",
    ),
    Page(
        step="compare",
        icon=":material/difference:",
        link=N_("Compare: where two models part ways, tensor by tensor"),
        needs="onnx",
        doing="Comparing",
    ),
    Page(
        step="deploy",
        icon=":material/rocket_launch:",
        link=N_("Deploy: the fastest session settings, a server for them, its latency under load"),
        needs="onnx",
        doing="Tuning",
    ),
    Page(
        step="history",
        icon=":material/history:",
        link=N_("History: compare this run with earlier ones"),
    ),
    Page(
        step="dashboard",
        icon=":material/dashboard:",
        link=N_("Dashboard: the team's latest results and regressions"),
        section=TEAM,
    ),
    Page(
        step="classroom",
        icon=":material/school:",
        link=N_("Classroom: the room's board"),
        section=TEAM,
    ),
)
_BY_STEP = {p.step: p for p in PAGES}
PAGE_ICON = "🧪"  # the browser tab's


def page(step: str) -> Page:
    """The row of page ``step``."""
    return _BY_STEP[step]


def _shown() -> set[str]:
    """The pages listed and linked: those every hook of ui.hooks.PAGES_SHOWN keeps (the classroom's: the Classroom
    page only with a workshop on; in a workshop's room, the pages its teacher opened)."""
    rows: list[Page] = list(PAGES)
    for keep in PAGES_SHOWN:
        rows = keep(tuple(rows))
    return {row.step for row in rows}


def navigation() -> StreamlitPage:
    """Streamlit's navigation over every page, grouped by section; the first page opens by default. Returns the
    page this run shows."""
    sections: dict[str, list[StreamlitPage]] = {}
    shown = _shown()
    for n, row in enumerate(PAGES):
        visibility: Literal["visible", "hidden"] = "visible" if row.step in shown else "hidden"
        page = st.Page(row.path, title=_(row.title), icon=row.icon, default=n == 0, visibility=visibility)
        sections.setdefault(_(row.section), []).append(page)
    return st.navigation(sections)


def closed(page: StreamlitPage) -> bool:
    """Whether ``page`` is one a participant's room keeps shut (its address typed in: the navigation lists only the
    pages the teacher opened). The Classroom page says for itself when no workshop is on."""
    shown = _shown()
    return any(page.title == _(row.title) and row.step not in shown for row in PAGES if row.step != "classroom")


def first_open() -> str:
    """The first page of the walk-through a participant's room keeps open."""
    shown = _shown()
    return next((row.step for row in PAGES if row.step in shown), PAGES[0].step)


def link(step: str, label: str = "", **params: str) -> bool:
    """A link to page ``step``, saying ``label`` (else the table's words for it, translated); ``params`` go in its
    address. Whether it was drawn: not to a page a workshop's room keeps shut."""
    row = page(step)
    if step not in _shown():
        return False
    st.page_link(row.path, label=label or _(row.link), icon=row.icon, query_params=params or None)
    return True
