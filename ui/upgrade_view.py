"""Upgrade on the pages: below ONNX Runtime's refusal of an old model, the offer to bring it to a newer opset with
onnx's version converter; the new version becomes the current model (kept in the library beside the original),
and every page says what changed and how it was checked."""

from __future__ import annotations

import dataclasses

import pandas as pd
import streamlit as st

from core.errors import OldOpsetError, WorkbenchError
from core.i18n import N_, _, number
from core.jobs import INTAKE, UPGRADE
from core.model import ModelRecord
from core.model.intake import IntakeRequest
from core.notes import Note, note, say
from core.upgrade import DEFAULT_UPGRADE_OPSET, UpgradeReport, UpgradeRequest
from core.upgrade.sentences import UPGRADED_FROM
from ui import jobs, session
from ui.hooks import ERROR_SHOWN
from ui.plan_view import input_plan
from ui.text import escaped_frame, md_escape

__all__ = ["offer_for", "offer_upgrade", "upgrade_section"]

_ASKED = "upgrade_asked"  # (model id, opset): pressed on the offer, done at the top of the next run
_MADE = "upgrades"  # new version's id -> (the original's name, the report)
_FAILED = "upgrade_failed"  # (model id, report) of an upgrade that did not pass its checks
_KINDS = {
    "replaced": N_("replaced"),
    "version": N_("newer version"),
    "added": N_("added"),
    "removed": N_("removed"),
    "repaired": N_("repaired"),
}


def _said(said: Note | None) -> str:
    return say(said) if said is not None else ""


def _newest_opset() -> int:
    from onnx.defs import onnx_opset_version

    return int(onnx_opset_version())


def _ask(model_id: str, key: str) -> None:
    st.session_state[_ASKED] = (model_id, int(st.session_state[key]))


@ERROR_SHOWN.register
def offer_for(exc: WorkbenchError) -> None:
    """Below a refusal of a model too old for ONNX Runtime (ui.jobs.show_error): the way out, one click away."""
    if isinstance(exc, OldOpsetError):
        offer_upgrade()


def offer_upgrade() -> None:
    """Below an old-opset refusal of the current model: the opset to go to, and the button that makes the new
    version (done at the top of the page's next run, whichever job had failed)."""
    record = session.current_model()
    if record is None or record.format != "onnx" or record.opset is None or record.opset >= _newest_opset():
        return
    with st.container(border=True):
        st.markdown(
            _(
                "**Upgrade the model.** onnx's version converter rewrites it in a newer opset: each operator "
                "becomes its newer version (an attribute may become an input, an old op its successor). The new "
                "version is run against the original on the input plan (in onnx's reference evaluator where ONNX "
                "Runtime cannot run the original), and becomes the current model; the original stays in your "
                "library as it is."
            )
        )
        key = f"upgrade_opset_{record.id[:12]}"
        left, right = st.columns([1, 2], vertical_alignment="bottom")
        newest = _newest_opset()
        left.number_input(
            _("Opset to upgrade to"),
            min_value=record.opset + 1,
            max_value=newest,
            value=min(max(DEFAULT_UPGRADE_OPSET, record.opset + 1), newest),
            key=key,
            help=_("{opset} is what Export writes by default; every ONNX Runtime since 1.14 runs it").format(
                opset=DEFAULT_UPGRADE_OPSET
            ),
        )
        right.button(
            _("Upgrade and continue"),
            type="primary",
            key=f"upgrade_go_{record.id[:12]}",
            on_click=_ask,
            args=(record.id, key),
        )


def _changes_frame(report: UpgradeReport) -> pd.DataFrame:
    change, op, nodes, what = _("change"), _("op"), _("nodes"), _("what")
    rows = [
        {change: _(_KINDS[c.kind]) if c.kind in _KINDS else c.kind, op: c.op, nodes: c.nodes, what: say(c.text)}
        for c in report.changes
    ]
    if report.unchanged_nodes:
        rows.append({change: _("unchanged"), op: "", nodes: report.unchanged_nodes, what: _("as they were")})
    return pd.DataFrame(rows)


def _checks_frame(report: UpgradeReport) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {_("check"): say(c.name), _("result"): _("passes") if c.ok else _("FAILS"), _("detail"): _said(c.detail)}
            for c in report.checks
        ]
    )


def report_details(report: UpgradeReport) -> None:
    """What changed, and how the new version was checked."""
    st.markdown(
        _("ai.onnx opset {before} → {after}, IR version {ir_before} → {ir_after}, in {seconds} s.").format(
            before=report.opset_before,
            after=report.opset_after,
            ir_before=report.ir_before,
            ir_after=report.ir_after,
            seconds=number(report.seconds, 1),
        )
    )
    st.table(escaped_frame(_changes_frame(report)), hide_index=True)
    st.table(escaped_frame(_checks_frame(report)), hide_index=True)
    for said in report.notes:
        st.caption(md_escape(say(said), 1000))


def _upgrade(record: ModelRecord, opset: int) -> None:
    """Make the new version in the worker; one that passes its checks becomes the current model (the page runs
    again with it), one that does not is shown and the original stays."""
    request = UpgradeRequest(path=record.path, opset=opset, inputs=input_plan(record, session.torch_model()))
    label = _("Upgrading '{name}' to opset {opset}").format(name=record.name, opset=opset)
    report = jobs.run(UPGRADE, request, label, model=record.id)
    if not report.ok:
        st.session_state[_FAILED] = (record.id, report)
        return
    try:
        made = jobs.run(INTAKE, IntakeRequest(paths=report.files), _("Opening the new version"))
    except WorkbenchError as exc:
        jobs.stop_with_error(exc)
    upgraded = note(UPGRADED_FROM, name=record.name, summary=report.summary)  # said where the card is shown
    made = dataclasses.replace(made, name=f"{record.name} (opset {opset})", notes=[upgraded, *made.notes])
    st.session_state.setdefault(_MADE, {})[made.id] = (record.name, report)
    session.set_current_model(made, exported_from=session.torch_model())  # reruns the page


def upgrade_section(record: ModelRecord) -> None:
    """At the top of every page that runs the model: an upgrade asked for on the last run is made now; the
    current model, when it is such an upgrade, says so, with what changed."""
    asked = st.session_state.pop(_ASKED, None)
    if asked is not None and asked[0] == record.id:
        _upgrade(record, asked[1])
    failed = st.session_state.get(_FAILED)
    if failed is not None and failed[0] == record.id:
        report = failed[1]
        st.error(
            _(
                "The upgrade to opset {opset} did not pass its checks, so the current model stays the original. "
                "Try another opset below."
            ).format(opset=report.opset_after)
        )
        with st.expander(_("What changed, and which checks failed"), expanded=True):
            report_details(report)
    made = st.session_state.get(_MADE, {}).get(record.id)
    if made is None:
        return
    original, report = made
    said = (
        _(
            "This is **{name}** upgraded from opset {before} to {after} with onnx's version converter, and its "
            "outputs match {compared}. The original stays in your library."
        )
        if report.compared_with is not None
        else _(
            "This is **{name}** upgraded from opset {before} to {after} with onnx's version converter, and checked "
            "by onnx's checker and shape inference (the original runs nowhere here to compare with). The original "
            "stays in your library."
        )
    )
    st.success(
        said.format(
            name=md_escape(original, 120),
            before=report.opset_before,
            after=report.opset_after,
            compared=_said(report.compared_with),
        )
    )
    with st.expander(_("What the upgrade changed, and how it was checked")):
        report_details(report)
