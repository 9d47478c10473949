"""Sections of the Deploy page for Tune: the verdict, every candidate's median with its interval, the accuracy of
each variant, what was not tried, and the chosen configuration as JSON and as ONNX Runtime code."""

from __future__ import annotations

import dataclasses
import json
import shutil

import pandas as pd
import streamlit as st

from core.errors import WorkbenchError
from core.i18n import _, pgettext
from core.jobs import TUNE
from core.notes import Note, say, say_all, significant
from core.quantize.records import VARIANTS, variant_label
from core.runtime.provider_options import CPU
from core.runtime.runtimes import BUILDS
from core.tune import Candidate, SessionConfig, TuneReport, TuneRequest
from core.tune.across import tune_across
from core.tune.saved import report_data
from core.tune.search import STAGES, config_label
from core.tune.words import headline
from ui import jobs, session
from ui.bench_view import busy_notice, latency_legend, provider_shares
from ui.charts import latency_figure
from ui.downloads import Download, side_by_side
from ui.text import md_escape

__all__ = [
    "candidates_frame",
    "chosen_section",
    "ort_code",
    "report_json",
    "results_section",
    "run_tune",
    "table_frame",
]


def _name(c: Candidate, report: TuneReport) -> str:
    """The candidate as the chart and the table name it: its settings, the final round's marked, the winner starred."""
    name = config_label(c.config)
    if c.stage == "final":
        name = _("{name} (final round)").format(name=name)
    return ("★ " + name) if report.is_winner(c) else name


def _measured(report: TuneReport) -> list[Candidate]:
    finals = [report.default] + ([report.best] if report.changed else [])
    finals += [report.runner_up] if report.runner_up is not None else []
    chosen = {c.config for c in finals}  # across runtimes, another runtime's own defaults are a candidate too
    return [*finals, *(c for c in report.candidates if c.measured and (c.stage != "final" or c.config not in chosen))]


def candidates_frame(report: TuneReport) -> pd.DataFrame:
    """One row per measurement, per sample: label, engine (the winner "ort", the others grey), median_ms,
    median_low_ms, median_high_ms, p90_ms, p99_ms (what ui.charts.latency_figure takes)."""
    rows = []
    for c in _measured(report):
        if c.result is None:
            continue
        batch = c.config.batch
        low, high = c.ci_ms
        rows.append(
            {
                "label": _name(c, report),
                "engine": "ort" if report.is_winner(c) else "other",
                "median_ms": c.median_ms,
                "median_low_ms": low,
                "median_high_ms": high,
                "p90_ms": c.result.p90_ms / batch,
                "p99_ms": c.result.p99_ms / batch,
            }
        )
    columns = ["label", "engine", "median_ms", "median_low_ms", "median_high_ms", "p90_ms", "p99_ms"]
    return pd.DataFrame(rows, columns=columns)


def _accuracy(c: Candidate) -> str:
    if c.config.variant == "fp32":
        return ""
    label = variant_label(c.config.variant) if c.config.variant in VARIANTS else c.config.variant
    if c.accuracy_ok is None:
        return c.error
    verdict = _("within tolerance") if c.accuracy_ok else _("out: {why}").format(why=say(c.accuracy_note))
    cosine = _("cosine {value}").format(value=f"{c.cosine:.5f}") if c.cosine is not None else ""
    return pgettext("list", ", ").join(filter(None, [label, cosine, verdict]))


def table_frame(report: TuneReport) -> pd.DataFrame:
    """Every candidate, in the order tried: its stage, median and interval, its accuracy, what it had to beat."""
    order = _measured(report) + [c for c in report.candidates if not c.measured]
    rows = []
    for c in order:
        against = ""
        if c.against_ms is not None:
            ms, low, high = c.against_ms
            against = f"{significant(ms)} ({significant(low)}–{significant(high)})"
        median = ""
        if c.measured:
            low, high = c.ci_ms
            median = f"{significant(c.median_ms)} ({significant(low)}–{significant(high)})"
        rows.append(
            {
                _("configuration"): _name(c, report),
                _("stage"): _("final round") if c.stage == "final" else _(STAGES.get(c.stage, c.stage)),
                _("nodes per provider"): ("⚠ " if c.fell_back else "") + provider_shares(c.nodes),
                _("median ms (95 % CI)"): median,
                _("accuracy"): _accuracy(c),  # beside the time: a variant is chosen on both
                _("calls"): c.result.n if c.result is not None else 0,
                _("best so far, same rounds"): against,
                _("problem"): "" if c.accuracy_ok is False else c.error[:300],
            }
        )
    frame = pd.DataFrame(rows)
    if all(set(c.nodes) <= {CPU} for c in order):  # the CPU provider alone everywhere: nothing to tell apart
        frame = frame.drop(columns=_("nodes per provider"))
    return frame


def ort_code(config: SessionConfig, model_file: str) -> str:
    """Plain ONNX Runtime code that opens a session as ``config`` says (what a server would run)."""
    from core.runtime.ort import LEVELS

    mode = "ORT_PARALLEL" if config.execution_mode == "parallel" else "ORT_SEQUENTIAL"
    level = {"disable": "ORT_DISABLE_ALL", "basic": "ORT_ENABLE_BASIC", "extended": "ORT_ENABLE_EXTENDED"}.get(
        config.level, "ORT_ENABLE_ALL"
    )
    providers: list[object] = list(config.session_providers())
    if config.cuda_graph:  # CUDA's calls captured once as a CUDA graph (IO binding, fixed shapes, all nodes on CUDA)
        providers[0] = (providers[0], {"enable_cuda_graph": "1"})
    build = BUILDS.get(config.runtime)
    lines = [f"# the runtime {config.runtime}: pip install {build.package}"] if build is not None else []
    lines += [
        "import onnxruntime as ort",
        "",
        "options = ort.SessionOptions()",
        f"options.intra_op_num_threads = {config.intra_op_threads}  # 0: ORT chooses",
        f"options.inter_op_num_threads = {config.inter_op_threads}",
        f"options.execution_mode = ort.ExecutionMode.{mode}",
        f"options.graph_optimization_level = ort.GraphOptimizationLevel.{level}  # {LEVELS[config.level].name}",
        f"session = ort.InferenceSession({model_file!r}, options, providers={providers!r})",
    ]
    if config.io_binding:
        lines += ["binding = session.io_binding()  # bind inputs and outputs once, then session.run_with_iobinding"]
    if config.batch > 1:
        lines += [f"# send requests in batches of {config.batch} along the batch axis"]
    return "\n".join(lines)


def report_json(report: TuneReport) -> bytes:
    return json.dumps(report_data(report), indent=2).encode()


def _verdict(report: TuneReport, key: str) -> None:
    for warned in _warnings(report):  # what fell back, before any figure (the app's words: providers, runtimes)
        st.warning(md_escape(say(warned), 800))
    # across runtimes, the headline says why a runtime won, which one runtime's report cannot say again
    said = md_escape(say(report.headline if report.runtime_bests else headline(report)), 1200)
    if report.changed:
        st.success(said)
    else:
        st.info(said)
    advice = _("A quieter moment gives numbers that hold: tune again when the other work is done.")
    busy_notice(report.activity, f"{key}_again", "tune_again", _("Tune again"), advice)


def _warnings(report: TuneReport) -> list[Note]:
    """The warnings among the notes but the machine's activity (``busy_notice`` says it): a fallback, first."""
    activity = report.activity.note if report.activity is not None else None
    return [n for n in report.notes if n.severity == "warning" and n != activity]


def run_tune(request: TuneRequest, runtimes: list[str], name: str, model: str) -> TuneReport:
    """Tune ``request`` on each of ``runtimes`` (core.tune.across), one job each with its status box, the answer
    across them kept for ``model`` as one job's would be; one runtime is one job, as before runtimes."""
    if len(runtimes) == 1:
        asked = dataclasses.replace(request, runtime=runtimes[0])
        return jobs.run(TUNE, asked, _("Tuning “{name}”").format(name=name), model=model)
    folder = session.workspace().new_folder(TUNE.folder or "tuned")  # each runtime's job writes its own under it

    def one(asked: TuneRequest) -> TuneReport:
        label = _("Tuning “{name}” on {runtime}").format(name=name, runtime=asked.runtime)
        return jobs.run(TUNE, asked, label)

    try:
        report = tune_across(dataclasses.replace(request, out_dir=str(folder)), runtimes, one)
    except WorkbenchError as exc:
        shutil.rmtree(folder, ignore_errors=True)
        jobs.stop_with_error(exc)
    session.workspace().prune(TUNE.folder or "tuned", keep={folder, *session.paths_in_use()})
    jobs.keep(TUNE, model, report)
    return report


def results_section(report: TuneReport, key: str) -> None:
    """The whole answer of a tuning run."""
    _verdict(report, key)
    frame = candidates_frame(report)
    st.markdown(latency_legend())
    axis = _("milliseconds per sample") if report.per_sample else _("milliseconds per call")
    st.plotly_chart(latency_figure(frame, axis), key=f"{key}_latency", config={"displaylogo": False})
    st.caption(
        _(
            "Each stage timed its candidates beside the best configuration so far, in interleaved rounds; a change "
            "was kept only when its interval lay wholly below. The final round timed the winner beside ONNX "
            "Runtime's defaults, both opened afresh: only that comparison decides."
        )
    )
    st.markdown(_("**Every candidate**"))
    verdicts = [(_name(c, report), said) for c in report.candidates if (said := _accuracy(c))]
    table, accuracy = table_frame(report), _("accuracy")
    widths = {accuracy: st.column_config.TextColumn(width="large")}  # the variants' verdicts, read whole
    if not verdicts:  # no variant was tried: nothing to judge, no empty column
        table, widths = table.drop(columns=accuracy), {}
    st.dataframe(table, hide_index=True, width="stretch", column_config=widths)  # a data grid shows text as text
    if verdicts:  # a grid cuts long text at its edge: each variant's verdict again, whole
        st.markdown("\n".join(f"- **{md_escape(name, 200)}**: {md_escape(said, 600)}" for name, said in verdicts))
    st.caption(
        _("Variants must keep, on held-out inputs: {tolerance}.").format(
            tolerance=md_escape(say(report.tolerance), 400)
        )
    )
    if report.not_tried:
        st.markdown(_("**Not tried**"))
        st.markdown("\n".join(f"- {md_escape(line, 300)}" for line in say_all(report.not_tried)))
    for note in report.notes:
        if note not in _warnings(report) and (report.activity is None or note != report.activity.note):
            st.caption(md_escape(say(note), 800))


def chosen_section(report: TuneReport, key: str) -> None:
    """The chosen configuration: its JSON (what Deploy's server reads) and the ONNX Runtime code it stands for."""
    config = report.best.config
    st.markdown(_("**The chosen configuration** (SessionConfig, as JSON)"))
    st.code(json.dumps(config.to_data(), indent=2), language="json")
    stem = report.model.removesuffix(".onnx")
    model_file = f"{stem}.onnx" if config.variant == "fp32" else f"{stem}.{config.variant}.onnx"
    st.markdown(_("**The same in ONNX Runtime's own terms**"))
    st.code(ort_code(config, model_file), language="python")
    side_by_side(
        Download(label=_("Download the configuration (JSON)"), data=config.to_json() + "\n",
                 file_name="session_config.json", key=f"{key}_config"),
        Download(label=_("Download the whole run (JSON)"), data=lambda: report_json(report),
                 file_name=f"{report.model}-tune-{report.id}.json", key=f"{key}_json"),
    )  # fmt: skip
