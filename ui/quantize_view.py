"""Sections of the Quantize page: the comparison table and chart, where integer ops run, downloads."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Protocol, TypeVar

import pandas as pd
import streamlit as st

from core.i18n import N_, _, number, pgettext
from core.notes import say, say_all
from core.quantize import QuantizeReport, Variant
from ui import session
from ui.charts import quantize_figure
from ui.text import escaped_frame, human_bytes, md_escape

__all__ = ["choose_variant", "comparison_frame", "results_section"]


def _speedup(v: Variant) -> str:
    if v.speedup is None:
        return ""
    if v.key == "fp32":
        return _("1× (baseline)")
    return f"{v.speedup:.2f}× ({v.speedup_low:.2f}–{v.speedup_high:.2f})"


_ACCURACY_FORMATS = {
    "max abs error": "{:.2e}",
    "mean abs error": "{:.2e}",
    "cosine": "{:.6f}",
    "top-1 agreement": "{:.0%}",
}


def _verdict(v: Variant) -> str:
    if v.key == "fp32":
        return _("(reference)")
    if v.accuracy_ok is None:
        return ""
    return _("yes") if v.accuracy_ok else _("no: {why}").format(why=say(v.accuracy_note))


# the comparison's columns (their keys stay English: the chart and tests read them) → the header a reader sees
_HEADERS = {
    "variant": N_("variant"),
    "within tolerance": N_("within tolerance"),
    "top-1 agreement": N_("top-1 agreement"),
    "cosine": N_("cosine"),
    "max abs error": N_("max abs error"),
    "mean abs error": N_("mean abs error"),
    "smaller": N_("smaller"),  # shown as "× smaller" (the column's label)
    "speedup vs fp32 (95 % CI)": N_("speedup vs fp32 (95 % CI)"),
    "median ms": N_("median ms"),
    "p90 ms": N_("p90 ms"),
    "size": N_("size"),
    "weights": N_("weights"),
    "integer ops ORT runs": N_("integer ops ORT runs"),
    "problem": N_("problem"),
}


def comparison_frame(report: QuantizeReport) -> pd.DataFrame:
    original = report.variants[0]
    rows = []
    for v in report.variants:
        acc = v.accuracy
        rows.append(
            {  # accuracy first: for a classifier, whether a variant still answers the same is the point
                "variant": v.label,
                "within tolerance": _verdict(v),
                "top-1 agreement": acc.top1_agreement if acc else None,
                "cosine": acc.cosine_similarity if acc else None,
                "max abs error": acc.max_abs_error if acc else None,
                "mean abs error": acc.mean_abs_error if acc else None,
                "smaller": round(original.size_bytes / v.size_bytes, 2) if v.size_bytes else None,
                "speedup vs fp32 (95 % CI)": _speedup(v),
                "median_ms": v.latency.median_ms if v.latency else None,
                "p90_ms": v.latency.p90_ms if v.latency else None,
                "size": human_bytes(v.size_bytes) if v.size_bytes else "",
                "size_mb": v.size_bytes / 1e6 if v.size_bytes else None,
                "weights": human_bytes(v.weight_bytes) if v.size_bytes else "",
                "integer ops ORT runs": pgettext("list", ", ").join(f"{op} ×{n}" for op, n in v.integer_ops.items()),
                "problem": v.error,
            }
        )
    return pd.DataFrame(rows)


def _headline_and_notes(report: QuantizeReport, made: list[Variant]) -> None:
    for v in report.variants:
        if v.error:
            st.warning(  # the others were
                _("**{variant}** could not be made: {error}").format(
                    variant=md_escape(v.label), error=md_escape(v.error, 800)
                )
            )
    if len(made) > 1 and report.headline:
        st.subheader(md_escape(say(report.headline), 400))
    st.caption(
        _("Accuracy tolerance: {tolerance}. A variant outside it is never recommended.").format(
            tolerance=md_escape(say(report.tolerance), 400)
        )
    )
    for v in report.variants:
        if v.kept_float32:
            kept = pgettext("clauses", "; ").join(say_all(v.kept_float32[:12]))
            if len(v.kept_float32) > 12:
                kept = _("{listed}; and {count} more").format(listed=kept, count=number(len(v.kept_float32) - 12))
            st.caption(
                _("{variant} keeps in float32: {nodes}.").format(variant=md_escape(v.label), nodes=md_escape(kept, 800))
            )
        if v.size_note:
            st.caption(_("{variant}: {note}").format(variant=md_escape(v.label), note=md_escape(say(v.size_note), 600)))
    for said in report.notes:
        st.caption(md_escape(say(said), 800))


def results_section(report: QuantizeReport, key: str) -> Variant | None:
    """Show the comparison; returns the variant the user asked to make current, if any."""
    frame = comparison_frame(report)
    made = [v for v in report.variants if not v.error and v.latency is not None]
    _headline_and_notes(report, made)
    shown = frame[frame["median_ms"].notna()]
    if not shown.empty:
        chart = shown.rename(columns={"variant": "label"})[["label", "size_mb", "median_ms", "p90_ms", "cosine"]]
        st.markdown(_("**Size against latency**: lower left is better; the colour is the agreement with float32."))
        st.plotly_chart(quantize_figure(chart), key=f"{key}_chart", config={"displaylogo": False})
    table = frame.drop(columns=["size_mb"]).rename(columns={"median_ms": "median ms", "p90_ms": "p90 ms"})
    if table["top-1 agreement"].isna().all():  # not a classifier (or no accuracy measured): no empty column
        table = table.drop(columns=["top-1 agreement"])
    for column, form in _ACCURACY_FORMATS.items():  # the reference row has no error: say so, not "None"
        if column not in table:
            continue
        table[column] = [
            _("(reference)") if i == 0 else ("—" if pd.isna(v) else form.format(v)) for i, v in enumerate(table[column])
        ]
    headers = {column: _(header) for column, header in _HEADERS.items()}
    table = table.rename(columns=headers)
    st.dataframe(
        table,
        hide_index=True,
        width="stretch",
        column_config={
            headers["smaller"]: st.column_config.NumberColumn(_("× smaller"), format="%.2f×"),
            headers["median ms"]: st.column_config.NumberColumn(format="%.3f"),
            headers["p90 ms"]: st.column_config.NumberColumn(format="%.3f"),
        },
    )
    calls = made[0].latency.n if made and made[0].latency else 0
    measured = _(
        "Latency: median of {calls} calls per model, interleaved, {threads} thread(s), ORT at ALL. Accuracy: against "
        "the float32 model on {held_out}."
    ).format(calls=number(calls), threads=number(report.threads), held_out=say(report.held_out))
    if report.calibration:
        measured = _("{measured} Calibration: {calibration}.").format(
            measured=measured, calibration=say(report.calibration)
        )
    st.caption(md_escape(measured, 1200))
    _where_integer_ops_ran(made)
    return choose_variant(made, key)


def _where_integer_ops_ran(made: list[Variant]) -> None:
    st.markdown(_("**Where the integer ops ran**"))
    rows = [
        (
            v.label,
            pgettext("list", ", ").join(f"{op} ×{n}" for op, n in v.integer_ops.items()) or _("none (float kernels)"),
            pgettext("list", ", ").join(f"{p.removesuffix('ExecutionProvider')} {n}" for p, n in v.providers.items()),
        )
        for v in made
    ]
    columns = [_("variant"), _("integer ops after ORT's optimizer"), _("nodes on")]
    st.table(escaped_frame(pd.DataFrame(rows, columns=columns)))
    st.caption(
        _(
            "ORT's optimizer turns QDQ pairs around a Conv or MatMul into one integer kernel (QLinearConv, QGemm); "
            "dynamic quantization runs ConvInteger or MatMulInteger after quantizing each input on the fly "
            "(DynamicQuantizeLinear). All of them have CPU kernels; other providers take fewer."
        )
    )


class _Made(Protocol):
    """A variant as the chooser reads it: a language model's (core.quantize.lm_records.LMVariant) too."""

    key: str
    label: str
    path: str
    size_bytes: int


Made = TypeVar("Made", bound=_Made)


def choose_variant(made: list[Made], key: str) -> Made | None:
    """A download of one variant, and a button that makes it the current model (returned when pressed)."""
    left, right = st.columns(2)
    choice = left.selectbox(
        _("Variant"), [v.key for v in made], format_func=lambda k: next(v.label for v in made if v.key == k),
        key=f"{key}_variant",
    )  # fmt: skip
    chosen = next((v for v in made if v.key == choice), None)
    if chosen is None:
        return None
    path = Path(chosen.path)
    with right:
        if chosen.size_bytes <= 2 * 1024**3 and path.is_file() and len(list(path.parent.glob(path.name + "*"))) == 1:
            st.download_button(
                _("Download {file} ({size})").format(file=path.name, size=human_bytes(chosen.size_bytes)),
                partial(session.workspace().read_file, path),  # read when clicked, only inside this session's folder
                path.name,
                "application/octet-stream",
                key=f"{key}_download",
                on_click="ignore",
            )
        else:
            st.caption(_("This variant keeps its weights in a side file; save it with `python -m core quantize`."))
        if chosen.key != "fp32" and st.button(_("Make it the current model"), key=f"{key}_use"):
            return chosen
    return None
