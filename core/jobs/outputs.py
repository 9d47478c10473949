"""What comes back from a job's folders: plain files and folders, never a link or another special file it left.

A job that runs a model's code can leave, where its results go, a link to any path (a secret of the server's,
another session's upload), a link to a folder, or a named pipe that would hang whoever opens it. Once its worker
has ended, every such entry it made is removed, at any depth, before anyone reads or moves the folder; the job's
handle names them (``JobHandle.warnings``). A hard link to a file outside its folders cannot be made in the
sandbox (each folder shown is a mount of its own, and the kernel does not link across mounts).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["drop_links", "dropped_warning"]


def drop_links(folder: Path, since: float | None = None) -> list[str]:
    """Remove from ``folder``, at any depth and without following links, every entry that is neither a plain
    file nor a folder (links to files or folders, pipes, sockets), if it was made or changed at ``since`` or
    later (None: whatever its age; a user's folder the command line writes into may hold links of its own).
    Returns what was removed, relative to ``folder``."""
    dropped: list[str] = []
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return dropped
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                dropped += [f"{entry.name}/{name}" for name in drop_links(Path(entry.path), since)]
            elif not entry.is_file(follow_symlinks=False) and (
                since is None or entry.stat(follow_symlinks=False).st_ctime >= since
            ):
                os.unlink(entry.path)
                dropped.append(entry.name)
        except OSError:
            continue
    return dropped


def dropped_warning(job: str, dropped: list[str]) -> str:
    """What the caller is told about the entries ``drop_links`` removed from job ``job``'s folders."""
    shown = ", ".join(dropped[:5]) + (f" and {len(dropped) - 5} more" if len(dropped) > 5 else "")
    return (
        f"The job '{job}' left {len(dropped)} link(s) or special file(s) among its results ({shown}). Only plain "
        "files are read back, so they were removed. A model has no reason to leave links: this one runs code that "
        "does."
    )
