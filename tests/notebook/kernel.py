"""Running a generated notebook as Jupyter would: nbclient, with a kernel spec written for this test run that
starts this very Python (the venv's), so a clean CI venv needs no kernel installed; the notebook's folder is the
kernel's working directory, and the project is not on its path (a notebook that imported the app would fail)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

__all__ = ["KERNEL", "execute", "results", "set_parameters"]

KERNEL = "workbench-notebook-test"


def _kernel_spec(root: Path) -> None:
    folder = root / "kernels" / KERNEL
    folder.mkdir(parents=True, exist_ok=True)
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (tests)",
        "language": "python",
        "env": {"PYTHONPATH": "", "MPLBACKEND": "module://matplotlib_inline.backend_inline"},
    }
    (folder / "kernel.json").write_text(json.dumps(spec))


def set_parameters(notebook: Any, **values: int) -> None:
    """Set the parameter cell's values (REPEAT, WARMUP), as papermill would."""
    cell = next(c for c in notebook.cells if "parameters" in c.get("metadata", {}).get("tags", []))
    lines = [ln for ln in cell.source.splitlines() if ln.split(" = ")[0] not in values]
    cell.source = "\n".join(lines + [f"{k} = {v!r}" for k, v in values.items()])


def execute(notebook: Any, folder: Path, timeout: int = 240) -> Any:
    """Run every cell of ``notebook`` in ``folder``; a failing cell raises nbclient's CellExecutionError."""
    from nbclient import NotebookClient

    _kernel_spec(folder / ".jupyter")
    old = os.environ.get("JUPYTER_PATH")
    os.environ["JUPYTER_PATH"] = str(folder / ".jupyter")
    try:
        client = NotebookClient(
            notebook, timeout=timeout, kernel_name=KERNEL, resources={"metadata": {"path": str(folder)}}
        )
        client.execute(cwd=str(folder))
    finally:
        if old is None:
            os.environ.pop("JUPYTER_PATH", None)
        else:
            os.environ["JUPYTER_PATH"] = old
    return notebook


def results(notebook: Any) -> dict[str, Any]:
    """What the notebook's last cell printed: the RESULTS it measured."""
    last = notebook.cells[-1]
    text = "".join(o.get("text", "") for o in last.outputs if o.get("output_type") == "stream")
    found: dict[str, Any] = json.loads(text)
    return found
