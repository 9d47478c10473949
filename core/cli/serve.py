"""serve: the web app, with the upload limit and error details of the settings."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from core.errors import WorkbenchError
from core.i18n import _
from core.settings import PROJECT_ROOT, load_settings

__all__ = ["register", "run", "serve_command"]


def register(parser: Any) -> None:
    parser.add_argument("--port", type=int, default=8501)
    parser.add_argument(
        "--address", default="127.0.0.1", help="where to listen (default: this machine only; 0.0.0.0 for every network)"
    )
    parser.set_defaults(func=run)


def serve_command(port: int, address: str) -> list[str]:
    """The streamlit command for these settings (Streamlit's own, through ui.server, which imports the pages'
    modules before it listens): its upload limit follows max_upload_mb, and hosted mode shows
    no error details (Streamlit reads both at start, before any page runs)."""
    settings = load_settings()
    return [
        sys.executable, "-m", "ui.server", "run", "streamlit_app.py",
        "--server.port", str(port), "--server.address", address, "--server.headless", "true",
        "--server.maxUploadSize", str(settings.max_upload_mb),
        "--client.showErrorDetails", "none" if settings.hosted else "full",
    ]  # fmt: skip


def run(args: argparse.Namespace) -> int:
    from core.jobs.sandbox import sandbox_state

    command = serve_command(args.port, args.address)
    settings = load_settings()
    works, why = sandbox_state(settings)
    if not works and settings.require_sandbox:
        raise WorkbenchError(
            _(
                "This {mode} instance runs untrusted models only in a sandbox, and {why}. Install it (make run "
                "does), or for a local instance only you use, set WORKBENCH_REQUIRE_SANDBOX=false."
            ).format(mode=settings.mode, why=why)
        )
    if not works:
        print(
            _("warning: {why}; models will be opened in worker processes without a sandbox.").format(why=why),
            file=sys.stderr,
        )
    print(
        _("ONNX Workbench ({mode} mode) is starting: open http://localhost:{port} (Ctrl+C stops it)").format(
            mode=settings.mode, port=args.port
        ),
        file=sys.stderr,
    )
    os.chdir(PROJECT_ROOT)
    os.execv(sys.executable, command)
    return 0  # not reached
