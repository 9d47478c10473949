"""How the app's server starts (``python -m core serve``): Streamlit's own command line, through ui.server, which
imports the pages' modules before it listens."""

from __future__ import annotations

import subprocess
import sys

from core.cli.serve import serve_command
from core.settings import PROJECT_ROOT


def test_serve_starts_streamlit_through_the_module_that_imports_the_pages() -> None:
    command = serve_command(8599, "127.0.0.1")
    assert command[1:5] == ["-m", "ui.server", "run", "streamlit_app.py"]
    assert command[command.index("--server.port") + 1] == "8599"


def test_every_pages_module_is_imported_before_the_server_listens() -> None:
    """In a fresh interpreter, as in a server about to start: every module of ui/ is imported, none fails, no
    warning about caches declared before Streamlit's runtime is printed, and the operator is told."""
    script = """
import pkgutil, sys
import ui
from ui import server
failed = server.import_the_pages()
missing = [m.name for m in pkgutil.iter_modules(ui.__path__) if "ui." + m.name not in sys.modules]
print(len(missing), failed, "streamlit_app" in sys.modules)
from streamlit import delta_generator
server.pay_first_run_costs()  # and what Streamlit does on the first page, so that no visitor waits on it
import gc
from core.jobs import sandbox
from ui import session
sandbox.sandbox_state = lambda settings: 1 / 0  # not probed again: the first page's run finds it kept
print("streamlit.emojis" in sys.modules, delta_generator._use_warning_has_been_displayed, gc.get_freeze_count() > 0,
      session.sandbox() == sandbox.sandbox_status())
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120)
    assert done.stdout.split("\n")[:2] == ["0 [] False", "True True True True"], done.stdout + done.stderr
    assert "The pages' modules were imported in" in done.stderr
    assert "No runtime found" not in done.stderr and "missing ScriptRunContext" not in done.stderr, done.stderr
