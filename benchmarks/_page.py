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
# In every page, before Streamlit's own scripts: the page's clock (ms) when the app last finished a run. A run
# quick enough to arrive whole (a page whose jobs were done ahead) can start and end within one render, and the
# attribute never leaves "notRunning": then the page's last change to its document after the run's end reached it
# (a ForwardMsg with script_finished, field 6, other than "stopped early for a rerun", read from the socket) stands
# in for it, and is counted; any later change within the settling pause counts too, so it errs long, not short.
LAST_RUN_ENDED = """
new MutationObserver((changes) => {
  for (const c of changes) {
    if (c.target.getAttribute("data-test-script-state") === "notRunning") window.__lastRunEnded = performance.now();
  }
}).observe(document, {subtree: true, attributes: true, attributeFilter: ["data-test-script-state"]});
new MutationObserver(() => { window.__lastChange = performance.now(); })
  .observe(document, {subtree: true, childList: true, characterData: true, attributes: true});
(() => {
  const finished = (bytes) => {  // the top-level script_finished field of a ForwardMsg, or -1
    let at = 0;
    const varint = () => {
      let v = 0, shift = 0, b;
      do { b = bytes[at++]; v += (b & 127) * 2 ** shift; shift += 7; } while (b & 128);
      return v;
    };
    while (at < bytes.length) {
      const key = varint(), field = Math.floor(key / 8), type = key % 8;
      if (field === 6 && type === 0) return varint();
      if (type === 0) varint(); else if (type === 1) at += 8; else if (type === 5) at += 4;
      else if (type === 2) { const n = varint(); at += n; } else return -1;
    }
    return -1;
  };
  const Socket = window.WebSocket;
  const Wrapped = function (...args) {
    const socket = new Socket(...args);
    socket.addEventListener("message", (event) => {
      if (event.data instanceof ArrayBuffer) {
        const status = finished(new Uint8Array(event.data));
        if (status >= 0 && status !== 2) window.__lastRunReached = performance.now();
      }
    });
    return socket;
  };
  Wrapped.prototype = Socket.prototype;
  Object.assign(Wrapped, {CONNECTING: 0, OPEN: 1, CLOSING: 2, CLOSED: 3});
  window.WebSocket = Wrapped;
})();
"""
RUN_ENDED_AFTER = """b => window.__lastRunEnded > b || (window.__lastRunReached > b
  && document.querySelector('[data-testid="stApp"]')?.getAttribute("data-test-script-state") === "notRunning")"""

__all__ = [
    "ARGS",
    "CHROMIUM",
    "IDLE",
    "UNFLIPPED",
    "graph_drawn",
    "new_page",
    "now",
    "open_page",
    "run_after",
    "settled",
]


def new_page(browser: Any) -> Any:
    """A page in a new context (a new session), its clock's records installed."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.add_init_script(LAST_RUN_ENDED)
    return context.new_page()


def now(page: Any) -> float:
    """Seconds on the page's clock."""
    return float(page.evaluate("performance.now()")) / 1000


UNFLIPPED: list[float] = []  # the runs whose end was read from the socket (LAST_RUN_ENDED), for the summary


def settled(page: Any, shown: float = 0.0, timeout: float = 300_000) -> float:
    """Seconds on the page's clock when its last run ended, once no run follows it within 300 ms, or when what
    the step waits for was ``shown``, if later (the browser may still be loading the code that draws an element
    after the run that sent it has ended)."""
    page.wait_for_timeout(300)
    page.wait_for_selector(IDLE, timeout=timeout)
    flipped, reached, changed = page.evaluate(
        "[window.__lastRunEnded || 0, window.__lastRunReached || 0, window.__lastChange || 0]"
    )
    if reached > flipped + 1:  # the last run never showed as running: its end is the page's last change after it
        UNFLIPPED.append(reached / 1000)
        return max(shown, max(reached, changed) / 1000)
    return max(shown, flipped / 1000)


def run_after(page: Any, began: float, timeout: float = 120_000) -> None:
    """Wait until a run that ended after ``began`` (seconds, a click's, on the page's clock): ``settled`` alone
    could read the run before the click's, when the busy browser starts the click's run more than 300 ms late."""
    page.wait_for_function(RUN_ENDED_AFTER, arg=began * 1000, timeout=timeout)


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
