"""``python -m core``: the command line (core.cli)."""

from __future__ import annotations

import atexit
import os
import sys
import threading

from core.cli import main

code = main()
# Out at once, as a worker leaves (core.jobs.worker), once nothing but the main thread and daemons is left: what
# the command registered to run at exit runs (its temporary folders removed, a worker no job took stopped) and its
# output is flushed, but the interpreter does not tear down the modules it imported, which took a command a few
# tens of milliseconds of the fixed cost issue #51 counts. A command that left a thread running ends as usual.
if all(t.daemon or t is threading.main_thread() for t in threading.enumerate()):
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except OSError:  # a reader that left (| head): Python's own exit says so, as before
        sys.exit(code)
    os._exit(code)
sys.exit(code)
