"""``python -m ui.server run streamlit_app.py [options]``: Streamlit's own server (the same command line as
``python -m streamlit``), with the pages' modules imported before it starts to listen.

On a quiet two-core machine the imports were 2 s of the first page (pandas, plotly, SQLAlchemy and ours) and
more for each page opened for the first time; here they are paid once, before anyone waits on them, and never
in a page run that could race them (two threads importing modules that import each other can stop each other
with Python's "deadlock detected"). ``python -m core serve`` starts the app this way.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import pkgutil
import sys
import threading
import time
from collections.abc import Iterator

from core.i18n import _, number

# Streamlit warns when a cached function is declared before its runtime exists; the cache itself is made on the
# first call, inside the runtime, so the warning says nothing here
_CACHE_WARNS = "streamlit.runtime.caching.cache_data_api"
# and that a cached function called here runs outside a script run: its value is the server's all the same
_NO_RUN_WARNS = "streamlit.runtime.scriptrunner_utils.script_run_context"


@contextlib.contextmanager
def _quiet(logger: str) -> Iterator[None]:
    """Streamlit's ``logger`` says only errors while the block runs (its warnings say nothing before a runtime)."""
    warns = logging.getLogger(logger)
    level = warns.level
    warns.setLevel(logging.ERROR)
    try:
        yield
    finally:
        warns.setLevel(level)


def import_the_pages() -> list[str]:
    """Import every module of ui/ (which import what the pages need); the names of those that failed, which say
    so again when their page opens."""
    began = time.monotonic()
    import streamlit.runtime.caching  # noqa: F401 - Streamlit sets its loggers' levels as it makes them

    import ui

    failed = []
    with _quiet(_CACHE_WARNS):
        for module in pkgutil.iter_modules(ui.__path__):
            try:
                importlib.import_module(f"ui.{module.name}")
            except Exception:  # the page that needs it shows the error to its visitor
                failed.append(f"ui.{module.name}")
    seconds = number(time.monotonic() - began, 1)
    print(_("The pages' modules were imported in {seconds} s.").format(seconds=seconds), file=sys.stderr)
    for name in failed:
        print(_("{module} could not be imported; its page will say why.").format(module=name), file=sys.stderr)
    return failed


def pay_first_run_costs() -> None:
    """What Streamlit does once per process on the first page anyone opens, done before anyone waits on it
    (0.3 s of a new server's first page on a quiet two-core machine, by cProfile):

    - the page icon: ``st.set_page_config(page_icon=...)`` checks the icon against Streamlit's emoji catalogue,
      a module of several thousand entries imported on first use (0.11 s);
    - the first element: Streamlit checks whether it runs in a REPL, to warn that an app should be started with
      ``streamlit run``, by ``inspect.stack()``, which reads the source file of every frame (0.17 s). This
      server is started with ``streamlit run``, so the warning can never apply; it is marked as given;
    - the sandbox's probe (ui.session.sandbox, kept for the server's life): bubblewrap builds a sandbox around
      ``true`` (0.02 s, 0.2 s while the browser fetches the app's scripts);
    - the first run's freeze of the imported modules (ui.session.freeze_imports): a full collection of every
      object the imports made (0.1 s); later freezes walk only what was made since.
    """
    from streamlit import delta_generator
    from streamlit.string_util import is_emoji

    from ui import session
    from ui.pages import PAGE_ICON

    is_emoji(PAGE_ICON)
    if hasattr(delta_generator, "_use_warning_has_been_displayed"):  # a private name: a later Streamlit may lack it
        delta_generator._use_warning_has_been_displayed = True
    with _quiet(_NO_RUN_WARNS):
        session.sandbox()
    session.freeze_imports()


def describe_runtimes_ahead() -> threading.Thread | None:
    """Ask each runtime this machine has (the default and those of ``make runtime-NAME``) what it offers, in a thread,
    while the server starts: the pages that offer a runtime picker (Partition, Benchmark, Profile, Tune) label its
    choices with each runtime's answer, which its own Python gives in 0.5-0.7 s; asked on the first visit, a new
    server's first Partition took 1.4 s more (the default's Python asked too). None when the server has the default
    runtime alone, and the pages no picker."""
    from core.runtime.runtimes import describe, runtime_names

    names = runtime_names()
    if len(names) < 2:
        return None

    def ask() -> None:
        for name in names:
            describe(name)  # kept for the server's life; a page asking meanwhile waits for this answer

    thread = threading.Thread(target=ask, name="describe runtimes", daemon=True)
    thread.start()
    return thread


def keep_uploads_on_disk() -> None:
    """Uploads go to a folder of this server's under the data folder, not into its memory (ui.upload_spool)."""
    from core.settings import load_settings
    from ui.upload_spool import install

    settings = load_settings()
    install(settings.data_dir, settings.workspace_max_age_h * 3600)


def main() -> int:
    import_the_pages()
    pay_first_run_costs()
    describe_runtimes_ahead()
    keep_uploads_on_disk()
    from streamlit.web.cli import main as streamlit

    sys.argv[0] = "streamlit"
    return int(streamlit(prog_name="streamlit") or 0)


if __name__ == "__main__":
    sys.exit(main())
