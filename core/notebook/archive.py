"""The whole session as one download: the notebook and the model files it loads, zipped side by side (a job: it
reads the model's files, so it runs in the worker's sandbox)."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

from core.errors import NotebookError
from core.i18n import _
from core.notebook.builder import notebook_bytes
from core.notebook.records import NotebookArchive, NotebookRequest
from core.workspace import safe_filename

__all__ = ["notebook_archive"]


def _members(path: Path) -> list[tuple[Path, str]]:
    """(file, name in the zip) for a file, or for every plain file under a folder (a model's code package); links
    are left out, so nothing outside the model's own files can be packed."""
    if path.is_symlink():
        return []
    if path.is_file():
        return [(path, path.name)]
    found = []
    for folder, dirs, files in os.walk(path, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            file = Path(folder) / name
            if file.is_file() and not file.is_symlink():
                found.append((file, f"{path.name}/{file.relative_to(path).as_posix()}"))
    return found


def notebook_archive(request: NotebookRequest) -> NotebookArchive:
    """The job: the notebook of the request's plan, zipped with the files it loads."""
    name = safe_filename(request.name, "walk-through")
    notebook = f"{name}.ipynb"
    members: list[tuple[Path, str]] = []
    for given in request.files:
        path = Path(given)
        if not path.exists():
            raise NotebookError(
                _(
                    "A file of the model is gone ('{name}'): its folder was cleared. Open the model again and "
                    "download once more."
                ).format(name=safe_filename(path.name))
            )
        members += _members(path)
    out = Path(request.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    target = out / f"{name}.zip"
    names = [notebook]
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(notebook, notebook_bytes(request.plan))
        for file, arcname in members:
            if arcname not in names:
                zf.write(file, arcname)
                names.append(arcname)
    return NotebookArchive(path=str(target), notebook=notebook, members=names, size_bytes=target.stat().st_size)
