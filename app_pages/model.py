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
from ui import pages, session
from ui.cards import model_card
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


def read_upload(files: list[UploadedFile], total: int) -> ModelRecord:
    """Write the upload to this session's folder (earlier uploads not in use are removed first, and the session
    stays within its quota) and have the worker read it: only the worker opens the bytes."""
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
    request = IntakeRequest(paths=paths, unpack_dir=str(folder))  # a .zip of a model folder unpacks beside it
    uploaded = run(INTAKE, request, _("Reading the upload"))
    main = Path(uploaded.path)
    if main.parent == folder and main.name in shown:  # not a file unpacked from a .zip, which keeps its own
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
            "safetensors, a TorchScript archive or a torch.export .pt2 program"
        ),
        accept_multiple_files=True,
        key="uploads",
    )
    st.caption(
        _("Up to {size} MB per upload, all files together. {code}").format(
            size=number(config.max_upload_mb),
            code=_("TorchScript and .pt2 archives carry code and are refused on this hosted instance.")
            if not config.allow_code_archives
            else _("TorchScript and .pt2 archives carry code: they are opened only in the worker."),
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

MODEL_SUFFIXES = (".onnx", ".pt", ".pth", ".pt2", ".ptl", ".zip", ".safetensors", ".ckpt")  # not .bin: external data


def this_upload(files: list[UploadedFile]) -> list[UploadedFile]:
    """The files of the newest upload. The upload box keeps what was dropped before: a model dropped beside an
    earlier one replaces it, while a data file dropped beside its model joins it. (The names only choose the
    files; the worker tells the format from the bytes.)"""
    names = [f.name for f in files]
    last = st.session_state.get("upload_names", [])
    if names != last:  # the box changed: decide once which files make the upload
        added = [n for n in names if n not in last]
        replaces = last and added and len(added) < len(names)
        newest = replaces and any(n.lower().endswith(MODEL_SUFFIXES) for n in added)
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
        if total > config.max_upload_bytes:
            st.session_state["upload_error"] = WorkbenchError(
                _(
                    "The upload is {size}; this instance accepts at most {limit} (setting WORKBENCH_MAX_UPLOAD_MB)."
                ).format(size=human_bytes(total), limit=human_bytes(config.max_upload_bytes))
            )
        else:
            try:
                uploaded = read_upload(files, total)
                session.set_current_model(uploaded)
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
if record.is_pytorch:
    pages.link("export", _("Next: export it to ONNX"))
else:
    pages.link("decode", _("Next: decode it, from the first bytes to the graph"))
