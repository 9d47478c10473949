"""The model's input plan, shown and edited in one place: every page that runs the model uses the same plan.

The plan is kept per model in the session (set it once, on any page). Its table says, for every input, the
shape at batch 1, how its values are made, and which dims the model left open, with the value each got.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

import pandas as pd
import streamlit as st
from streamlit.delta_generator import DeltaGenerator
from streamlit.runtime.uploaded_file_manager import UploadedFile

from core.errors import WorkbenchError
from core.i18n import _, number, pgettext
from core.jobs import IMAGE_INPUT, NPZ_INPUTS, Job
from core.jobs.registry import Request, Result
from core.model import ModelRecord, format_shape
from core.model.data import NORMALISATIONS, ImageRequest, NpzRequest, check_image_fits, image_layout
from core.model.inputs import (
    SET_BY_YOU,
    VALUE_KINDS,
    YOU,
    BenchInput,
    Exported,
    FreeDim,
    check_plan_memory,
    plan_inputs,
    resolve_free_dims,
    set_open_dim,
    unset_dims,
)
from core.model.measured import MeasuredModel
from core.model.shapes import parse_dims
from core.model.torchload import source_of
from core.notes import note, say
from core.workspace import safe_filename
from ui import session, uploads
from ui.cards import made_note
from ui.jobs import run, show_error, stop_with_error
from ui.plan_words import said_dim, said_values
from ui.text import escaped_frame, md_escape

__all__ = [
    "eager_checkbox",
    "forget_plan",
    "input_plan",
    "keep_export_examples",
    "measured_model",
    "plan_fits",
    "plan_ready",
    "plan_section",
]

_PLANS = "input_plans"
_EXPORTED = "export_examples"  # torch model id -> Exported: what the Export page exported it at


def input_plan(record: ModelRecord, torch_record: ModelRecord | None = None) -> list[BenchInput]:
    """The plan for ``record``: the one set in this session, else the default for the model, which starts from
    the sizes and values ``torch_record`` was exported at on the Export page."""
    plans = st.session_state.setdefault(_PLANS, {})
    if record.id not in plans:
        exported = st.session_state.get(_EXPORTED, {}).get(torch_record.id) if torch_record is not None else None
        plans[record.id] = plan_inputs(record, torch_record, exported)
    return copy.deepcopy(plans[record.id])


def forget_plan(record: ModelRecord) -> None:
    st.session_state.setdefault(_PLANS, {}).pop(record.id, None)


def keep_export_examples(source: ModelRecord, shapes: dict[str, list[int]], values: dict[str, float]) -> None:
    """What ``source`` is being exported at (by ONNX input name): the plan of its export starts from it."""
    st.session_state.setdefault(_EXPORTED, {})[source.id] = Exported(dict(shapes), dict(values))


def _frame(plan: list[BenchInput]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "input": [s.name for s in plan],
            "dtype": [s.dtype for s in plan],
            "shape at batch 1": [",".join(map(str, s.shape)) for s in plan],
            "values": [s.kind for s in plan],
            "low / value": [s.low for s in plan],
            "high": [s.high for s in plan],
        }
    )


def _edited(plan: list[BenchInput], frame: pd.DataFrame) -> list[BenchInput]:
    """The plan with the table's edits: a changed free dim that has a name moves every input that shares it."""
    named: dict[str, int] = {}
    for spec, row in zip(plan, frame.itertuples(index=False), strict=True):
        what = _("the shape of “{name}”").format(name=spec.name)
        shape = parse_dims(str(row[2]), what, frozenset(_empty_axes(spec))) if spec.shape else []
        if len(shape) != len(spec.shape):
            raise WorkbenchError(
                _("“{name}” has {dims} dims; the shape given has {given}.").format(
                    name=spec.name, dims=len(spec.shape), given=len(shape)
                )
            )
        for dim in spec.free:
            if shape[dim.axis] != dim.value and dim.symbol != "?":
                named[dim.symbol] = shape[dim.axis]
        spec.shape = shape
        for dim in spec.free:
            if dim.value != shape[dim.axis]:
                dim.give(shape[dim.axis], note(SET_BY_YOU), note(YOU))
        if row[3] != spec.kind or float(row[4]) != spec.low or float(row[5]) != spec.high:
            spec.values, spec.low, spec.high, spec.why = str(row[3]), float(row[4]), float(row[5]), note(SET_BY_YOU)
    return resolve_free_dims(plan, named)


def _may_be_empty(spec: BenchInput, dim: FreeDim) -> bool:
    """Whether an open dim may be 0: a language model's past (empty at prefill), or a dim named for a past or a
    cache in a model whose cache was not recognised."""
    symbol = dim.symbol.lower()
    return spec.role == "past" or "past" in symbol or "cache" in symbol


def _empty_axes(spec: BenchInput) -> list[int]:
    return [dim.axis for dim in spec.free if _may_be_empty(spec, dim)]


def _free_dims(plan: list[BenchInput]) -> pd.DataFrame:
    """The open dims, headed in the reader's language; why each got its size and where from, as the plan's notes
    say it (core.model.dims)."""
    frame = pd.DataFrame(
        [
            {
                _("input"): s.name,
                _("axis"): d.axis,
                _("the model calls it"): d.symbol,
                "that name": made_note(d.symbol),  # unk__30, p2o.DynamicDimension.0: made up by a tool
                _("value"): str(d.value) if not d.unset else "?",
                _("why"): say(d.why),
                _("from"): say(d.source),
            }
            for s in plan
            for d in s.free
        ]
    )
    if not frame.empty and not frame["that name"].any():  # every name was chosen by a person: nothing to say
        return frame.drop(columns=["that name"])
    return frame.rename(columns={"that name": _("that name")})


def measured_model(
    record: ModelRecord, inputs: list[BenchInput], torch_record: ModelRecord | None = None
) -> MeasuredModel:
    """The model as Benchmark, Profile and Quantize measure it: ``record`` on the plan ``inputs``, with its
    PyTorch original when eager runs too."""
    torch_source = source_of(torch_record) if torch_record is not None else None
    return MeasuredModel(
        path=record.path,
        inputs=inputs,
        name=record.name,
        id=record.id,
        torch_source=torch_source,
        torch_id=torch_record.id if torch_record is not None else "",
    )


def eager_checkbox(column: DeltaGenerator, label: str, torch_record: ModelRecord | None, key: str) -> bool:
    """Whether PyTorch eager is measured too: ticked when the model has its PyTorch original in this session,
    greyed out (saying why) when it has none."""
    return bool(
        column.checkbox(
            label,
            value=torch_record is not None,
            disabled=torch_record is None,
            help=None if torch_record is not None else _("This ONNX model has no PyTorch original in this session."),
            key=key,
        )
    )


def _from_upload(
    upload: UploadedFile,
    fallback: str,
    job: Job[Request, Result],
    request: Callable[[str, str], Request],
    label: str,
) -> Result | None:
    """Save ``upload`` in a fresh folder of this session and run ``job`` on it in the worker (``request`` gets
    the file's path and the folder for what the job writes); None, with the error shown, when it fails."""
    folder = session.workspace().new_folder("inputs")
    source = folder / safe_filename(upload.name or fallback)
    uploads.save(upload, source)
    try:
        return run(job, request(str(source), str(folder)), label)
    except WorkbenchError as exc:
        show_error(exc)
        return None


def _replace_plan(record: ModelRecord, plan: list[BenchInput]) -> None:
    st.session_state[_PLANS][record.id] = plan
    st.rerun()


def _image_uploads(record: ModelRecord, plan: list[BenchInput], key: str) -> None:
    """For each image-shaped input: a real image instead of noise (decoded and resized in the worker)."""
    images = [spec for spec in plan if image_layout(spec)]
    if not images:
        return
    listed = pgettext("list", ", ").join(f"“{md_escape(s.name, 60)}”" for s in images)
    with st.expander(_("Use a real image for {names}").format(names=listed)):
        st.caption(
            _(
                "A detector measured on noise finds nothing, and its quantized variants are judged on nothing: an "
                "image gives numbers that mean something. It is resized to the plan's size and normalised as you "
                "choose."
            )
        )
        names = [s.name for s in images]
        chosen = names[0] if len(images) == 1 else st.selectbox(_("Input"), names, key=f"{key}_image_input")
        spec = next(s for s in images if s.name == chosen)
        memory = session.settings().worker_memory_mb << 20
        try:  # a plan no picture can be made into in a worker's memory: said now, and no picture is taken
            check_image_fits(spec, memory, _MEMORY_SETTING)
        except WorkbenchError as exc:
            show_error(exc)
            return
        normalise = st.selectbox(
            _("Normalisation"),
            list(NORMALISATIONS),
            format_func={k: _(v[0]) for k, v in NORMALISATIONS.items()}.__getitem__,  # marked in core.model.data
            key=f"{key}_normalise",
            help=_(
                "What the model was trained on: most ImageNet classifiers and Paddle models use ImageNet's; "
                "YOLO-style detectors take [0, 1]."
            ),
        )
        upload = st.file_uploader(_("Image (PNG, JPEG, BMP, WebP)"), key=f"{key}_image_{record.id[:12]}")
        if upload is not None and st.button(_("Use this image"), key=f"{key}_use_image"):
            made = _from_upload(
                upload,
                "image",
                IMAGE_INPUT,
                lambda path, folder: ImageRequest(
                    image=path,
                    spec=spec,
                    out_dir=folder,
                    normalise=normalise,
                    memory_bytes=memory,
                    where=_MEMORY_SETTING,
                ),
                _("Reading the image"),
            )
            if made is not None:
                _replace_plan(record, [made if s.name == made.name else s for s in plan])


def _npz_upload(record: ModelRecord, plan: list[BenchInput], key: str) -> None:
    """Real inputs from an .npz: one array per input, named after it (checked and split in the worker)."""
    with st.expander(_("Use real inputs from an .npz")):
        st.caption(
            _(
                "One array per input, named after it (the inputs it lacks keep their values); its first sample is "
                "used, repeated for larger batches. Dtypes and the model's fixed dims are checked; open dims take "
                "the array's sizes."
            )
        )
        upload = st.file_uploader(_("Inputs (.npz)"), type=["npz"], key=f"{key}_npz_{record.id[:12]}")
        if upload is not None and st.button(_("Use these inputs"), key=f"{key}_use_npz"):
            plan_made = _from_upload(
                upload,
                "data.npz",
                NPZ_INPUTS,
                lambda path, folder: NpzRequest(path=path, inputs=plan, out_dir=folder),
                _("Reading the inputs"),
            )
            if plan_made is not None:
                _replace_plan(record, plan_made)


def plan_fits(plan: list[BenchInput], batch: int) -> None:
    """Stop the page with the reason when the plan's inputs at ``batch`` (a sweep's largest) could not fit in a
    worker's memory: nothing is run, and the table above is where to make them smaller."""
    try:
        check_plan_memory(plan, batch, session.settings().worker_memory_mb << 20, _MEMORY_SETTING)
    except WorkbenchError as exc:
        stop_with_error(exc)


_MEMORY_SETTING = " (setting WORKBENCH_WORKER_MEMORY_MB)"


def _give_unset(record: ModelRecord, plan: list[BenchInput], key: str) -> list[BenchInput]:
    """Ask for the sizes of the open dims nothing in the model explains; the plan with those given so far
    (nothing runs while one is missing: see plan_ready). A size typed in takes its place in the plan at once."""

    def widget(spec: BenchInput, dim: FreeDim) -> str:
        return f"{key}_{record.id[:12]}_size_{spec.name}_{dim.axis}"

    missing = unset_dims(plan)
    for spec, dim in missing:
        if (given := st.session_state.get(widget(spec, dim))) is not None:
            set_open_dim(plan, spec.name, dim.axis, int(given))
    if len(missing) != len(unset_dims(plan)):
        st.session_state[_PLANS][record.id] = copy.deepcopy(plan)
    missing = unset_dims(plan)
    if not missing:
        return plan
    st.warning(
        _(
            "Nothing in the model says how large {dims} should be. Give each a size below (or in the table above): "
            "until then nothing runs, since numbers measured on a made-up size would mean nothing."
        ).format(dims=md_escape(pgettext("list", ", ").join(said_dim(s, d) for s, d in missing), 600))
    )
    columns = st.columns(min(len(missing), 4))
    for index, (spec, dim) in enumerate(missing):
        columns[index % len(columns)].number_input(
            md_escape(_("Size of {dim}").format(dim=said_dim(spec, dim)), 200),
            min_value=0 if _may_be_empty(spec, dim) else 1,
            value=None,
            step=1,
            placeholder=_("give a size"),
            key=widget(spec, dim),
        )
    return plan


def _shown(spec: BenchInput) -> list[int | str]:
    """The input's shape with "?" where a dim still has no size."""
    unset = {d.axis for d in spec.free if d.unset}
    return ["?" if axis in unset else d for axis, d in enumerate(spec.shape)]


def plan_ready(plan: list[BenchInput]) -> bool:
    """Whether every open dim has a size: the pages run nothing (their buttons are off) until it has."""
    return not unset_dims(plan)


def plan_section(record: ModelRecord, torch_record: ModelRecord | None, key: str) -> list[BenchInput]:
    """The plan's table, editable; returns the plan the page should run with."""
    plan = input_plan(record, torch_record)
    st.markdown(
        _(
            "**The inputs** every page runs this model on. Dims the model leaves open got a size from what the model "
            "says (its metadata, the dim's name, the kind of input: an image size, a sequence length); dims that "
            "share a name move together, and the batch is swept along every input that has it."
        )
    )
    kinds = {k: f"{k}: {_(row.label)}" for k, row in VALUE_KINDS.items()}  # marked in core.model.values
    frame = st.data_editor(
        _frame(plan),
        hide_index=True,
        width="stretch",
        disabled=["input", "dtype"],
        column_config={  # the frame's keys stay English (the edits are read by them); the reader sees these labels
            "input": st.column_config.Column(_("input")),
            "shape at batch 1": st.column_config.TextColumn(_("shape at batch 1")),
            "values": st.column_config.SelectboxColumn(
                _("values"),
                options=list(VALUE_KINDS),
                required=True,
                format_func=lambda k: kinds.get(str(k), str(k)),
            ),
            "low / value": st.column_config.NumberColumn(
                _("low / value"), help=_("the range's low end, or the constant")
            ),
            "high": st.column_config.NumberColumn(_("high"), help=_("the range's high end (not included)")),
        },
        key=f"{key}_{record.id[:12]}",
    )
    try:
        plan = _edited(plan, frame)
        st.session_state[_PLANS][record.id] = copy.deepcopy(plan)
    except WorkbenchError as exc:  # a shape as typed that no plan can have: nothing runs until it is fixed
        stop_with_error(exc)
    plan_fits(plan, 1)
    free = _free_dims(plan)
    if not free.empty:
        with st.expander(
            _("Dims the model leaves open ({count}), and where each size came from").format(count=number(len(free)))
        ):
            st.table(escaped_frame(free), hide_index=True)
    plan = _give_unset(record, plan, key)
    runs = " · ".join(
        f"{md_escape(s.name, 80)} {format_shape(_shown(s))}, {md_escape(said_values(s), 160)}" for s in plan
    )
    st.caption(_("Runs on: {inputs}").format(inputs=runs))
    _image_uploads(record, plan, key)
    _npz_upload(record, plan, key)
    return plan
