"""Model: upload a model or pick a sample; it becomes the current model for every later page."""

from __future__ import annotations

import shutil
from pathlib import Path

import streamlit as st

from core.errors import WorkbenchError
from core.i18n import _
from core.jobs import INTAKE
from core.model import ModelRecord, format_shape, zoo
from core.model.intake import IntakeRequest
from ui import pages, session, tutorial_view, uploads
from ui.cards import model_card
from ui.code_view import code_classes, code_picker
from ui.family_view import family_actions
from ui.jobs import run, show_error
from ui.library_view import library_section
from ui.needs import offered
from ui.text import human_bytes

st.title(_("Model"))
st.markdown(
    _(
        "Bring the model you want to deploy. The app recognises the format from the file's bytes, not its name, "
        "and opens it in an isolated worker process, never in the web server. Whatever you choose here becomes "
        "the **current model** for every later page."
    )
)

config = session.settings()


def read_upload(saved: uploads.Saved, code_class: str = "", code_args: str = "") -> ModelRecord:
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


tabs = [_("Upload a file"), _("Pick a sample"), _("Library")] + ([] if config.hosted else [_("A path on this machine")])
upload_tab, sample_tab, library_tab, *path_tab = st.tabs(tabs)  # a path: local mode only, never a hosted instance

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
        "{limit} {code}".format(
            limit=uploads.limit_caption(config),
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

for tab in path_tab:
    with tab:
        st.caption(
            _(
                "Open a model where it lies on this machine, with no upload and no size limit: an .onnx with its "
                "external-data files beside it, any other model file, or a model's folder."
            )
        )
        typed = st.text_input(_("Path"), key="local_path", placeholder="/home/me/models/model.onnx").strip()
        if st.button(_("Open"), key="open_local_path", disabled=not typed):
            where = Path(typed).expanduser()
            try:
                if not where.exists():
                    raise WorkbenchError(
                        _("Nothing is at {path}: give the path of a model file or folder.").format(path=typed)
                    )
                opened = read_upload((session.workspace().new_folder("upload"), [str(where)], {}))
            except WorkbenchError as exc:
                show_error(exc)
            else:
                st.session_state.pop("upload_error", None)  # the box's error is not this model's
                session.set_current_model(opened)

if files:
    files = uploads.this_upload(files)
    total = sum(uploads.size_of(f) for f in files)
    fingerprint = sorted((f.name, f.file_id) for f in files)  # each file the box takes gets an id of its own
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
                + " "
                + uploads.too_large_help(config)
            )
        else:
            try:
                saved = uploads.save_upload(files, total, config)
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
family_actions(record)  # a Hugging Face folder's ONNX files, each a click from Benchmark's generate panel and Compare
tutorial_view.parameter_figure(record)  # the tutorial printed 87,114 for the sample's layers
if record.is_pytorch:
    pages.link("export", _("Next: export it to ONNX"))
else:
    if pages.link("decode", _("Next: decode it, from the first bytes to the graph")):
        offered("decode")
