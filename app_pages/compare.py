"""Compare: the current model against another (a variant, another file, itself at another level), tensor by
tensor, and the node where they part ways; then, for another file, what changed in its graph (the structural
diff)."""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

import streamlit as st

from core.compare import CompareReport, CompareRequest, CompareSide
from core.errors import WorkbenchError
from core.i18n import _
from core.jobs import COMPARE, QUANTIZE
from core.model.hf_folder import folder_tokenizer
from core.model.records import ModelRecord
from core.model.torchload import source_of
from core.quantize import VARIANTS, QuantizeRequest
from core.quantize.records import variant_label
from core.runtime.ort import LEVELS
from core.workspace import safe_filename
from ui import jobs, session, uploads
from ui.compare_view import compare_section, fix_verdict, step_fields, step_section
from ui.diff_view import diff_section
from ui.graph_panel import graph_of
from ui.jobs import stop_with_error
from ui.library_view import other_versions, version_label
from ui.needs import next_steps, require_onnx
from ui.plan_view import measured_model, plan_ready, plan_section
from ui.text import md_escape

st.title(_("Compare"))
st.markdown(
    _(
        "Two models that should compute the same thing rarely give the same numbers: a float16 or INT8 variant "
        "rounds, a fused kernel sums in another order, a retrained version has other weights. Compare runs both on "
        "the same inputs and measures **every tensor they share**, node by node, so that a wrong output can be "
        "traced to the **first node that goes wrong**: the one whose output leaves the tolerance while its inputs "
        "are still within it. The nodes after it only carry the error on."
    )
)

record = require_onnx("compare")
inputs = plan_section(record, session.torch_model(), key="compare_plan")
quantized = jobs.kept(QUANTIZE, record.id)
variants = {
    v.key: v for v in (quantized.variants[1:] if quantized else []) if not v.error and v.path and Path(v.path).is_file()
}
versions = other_versions(record)
original = session.torch_model()  # the PyTorch model the current one was exported from, when there is one
original = original if original is not None and original.is_pytorch else None
CHOICES = {
    "eager": _("Its PyTorch original, run eagerly: each module's output against this export (A is PyTorch)"),
    "level": _("The same model at another optimization level"),
    "variant": _("A variant made on the Quantize page"),
    "family": _("Another ONNX file of its folder (the same model at another precision: fp16, q4…)"),
    "version": _("Another version from your library (a model you kept, one a History run measured)"),
    "upload": _("Another ONNX file (another version, another export)"),
}
family = {m.key: m for m in record.family if m.path != record.path}  # a Hugging Face folder's (core.model.hf_folder)
offered = {"eager": original is not None, "variant": bool(variants), "version": bool(versions), "family": bool(family)}
choices = [c for c in CHOICES if offered.get(c, True)]
wanted = session.page_param("b")  # a link that names B (History's "compare with this run's version")
if wanted in versions and st.session_state.get("compare_b_asked") != wanted:
    st.session_state.update(compare_against="version", compare_version=wanted, compare_b_asked=wanted)

with st.form("compare_form"):
    against = st.radio(
        _("Compare the current model (A) with B:"), choices, format_func=CHOICES.__getitem__, key="compare_against"
    )
    variant = (
        st.selectbox(
            _("The variant (when B is a variant)"), list(variants), format_func=variant_label, key="compare_variant"
        )
        if variants
        else None
    )
    version = (
        st.selectbox(
            _("The version (when B is from your library)"),
            list(versions),
            format_func=lambda model_id: version_label(versions[model_id]),
            key="compare_version",
        )
        if versions
        else None
    )
    member = (
        st.selectbox(
            _("The file of its folder (when B is one)"),
            list(family),
            format_func=lambda key: f"{family[key].variant} ({family[key].file})",
            key="compare_member",
        )
        if family
        else None
    )
    upload = st.file_uploader(_("The other ONNX file (when B is another file)"), type=["onnx"], key="compare_upload")
    left, mid, right = st.columns(3)
    level_a = left.selectbox(
        _("A's optimization level"),
        list(LEVELS),
        format_func=lambda k: LEVELS[k].name,
        key="compare_level_a",
        help=_("Not used when A is the PyTorch original: it runs eagerly."),
    )
    level_b = mid.selectbox(
        _("B's optimization level"),
        list(LEVELS),
        format_func=lambda k: LEVELS[k].name,
        key="compare_level_b",
        help=_(
            "Tensors fused away at a level are not recomputed unfused: that would compare another model. At A's "
            "level a variant's or a version's differences are its own, not the optimizer's; the same model at the "
            "same level runs at ALL."
        ),
    )
    rtol = right.number_input(
        _("Relative tolerance"),
        min_value=0.0,
        max_value=1.0,
        value=1e-3,
        format="%g",
        key="compare_rtol",
        help=_("Within: max |A − B| ≤ 1e-5 + this × max |A|. Float16 keeps about three digits: try 0.01 for it."),
    )
    has_tokenizer = record.generative is not None and bool(record.generative.tokenizer or folder_tokenizer(record))
    step_plan = step_fields(record, has_tokenizer)  # a language model: at a step of a prompt
    submitted = st.form_submit_button(_("Compare"), type="primary", disabled=not plan_ready(inputs))


def other_model() -> tuple[str, str]:
    """B's file and label, as the form chose it."""
    if against == "variant":
        chosen = variants[str(variant)]
        return chosen.path, chosen.label
    if against == "family" and member is not None:
        return family[member].path, family[member].file
    if against == "version":
        kept = versions[str(version)].kept
        return kept.record.path, f"{kept.label} ({kept.record.id[:8]})"
    if against == "upload":
        if upload is None:
            raise WorkbenchError(_("Upload the other ONNX file, or choose another B."))
        target = session.workspace().new_folder("compare") / safe_filename(upload.name or "model.onnx")
        uploads.save(upload, target)
        return str(target), upload.name or target.name
    return record.path, record.name


if submitted:
    try:
        b_path, b_label = other_model()
        step = step_plan() if against != "eager" else None  # PyTorch eager is compared one call at a time
    except WorkbenchError as exc:
        stop_with_error(exc)
    a_label = f"{record.name} ({record.id[:8]})" if against == "version" else record.name  # two of one name
    if against == "level" and level_b == level_a:  # the same model at the same level would be itself
        level_b = "all" if level_a != "all" else "disable"
        st.caption(_("B runs at {level}: at A's level it would be the same model.").format(level=LEVELS[level_b].name))
    a_side = CompareSide(path=record.path, label=a_label, level=level_a)
    if against == "eager" and original is not None:  # the modules are found through this export's node scopes
        label_a = _("{name} (PyTorch eager)").format(name=original.name)
        a_side = CompareSide(path=record.path, label=label_a, torch_source=source_of(original))
    request = CompareRequest(
        a=a_side,
        b=CompareSide(path=b_path, label=b_label, level=level_b),
        inputs=inputs,
        rtol=float(rtol),
        step=dataclasses.replace(step, tokenizer=folder_tokenizer(record)) if step else None,
    )
    st.session_state["compare_b_variant"] = str(variant) if against == "variant" else ""  # what "make it again" makes
    session.set_page_param("b", str(version) if against == "version" else "")  # the address says which B
    label = _("Comparing “{a}” with “{b}”").format(a=record.name, b=b_label)
    jobs.run(COMPARE, request, label, model=record.id)

report: CompareReport | None = jobs.kept(COMPARE, record.id)
if report is None:
    st.info(_("Choose B and press **Compare**. Neither model is changed."))
    st.stop()
st.subheader(_("{a} against {b}").format(a=md_escape(report.a, 120), b=md_escape(report.b, 120)))
if (st.session_state.get("link") or {}).get("model") == record.id:
    st.caption(_("The comparison is kept with the model: this page's address opens it again."))
if report.lm is not None:
    step_section(report.lm)
compare_section(report, key=f"compare_{record.id[:12]}", view=graph_of(record))
remake = st.session_state.get("compare_b_variant", "")
if report.keep_float32 and remake in VARIANTS:
    asked = _("Make {variant} again with these nodes left out, and judge it").format(variant=variant_label(remake))
    if st.button(asked, key="compare_remake"):
        request_fix = QuantizeRequest(
            model=measured_model(record, inputs), out_dir="", variants=[remake], keep_float32=report.keep_float32
        )
        label = _("Making {variant} of “{name}” again").format(variant=variant_label(remake), name=record.name)
        fixed = jobs.run(QUANTIZE, request_fix, label, model=record.id)
        fix_verdict(fixed.variants[-1], fixed.tolerance)
if report.b_path and report.b_path != record.path and Path(report.b_path).is_file():  # the same file: nothing to diff
    other = ModelRecord(
        id=hashlib.sha256(report.b_path.encode()).hexdigest(),
        name=report.b,
        format="onnx",
        size_bytes=Path(report.b_path).stat().st_size,
        path=report.b_path,
    )
    diff_section(record, other, key=f"diff_{record.id[:12]}")
next_steps("quantize", "profile", "benchmark")
