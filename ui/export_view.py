"""The export report on the page: a checklist, the comparison table, the op chart, downloads and code."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pandas as pd
import streamlit as st

from core.export import ExportOptions, ExportReport, ExportRequest, ShapeTrial
from core.export.verify import EXPORT_SHAPE, UNPROVEN, unproven_warning
from core.i18n import _, number, pgettext
from core.jobs import EXPORT
from core.model import ModelRecord
from core.model.torchload import source_of
from core.notes import say
from ui import jobs, session
from ui.charts import op_count_figure, op_count_frame
from ui.greedy_view import greedy_section
from ui.plan_view import forget_plan, keep_export_examples
from ui.text import escaped_frame, human_bytes, md_escape

__all__ = ["kept_report", "run_export", "show_report"]


def run_export(source: ModelRecord, options: ExportOptions, label: str) -> ExportReport:
    """Export ``source`` in the worker and keep the report; a verified export becomes the current model (the
    page runs again with it), a failed one does not."""
    keep_export_examples(
        source, {k: v for k, v in options.input_shapes.items() if k not in options.input_values}, options.input_values
    )
    request = ExportRequest(source=source_of(source), options=options, out_dir="", file_name=f"{source.name}.onnx")
    report = jobs.run(EXPORT, request, label, model=source.id)
    if report.record is not None:
        forget_plan(report.record)  # its plan starts again from what it was just exported at
    if report.record is not None and report.usable:  # a comparison that proved nothing is said, not failed
        session.set_current_model(report.record, exported_from=source)  # reruns the page
    return report


def kept_report(source: ModelRecord) -> ExportReport | None:
    """The last export of ``source`` in this session, if any."""
    return jobs.kept(EXPORT, source.id)


def _label(trial: ShapeTrial) -> str:
    """Where a trial ran: "export shape" (in the reader's words) or "batch = 3"."""
    return _(EXPORT_SHAPE) if trial.label == EXPORT_SHAPE else trial.label


def _where(trials: list[ShapeTrial]) -> str:
    return pgettext("list", ", ").join(_label(t) for t in trials)


def _unproven(trials: list[ShapeTrial]) -> str:
    """core's unproven_warning, in the reader's language (the trials named in the reader's words too)."""
    said = unproven_warning(trials, where=_where([t for t in trials if t.proves_nothing is not None]))
    return say(said) if said is not None else ""


_OK, _FAIL = ":green[:material/check_circle:]", ":red[:material/cancel:]"
_VOID = ":orange[:material/help:]"  # matched, but on outputs that test nothing


def _trial_frame(report: ExportReport) -> pd.DataFrame:
    rows = []
    for trial in report.trials:
        shapes = ", ".join(f"{k} {'×'.join(map(str, v))}" for k, v in trial.input_shapes.items())
        worst_abs = max((d.max_abs for d in trial.diffs), default=None)
        worst_rel = max((d.max_rel for d in trial.diffs), default=None)
        matches = pgettext("a check's result", "matches")  # a verdict; the card's "matches" heads a column
        result = matches if trial.ok else _("proves nothing") if trial.proves_nothing is not None else _("FAILS")
        result = _("not checked") if trial.unchecked is not None else result
        rows.append(
            {
                _("shapes"): f"{_label(trial)}: {shapes}",
                _("max abs diff"): f"{worst_abs:.2e}" if worst_abs is not None else "—",
                _("max rel diff"): f"{worst_rel:.2e}" if worst_rel is not None else "—",
                _("result"): result,
            }
        )
    return pd.DataFrame(rows)


def _headline(report: ExportReport) -> None:
    """All checks passed; nothing failed but a comparison proved nothing; or how many failed."""
    passed = sum(c.ok for c in report.checks) + sum(t.ok for t in report.trials)
    total = len(report.checks) + len(report.trials)
    where = _where(report.trials)
    unproven = _unproven(report.trials)
    failed = total - passed - sum(t.proves_nothing is not None or t.unchecked is not None for t in report.trials)
    seconds = number(report.seconds, 1)
    if report.reused:  # only verified exports of samples are reused (core.export.reuse)
        st.success(
            _(
                "Exported and verified: all {total} checks pass; the ONNX model matches PyTorch at {where}. This "
                "sample was exported with the same settings on this machine before (in {seconds} s), so that export "
                "and its checks were copied instead of being made again."
            ).format(seconds=seconds, total=total, where=where)
        )
    elif report.ok:
        st.success(
            _(
                "Exported and verified in {seconds} s: all {total} checks pass; the ONNX model matches PyTorch at "
                "{where}."
            ).format(seconds=seconds, total=total, where=where)
        )
    elif not failed:
        st.warning(
            _("Exported in {seconds} s: {passed} of {total} checks pass, and the rest prove nothing.").format(
                seconds=seconds, passed=passed, total=total
            )
            + " "
            + md_escape(unproven, 1500)
        )
    else:
        st.error(
            _(
                "Exported in {seconds} s, but {failed} of {total} checks fail. Read the red lines below before you "
                "deploy this model."
            ).format(seconds=seconds, failed=failed, total=total)
            + (f" {md_escape(unproven, 1500)}" if unproven else "")
        )


def show_report(report: ExportReport) -> None:
    _headline(report)
    if report.opset_note is not None:
        st.warning(md_escape(say(report.opset_note), 500))

    st.markdown("##### " + _("Verification"))
    lines = [
        f"- {_OK if c.ok else _FAIL} **{md_escape(say(c.name))}**: "
        + md_escape(say(c.detail) if c.detail is not None else "", 500)
        for c in report.checks
    ]
    for trial in report.trials:
        what = (
            _("matches PyTorch at {where} (varies {axis})").format(where=_label(trial), axis=say(trial.axis))
            if trial.axis is not None
            else _("matches PyTorch at {where}").format(where=_label(trial))
        )
        detail = say(trial.error) if trial.error is not None else _("every output within 1e-4 + 1e-3·|value|")
        mark = _OK if trial.ok else _VOID if trial.proves_nothing is not None or trial.unchecked is not None else _FAIL
        lines.append(f"- {mark} **{md_escape(what)}**: {md_escape(detail, 700)}")
    st.markdown("\n".join(lines))
    st.table(escaped_frame(_trial_frame(report)), hide_index=True)
    greedy_section(report)  # a language model's: the tokens both engines generated
    if report.traced_shapes:
        traced = ", ".join(f"{k} {'×'.join(map(str, v))}" for k, v in report.traced_shapes.items())
        st.caption(
            _(
                "The exporter traced the model at {shapes}: torch.export treats a dynamic axis of size 1 as a "
                "constant, so such axes are traced at size 2. The checks above ran at the shapes you chose."
            ).format(shapes=traced)
        )

    st.markdown("##### " + _("What changed between PyTorch and ONNX"))
    st.caption(
        md_escape(say(report.exporter_reason))
        + " "
        + _("Opset asked {asked}, produced {produced}.").format(
            asked=report.opset_requested, produced=report.opset_produced
        )
    )
    for change in report.changes:
        st.markdown(f"- {md_escape(say(change), 400)}")
    st.plotly_chart(op_count_figure(op_count_frame(report.torch_ops, report.onnx_ops)), key="op_counts")
    exporters = [w for w in report.warnings if w.key != UNPROVEN]  # that one heads the report
    if exporters:
        with st.expander(_("The exporter's warnings, in plain words ({count})").format(count=len(exporters))):
            st.markdown("\n".join(f"- {md_escape(say(w), 600)}" for w in exporters))

    st.markdown("##### " + _("Take it with you"))
    cols = st.columns(max(len(report.files), 1) + 1)
    for col, file in zip(cols, report.files, strict=False):
        path = Path(file)
        if path.exists():
            col.download_button(
                _("Download {file} ({size})").format(file=path.name, size=human_bytes(path.stat().st_size)),
                data=partial(session.workspace().read_file, path),  # read when clicked: a model can be gigabytes
                file_name=path.name,
                mime="application/octet-stream",
                key=f"download_{path.name}",
                on_click="ignore",
            )
    st.markdown(_("The Python that reproduces this exact export:"))
    st.code(report.code, language="python")
