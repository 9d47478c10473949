"""Timing steps of a walk in Chromium on the page's own clock (``performance.now()``, from its navigation).

A step ends when the app's last run for it ended, not when the walk noticed it: the walk must pause after a run
to be sure no other follows (a click starts a run a moment after it), and that pause is not the person's wait.
An init script records when each run ended, and when the graph view drew its first frame.
"""

from __future__ import annotations

import os
from typing import Any

CHROMIUM = os.environ.get("WORKBENCH_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip
IDLE = '[data-testid="stApp"][data-test-script-state="notRunning"]'
# In every page, before Streamlit's own scripts: the page's clock (ms) when the app last finished a run
LAST_RUN_ENDED = """
new MutationObserver((changes) => {
  for (const c of changes) {
    if (c.target.getAttribute("data-test-script-state") === "notRunning") window.__lastRunEnded = performance.now();
  }
}).observe(document, {subtree: true, attributes: true, attributeFilter: ["data-test-script-state"]});
"""

__all__ = ["ARGS", "CHROMIUM", "IDLE", "graph_drawn", "new_page", "now", "open_page", "settled"]


def new_page(browser: Any) -> Any:
    """A page in a new context (a new session), its clock's records installed."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.add_init_script(LAST_RUN_ENDED)
    return context.new_page()


def now(page: Any) -> float:
    """Seconds on the page's clock."""
    return float(page.evaluate("performance.now()")) / 1000


def settled(page: Any, shown: float = 0.0, timeout: float = 300_000) -> float:
    """Seconds on the page's clock when its last run ended, once no run follows it within 300 ms, or when what
    the step waits for was ``shown``, if later (the browser may still be loading the code that draws an element
    after the run that sent it has ended)."""
    page.wait_for_timeout(300)
    page.wait_for_selector(IDLE, timeout=timeout)
    return max(shown, float(page.evaluate("window.__lastRunEnded")) / 1000)


def open_page(page: Any, name: str) -> float:
    """Seconds from the click on ``name``'s link to the end of the page's last run."""
    began = now(page)
    page.get_by_role("link", name=name, exact=True).click()
    page.get_by_role("heading", name=name, exact=True).wait_for(timeout=120_000)
    return settled(page) - began


def graph_drawn(page: Any, since: float, timeout: float = 300_000) -> float:
    """Seconds on the page's clock when a graph view mounted after ``since`` drew its first frame."""
    page.wait_for_function(
        "s => window.__graphTimings && window.__graphTimings.firstFrame > s", arg=since * 1000, timeout=timeout
    )
    return float(page.evaluate("window.__graphTimings.firstFrame")) / 1000
