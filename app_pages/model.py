"""Model: upload a model or pick a sample; it becomes the current model for every later page."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import streamlit as st
from streamlit.runtime.uploaded_file_manager import UploadedFile

from core.errors import WorkbenchError
from core.i18n import _, number
from core.jobs import INTAKE
from core.model import ModelRecord, format_shape, zoo
from core.model.intake import IntakeRequest
from core.workspace import safe_filename, shown_name
from ui import pages, session, tutorial_view
from ui.cards import model_card
from ui.code_view import code_classes, code_picker
from ui.jobs import run, show_error
from ui.library_view import library_section
from ui.text import human_bytes, md_escape

st.title(_("Model"))
st.markdown(
    _(
        "Bring the model you want to deploy. The app recognises the format from the file's bytes, not its name, "
        "and opens it in an isolated worker process, never in the web server. Whatever you choose here becomes "
        "the **current model** for every later page."
    )
)

config = session.settings()


def save_upload(files: list[UploadedFile], total: int) -> tuple[Path, list[str], dict[str, str]]:
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
        target.write_bytes(f.getbuffer())
        paths.append(str(target))
        shown[target.name] = shown_name(f.name)
    return folder, paths, shown


def read_upload(
    saved: tuple[Path, list[str], dict[str, str]], code_class: str = "", code_args: str = ""
) -> ModelRecord:
    """Have the worker read the saved upload (only the worker opens the bytes; a model's own code is built there
    as the class and arguments say)."""
    workspace, quota = session.workspace(), config.workspace_quota_bytes
    folder, paths, shown = saved
    request = IntakeRequest(paths=paths, unpack_dir=str(folder), code_class=code_class, code_args=code_args)
    uploaded = run(INTAKE, request, _("Reading the upload"))  # a .zip of a model folder or package unpacks beside it
    main = Path(uploaded.path)
    if main.parent == folder and main.name in shown and uploaded.code is None:  # not unpacked from a .zip
        uploaded.name = shown[main.name]
    if workspace.size_bytes() > quota:  # what a .zip unpacked to
        shutil.rmtree(folder, ignore_errors=True)
        raise WorkbenchError(
            _(
                "The upload unpacked past this session's quota of {quota} (setting WORKBENCH_WORKSPACE_QUOTA_MB); "
                "it was removed."
            ).format(quota=human_bytes(quota))
        )
    workspace.prune("upload", keep={Path(uploaded.path)})  # the new model replaces the one in use
    return uploaded


upload_tab, sample_tab, library_tab = st.tabs([_("Upload a file"), _("Pick a sample"), _("Library")])

with upload_tab:
    files = st.file_uploader(
        _(
            "ONNX (.onnx, with its external-data files, or a .zip of the model folder), a PyTorch state_dict, "
            "safetensors, a TorchScript archive, a torch.export .pt2 program, or your model's code (a .py, or a .zip "
            "of its package) together with its weights (a state_dict .pt/.pth, or .safetensors)"
        ),
        accept_multiple_files=True,
        key="uploads",
    )
    st.caption(
        _("Up to {size} MB per upload, all files together. {code}").format(
            size=number(config.max_upload_mb),
            code=_(
                "TorchScript and .pt2 archives and a model's own code (.py, package .zip) carry code and are "
                "refused on this hosted instance."
            )
            if not config.allow_code_archives
            else _(
                "TorchScript and .pt2 archives and a model's own code (.py, package .zip) carry code: they are "
                "opened and run only in the worker."
            ),
        )
    )

with sample_tab:
    names = list(zoo.SAMPLES)
    choice = st.selectbox(
        _("Sample"),
        names,
        format_func=lambda n: (
            f"{_(zoo.SAMPLES[n].title)} — "
            + ", ".join(f"{k} {format_shape(list(v))}" for k, v in zoo.SAMPLES[n].inputs.items())
        ),
        key="sample_choice",
    )
    st.caption(_(zoo.SAMPLES[choice].description))
    if st.button(_("Use this sample"), type="primary", key="use_sample"):
        try:
            with st.spinner(_("Building the '{name}' sample in the worker…").format(name=choice)):
                sample = session.sample_record(choice)
            session.set_current_model(sample)
        except WorkbenchError as exc:
            show_error(exc)

with library_tab:
    library_section()

MODEL_SUFFIXES = (
    ".onnx",
    ".pt",
    ".pth",
    ".pt2",
    ".ptl",
    ".zip",
    ".safetensors",
    ".ckpt",
    ".py",
)  # not .bin: external data


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


if files:
    files = this_upload(files)
    total = sum(f.size for f in files)
    digest = hashlib.sha256()
    for f in sorted(files, key=lambda f: f.name):
        digest.update(f.name.encode())
        digest.update(f.getbuffer())
    fingerprint = digest.hexdigest()
    if st.session_state.get("upload_fingerprint") != fingerprint:
        st.session_state["upload_fingerprint"] = fingerprint
        st.session_state.pop("upload_error", None)
        for key in [k for k in st.session_state if k == "upload_code" or str(k).startswith("code_args_")]:
            del st.session_state[key]  # a new upload's arguments start from its own defaults
        if total > config.max_upload_bytes:
            st.session_state["upload_error"] = WorkbenchError(
                _(
                    "The upload is {size}; this instance accepts at most {limit} (setting WORKBENCH_MAX_UPLOAD_MB)."
                ).format(size=human_bytes(total), limit=human_bytes(config.max_upload_bytes))
            )
        else:
            try:
                saved = save_upload(files, total)
                classes = code_classes(saved[1], config.intake_limits) if config.allow_code_archives else None
                if classes is None:  # not code (or code this instance refuses, which the worker says)
                    session.set_current_model(read_upload(saved))
                else:
                    st.session_state["upload_code"] = (saved, classes)
            except WorkbenchError as exc:
                st.session_state["upload_error"] = exc
    if "upload_code" in st.session_state:
        saved, classes = st.session_state["upload_code"]
        chosen = code_picker(classes)
        if chosen is not None:
            st.session_state.pop("upload_error", None)
            try:
                session.set_current_model(read_upload(saved, *chosen))
            except WorkbenchError as exc:
                st.session_state["upload_error"] = exc
    if "upload_error" in st.session_state:
        show_error(st.session_state["upload_error"])

record = session.current_model()
if record is None:
    st.info(_("No model yet. Upload a file above, or pick a sample to start with."))
    st.stop()

st.markdown("#### " + _("Current model"))
if record.format == "sample" and record.name == config.start_sample and "upload_fingerprint" not in st.session_state:
    st.caption(_("The app starts with this sample so there is something to explore; upload your own model above."))
model_card(record)
tutorial_view.parameter_figure(record)  # the tutorial printed 87,114 for the sample's layers
if record.is_pytorch:
    pages.link("export", _("Next: export it to ONNX"))
else:
    pages.link("decode", _("Next: decode it, from the first bytes to the graph"))
