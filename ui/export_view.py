"""The export report on the page: a checklist, the comparison table, the op chart, downloads and code."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pandas as pd
import streamlit as st

from core.export import ExportOptions, ExportReport, ExportRequest
from core.export.verify import unproven_warning
from core.jobs import EXPORT
from core.model import ModelRecord
from core.model.torchload import source_of
from ui import jobs, session
from ui.charts import op_count_figure, op_count_frame
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


_OK, _FAIL = ":green[:material/check_circle:]", ":red[:material/cancel:]"
_VOID = ":orange[:material/help:]"  # matched, but on outputs that test nothing


def _trial_frame(report: ExportReport) -> pd.DataFrame:
    rows = []
    for trial in report.trials:
        shapes = ", ".join(f"{k} {'×'.join(map(str, v))}" for k, v in trial.input_shapes.items())
        worst_abs = max((d.max_abs for d in trial.diffs), default=None)
        worst_rel = max((d.max_rel for d in trial.diffs), default=None)
        rows.append(
            {
                "shapes": f"{trial.label}: {shapes}",
                "max abs diff": f"{worst_abs:.2e}" if worst_abs is not None else "—",
                "max rel diff": f"{worst_rel:.2e}" if worst_rel is not None else "—",
                "result": "matches" if trial.ok else "proves nothing" if trial.proves_nothing else "FAILS",
            }
        )
    return pd.DataFrame(rows)


def _headline(report: ExportReport) -> None:
    """All checks passed; nothing failed but a comparison proved nothing; or how many failed."""
    passed = sum(c.ok for c in report.checks) + sum(t.ok for t in report.trials)
    total = len(report.checks) + len(report.trials)
    where = ", ".join(t.label for t in report.trials)
    unproven = unproven_warning(report.trials)
    failed = total - passed - sum(bool(t.proves_nothing) for t in report.trials)
    if report.ok:
        st.success(
            f"Exported and verified in {report.seconds:.1f} s: all {total} checks pass; the ONNX model "
            f"matches PyTorch at {where}."
        )
    elif not failed:
        st.warning(
            f"Exported in {report.seconds:.1f} s: {passed} of {total} checks pass, and the rest prove nothing. "
            + md_escape(unproven, 1500)
        )
    else:
        st.error(
            f"Exported in {report.seconds:.1f} s, but {failed} of {total} checks fail. "
            "Read the red lines below before you deploy this model."
            + (f" {md_escape(unproven, 1500)}" if unproven else "")
        )


def show_report(report: ExportReport) -> None:
    _headline(report)
    if report.opset_note:
        st.warning(md_escape(report.opset_note, 500))

    st.markdown("##### Verification")
    lines = [f"- {_OK if c.ok else _FAIL} **{md_escape(c.name)}**: {md_escape(c.detail, 500)}" for c in report.checks]
    for trial in report.trials:
        what = f"matches PyTorch at {trial.label}" + (f" (varies {trial.axis})" if trial.axis else "")
        detail = trial.error or "every output within 1e-4 + 1e-3·|value|"
        mark = _OK if trial.ok else _VOID if trial.proves_nothing else _FAIL
        lines.append(f"- {mark} **{md_escape(what)}**: {md_escape(detail, 700)}")
    st.markdown("\n".join(lines))
    st.table(escaped_frame(_trial_frame(report)), hide_index=True)
    if report.traced_shapes:
        traced = ", ".join(f"{k} {'×'.join(map(str, v))}" for k, v in report.traced_shapes.items())
        st.caption(
            f"The exporter traced the model at {traced}: torch.export treats a dynamic axis of size 1 as a "
            "constant, so such axes are traced at size 2. The checks above ran at the shapes you chose."
        )

    st.markdown("##### What changed between PyTorch and ONNX")
    st.caption(
        f"{md_escape(report.exporter_reason)} Opset asked {report.opset_requested}, produced {report.opset_produced}."
    )
    for change in report.changes:
        st.markdown(f"- {md_escape(change, 400)}")
    st.plotly_chart(op_count_figure(op_count_frame(report.torch_ops, report.onnx_ops)), key="op_counts")
    exporters = [w for w in report.warnings if w != unproven_warning(report.trials)]  # that one heads the report
    if exporters:
        with st.expander(f"The exporter's warnings, in plain words ({len(exporters)})"):
            st.markdown("\n".join(f"- {md_escape(w, 600)}" for w in exporters))

    st.markdown("##### Take it with you")
    cols = st.columns(max(len(report.files), 1) + 1)
    for col, file in zip(cols, report.files, strict=False):
        path = Path(file)
        if path.exists():
            col.download_button(
                f"Download {path.name} ({human_bytes(path.stat().st_size)})",
                data=partial(session.workspace().read_file, path),  # read when clicked: a model can be gigabytes
                file_name=path.name,
                mime="application/octet-stream",
                key=f"download_{path.name}",
            )
    st.markdown("The Python that reproduces this exact export:")
    st.code(report.code, language="python")
