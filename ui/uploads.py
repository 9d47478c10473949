"""What pages do with an uploaded file: its size, its bytes, a copy of it in a workspace (the server wrote it to
disk, ui.upload_spool; without that, as in AppTest, Streamlit holds it in memory), which files of the upload box make
the upload; and what the upload limit is, whose it is, and the ways round it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import streamlit as st
from streamlit.runtime import Runtime
from streamlit.runtime.scriptrunner import get_script_run_ctx
from streamlit.runtime.uploaded_file_manager import UploadedFile

from core.errors import MissingDataError, WorkbenchError
from core.i18n import _, number
from core.settings import Settings
from core.workspace import safe_filename, shown_name
from ui import session
from ui.hooks import ERROR_SHOWN
from ui.text import human_bytes, md_escape
from ui.upload_spool import DiskUploadedFileManager

__all__ = [
    "limit_caption",
    "read_bytes",
    "save",
    "save_upload",
    "size_of",
    "spooled",
    "this_upload",
    "too_large_help",
]

Saved = tuple[Path, list[str], dict[str, str]]  # the upload's folder, its paths, the names the person gave them


def spooled(f: UploadedFile) -> Path | None:
    """The file the server wrote ``f`` to (ui.upload_spool), or None when Streamlit holds its bytes in memory."""
    ctx = get_script_run_ctx()
    if ctx is None or not Runtime.exists():
        return None
    manager = Runtime.instance().uploaded_file_mgr
    if not isinstance(manager, DiskUploadedFileManager):
        return None
    path = manager.path(ctx.session_id, f.file_id)
    return path if path is not None and path.is_file() else None


def size_of(f: UploadedFile) -> int:
    path = spooled(f)
    return path.stat().st_size if path is not None else f.size


def read_bytes(f: UploadedFile) -> bytes:
    """``f``'s bytes, for a small file read whole (a run's JSON, calibration data)."""
    path = spooled(f)
    return path.read_bytes() if path is not None else f.getvalue()


def save(f: UploadedFile, target: Path) -> None:
    """``f`` written to ``target``: a link to the server's file where it can be (no copy at all), else a copy made
    by the kernel; from memory when Streamlit holds it (``getvalue`` shares the bytes: ``getbuffer`` would copy)."""
    path = spooled(f)
    if path is None:
        target.write_bytes(f.getvalue())
        return
    try:
        os.link(path, target)
    except OSError:  # another file system, or links not allowed
        shutil.copyfile(path, target)


def save_upload(files: list[UploadedFile], total: int, config: Settings) -> Saved:
    """Write the upload to a new folder of this session's (earlier uploads not in use are removed first, and the
    session stays within its quota): its folder, its paths and the names the person gave the files."""
    workspace = session.workspace()
    workspace.prune("upload", keep=session.paths_in_use())  # failed and replaced uploads
    quota = config.workspace_quota_bytes
    if workspace.size_bytes() + total > quota:
        raise WorkbenchError(
            _(
                "This session keeps {used} on the server, and the upload would take it past its quota of {quota} "
                "(setting WORKBENCH_WORKSPACE_QUOTA_MB). Reload the page to start a fresh session."
            ).format(used=human_bytes(workspace.size_bytes()), quota=human_bytes(quota))
        )
    folder = workspace.new_folder("upload")
    paths, shown = [], {}
    for f in files:
        target = folder / safe_filename(f.name)  # safe on disk; the model keeps the name the person gave it
        save(f, target)
        paths.append(str(target))
        shown[target.name] = shown_name(f.name)
    return folder, paths, shown


MODEL_SUFFIXES = (".onnx", ".pt", ".pth", ".pt2", ".ptl", ".zip", ".safetensors", ".ckpt", ".py")  # not .bin: data


def this_upload(files: list[UploadedFile]) -> list[UploadedFile]:
    """The files of the newest upload. The upload box keeps what was dropped before: a model dropped beside an
    earlier one replaces it, while a data file dropped beside its model joins it, and so do a model's code and
    its weights, dropped one after the other. (The names only choose the files; the worker tells the format from
    the bytes.)"""
    names = [f.name for f in files]
    last = st.session_state.get("upload_names", [])
    if names != last:  # the box changed: decide once which files make the upload
        added = [n for n in names if n not in last]
        replaces = last and added and len(added) < len(names)
        code = [n.lower().endswith(".py") for n in added], [n.lower().endswith(".py") for n in last]
        halves = (all(code[0]) and not any(code[1])) or (not any(code[0]) and all(code[1]))  # code, then weights
        newest = replaces and not halves and any(n.lower().endswith(MODEL_SUFFIXES) for n in added)
        st.session_state["upload_names"], st.session_state["upload_chosen"] = names, added if newest else names
    chosen = [f for f in files if f.name in st.session_state["upload_chosen"]]
    if len(chosen) < len(files):
        earlier = ", ".join(md_escape(f.name, 80) for f in files if f not in chosen)
        st.caption(
            _("The newest upload replaces the earlier one ({names}); remove that from the list with its ×.").format(
                names=earlier
            )
        )
    return chosen


def limit_caption(config: Settings) -> str:
    """The upload limit under the upload box: what it is, whose it is, and (local mode) the ways round it."""
    said = _(
        "Up to {size} MB per upload, all files together: a limit set by whoever runs this app "
        "(WORKBENCH_MAX_UPLOAD_MB)."
    ).format(size=number(config.max_upload_mb))
    if config.hosted:
        return said
    return (
        said
        + " "
        + _(
            "A larger model: open it where it lies, in the tab 'A path on this machine', or from a terminal with "
            "`python -m core inspect PATH` and the other commands."
        )
    )


def too_large_help(config: Settings) -> str:
    """Why a file that was selected may not have arrived (the box refuses a file over the limit before the app
    sees it), and the ways round it: in local mode a path on this machine, the command line or a higher limit; on
    a hosted instance the operator or a machine of one's own."""
    said = _(
        "If you did select it: the upload box takes at most {size} MB per file, and refuses a larger one itself "
        '("File must be … or smaller") before the app sees it. The limit is the operator\'s: the setting '
        "WORKBENCH_MAX_UPLOAD_MB of whoever runs this app."
    ).format(size=number(config.max_upload_mb))
    if config.hosted:
        return (
            said
            + " "
            + _(
                "Ask the operator of this instance for a higher limit, or run the workbench on your own machine (make "
                "run), where a model is opened by its path with no upload."
            )
        )
    return (
        said
        + " "
        + _(
            "On this machine, open the model where it lies instead: the tab 'A path on this machine' above, or "
            "`python -m core inspect PATH` (and bench, quantize, deploy …) from a terminal; or start the app again "
            "with a higher WORKBENCH_MAX_UPLOAD_MB."
        )
    )


@ERROR_SHOWN.register
def _missing_data_offer(exc: WorkbenchError) -> None:
    """Under "… which was not uploaded": the upload limit, which may be why."""
    if isinstance(exc, MissingDataError):
        st.info(too_large_help(session.settings()))
