"""Sections of the Deploy page: the generated server as a download, and its latency under load (with its charts:
latency and throughput against concurrency, ONNX Runtime in-process beside them)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from core.deploy import DeployReport, DeployRequest, LoadtestReport, LoadtestRequest
from core.deploy.loadtest import headline, percentile_text
from core.deploy.saved import as_run
from core.deploy.served_spec import MAX_NEW_TOKENS, MAX_PROMPT_TOKENS
from core.graph.palette import ENGINES
from core.i18n import _, number
from core.jobs import DEPLOY, LOADTEST, LOADTEST_URL
from core.model.hf_folder import folder_tokenizer
from core.model.measured import MeasuredModel
from core.model.records import ModelRecord
from core.notes import say, significant
from core.runtime.runtimes import DEFAULT
from core.runtime.session_config import SessionConfig
from core.workspace import open_within
from ui import jobs, session
from ui.charts import against_concurrency, escaped, interval, log_ticks
from ui.runtime_view import runtime_picker
from ui.serve_tokens_view import token_results
from ui.text import escaped_frame, md_escape

__all__ = [
    "deploy_section", "latency_load_figure", "load_frame", "loadtest_section", "original_tokenizer",
    "throughput_figure",
]  # fmt: skip

CONCURRENCIES = [1, 2, 4, 8, 16, 32, 64]
_RUNTIME = "serve_runtime_chosen"  # the runtime the server is written for: the deploy section's, the load test's
_HTTP = "#7B3FBF"  # the served model's colour, beside ONNX Runtime's blue


def original_tokenizer(record: ModelRecord) -> str:
    """A language model's tokenizer.json, beside it or at the top of its Hugging Face folder ("" when none): what
    the server of a variant Tune wrote in a folder of its own packages."""
    named = record.generative.tokenizer if record.generative is not None else ""
    beside = Path(record.path).parent / named if named else None
    if beside is not None and beside.is_file() and not beside.is_symlink():
        return str(beside)
    return folder_tokenizer(record)  # the one at the top of its Hugging Face folder


def _server(model: MeasuredModel, tuned: SessionConfig | None, tokenizer: str = "") -> DeployReport:
    """The server of ``model`` with these options for the runtime picked (deploy_section's), written once per
    session and runtime (kept with the model); ``tokenizer``: a language model's to package when none lies beside
    ``model``."""
    runtime = str(st.session_state.get(_RUNTIME, DEFAULT))
    request = DeployRequest(
        model=model.path, out_dir="", name=model.name, tuned=tuned, runtime=runtime, tokenizer=tokenizer
    )
    said = _("Writing a server for “{name}”").format(name=model.name)
    return jobs.run(DEPLOY, request, said, model=model.id, reuse=True)


def _shape(shape: list[int | None] | None) -> str:
    """A shape as the server checks it: ? for an axis of any size (or for a rank the model does not say)."""
    return "?" if shape is None else "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


def deploy_section(model: MeasuredModel, key: str, tuned: SessionConfig | None = None, *, tokenizer: str = "") -> None:
    """The server as a .zip: a FastAPI app with the model and ``tuned`` session options (None: ONNX Runtime's
    defaults), pinned requirements, a Dockerfile, a README and a Triton model repository."""
    st.markdown(
        _(
            'A small **FastAPI** server for this model: `POST /predict` takes `{"inputs": {name: nested list}}` '
            'and answers `{"outputs": {...}}` (an `.npy` or `.npz` body for large tensors), `GET /health` '
            "answers, and the model's input names, dtypes and shapes are checked. The zip also holds a Triton "
            "model repository with the same session options."
        )
    )
    picked = runtime_picker(f"{key}_runtime")
    st.session_state[_RUNTIME] = tuned.runtime if picked == DEFAULT and tuned is not None else picked
    if st.session_state[_RUNTIME] != DEFAULT:
        st.caption(
            _(
                "For the runtime {runtime}: its requirements pin its build of ONNX Runtime in place of onnxruntime, "
                "and its session asks for its providers, with their options (providers.json)."
            ).format(runtime=md_escape(st.session_state[_RUNTIME], 60))
        )
    if not st.button(_("Prepare the server (.zip)"), key=f"{key}_make") and jobs.kept(DEPLOY, model.id) is None:
        return
    report = _server(model, tuned, tokenizer)
    if report.generate:
        st.info(
            _(
                "A language model: the server also streams greedy tokens from `POST /generate` "
                '(`{"prompt_ids": [...], "max_new_tokens": N}`, or `"prompt"` as text with its tokenizer.json), one '
                "NDJSON line a token as it is made; the load test measures it in tokens per second."
            )
        )
    with open_within(report.zip_path, session.workspace().path) as f:
        data = f.read()
    st.download_button(
        _("Download the server (.zip)"),
        data,
        file_name="server.zip",
        mime="application/zip",
        key=f"{key}_download",
        on_click="ignore",
    )
    inputs = pd.DataFrame(
        {
            _("input"): [i["name"] for i in report.inputs],
            _("dtype"): [i["dtype"] for i in report.inputs],
            _("shape"): [_shape(i["shape"]) for i in report.inputs],
        }
    )
    st.table(escaped_frame(inputs))
    st.caption(_("Session options: {options}").format(options=md_escape(json.dumps(report.session.to_data()), 600)))
    st.code("pip install -r requirements.txt\nuvicorn app:app --host 127.0.0.1 --port 8000", language="bash")


def load_frame(report: LoadtestReport) -> pd.DataFrame:
    """One row per concurrency: requests/s, percentiles with their intervals, errors, checked responses."""
    rows = [
        {
            "concurrency": r.concurrency, "rps": r.rps, "p50_ms": r.p50_ms, "p50_low_ms": r.p50_low_ms,
            "p50_high_ms": r.p50_high_ms, "p90_ms": r.p90_ms, "p90_low_ms": r.p90_low_ms, "p90_high_ms": r.p90_high_ms,
            "p99_ms": r.p99_ms, "p99_low_ms": r.p99_low_ms, "p99_high_ms": r.p99_high_ms, "errors": r.errors,
            "requests": r.requests, "checked": r.checked, "max_abs_diff": r.max_abs_diff,
            "in_process_ms": report.in_process_p50_ms,
        }
        for r in report.results
    ]  # fmt: skip
    return pd.DataFrame(rows)


@escaped
def latency_load_figure(frame: pd.DataFrame) -> go.Figure:
    """p50, p90 and p99 against concurrency (each with its 95 % interval), and ONNX Runtime's p50 in-process
    as a line, so the HTTP overhead shows. ``frame``: load_frame's."""
    fig = go.Figure()
    for name, dash in (("p50", "solid"), ("p90", "dash"), ("p99", "dot")):
        column = f"{name}_ms"
        fig.add_trace(
            go.Scatter(
                x=frame["concurrency"], y=frame[column], name=_("{percentile} over HTTP").format(percentile=name),
                mode="lines+markers", line={"color": _HTTP, "dash": dash},
                error_y=interval(frame, column, f"{name}_low_ms", f"{name}_high_ms", thickness=1),
                hovertemplate=_("{percentile} {ms} ms at concurrency {count}").format(
                    percentile=name, ms="%{y:.3g}", count="%{x}") + "<extra></extra>",
            )
        )  # fmt: skip
    fig.add_trace(
        go.Scatter(
            x=frame["concurrency"], y=frame["in_process_ms"], name=_("p50 in-process (ONNX Runtime)"),
            mode="lines" if len(frame) > 1 else "markers",  # a line of one point is not drawn at all
            line={"color": ENGINES["ort"], "width": 2}, marker={"color": ENGINES["ort"], "symbol": "diamond"},
            hovertemplate=_("in-process {ms} ms").format(ms="%{y:.3g}") + "<extra></extra>",
        )
    )  # fmt: skip
    values = [v for c in ("p50_low_ms", "p99_high_ms", "in_process_ms") for v in frame[c] if v > 0]
    ticks = log_ticks(min(values), max(values)) if values else []  # every tick written out, never a bare "2 5"
    milliseconds = {
        "title": _("milliseconds per request"),
        "type": "log",  # in-process is often 1000× below HTTP
        "tickvals": ticks or None,
        "ticktext": [f"{t:g}" for t in ticks] or None,
    }
    return against_concurrency(fig, frame, _("concurrent requests"), milliseconds, height=360, legend_y=-0.25)


@escaped
def throughput_figure(frame: pd.DataFrame) -> go.Figure:
    """Requests per second against concurrency, and the one-at-a-time rate in-process (1000 / its p50)."""
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=frame["concurrency"], y=frame["rps"], name=_("requests/s over HTTP"), mode="lines+markers",
            line={"color": _HTTP}, text=[number(v, 0) for v in frame["rps"]], textposition="top center",
            hovertemplate=_("{rps} requests/s at concurrency {count}").format(rps="%{y:.3g}", count="%{x}")
            + "<extra></extra>",
        )
    )  # fmt: skip
    fig.update_layout(showlegend=True)
    return against_concurrency(
        fig, frame, _("concurrent requests"), {"title": _("requests per second"), "rangemode": "tozero"}
    )


def _interval(value: float, low: float, high: float) -> str:
    return percentile_text(value, low, high)  # in words where no request was answered, never "nan"


def load_table(report: LoadtestReport) -> pd.DataFrame:
    """The load test's table as the page shows it: numbers as text, in words where no request was answered (never
    "nan", never "0 requests/s" as if measured)."""
    frame = load_frame(report)
    return pd.DataFrame(
        {
            _("concurrency"): frame["concurrency"],
            _("requests/s"): [number(v, 1) if n else _("none answered") for v, n in frame[["rps", "requests"]].values],
            _("p50 ms (95 % CI)"): [_interval(*v) for v in frame[["p50_ms", "p50_low_ms", "p50_high_ms"]].values],
            _("p90 ms (95 % CI)"): [_interval(*v) for v in frame[["p90_ms", "p90_low_ms", "p90_high_ms"]].values],
            _("p99 ms (95 % CI)"): [_interval(*v) for v in frame[["p99_ms", "p99_low_ms", "p99_high_ms"]].values],
            _("errors"): frame["errors"],
            _("outputs checked"): frame["checked"],
        }
    )


def _results(report: LoadtestReport) -> None:
    said = headline(report)
    (st.warning if said.severity == "warning" else st.success)(md_escape(say(said), 600))
    if report.tokens:  # a language model's server: its load is in tokens
        token_results(report)
        return
    frame = load_frame(report)
    st.table(load_table(report))
    left, right = st.columns(2)
    left.plotly_chart(latency_load_figure(frame), key="loadtest_latency")
    right.plotly_chart(throughput_figure(frame), key="loadtest_throughput")
    st.caption(
        _("ONNX Runtime in-process, one call at a time: p50 {ms} ms (95 % CI {low}–{high}, {calls} calls).").format(
            ms=significant(report.in_process_p50_ms), low=significant(report.in_process_low_ms),
            high=significant(report.in_process_high_ms), calls=number(report.in_process_calls),
        )
    )  # fmt: skip
    for note in report.notes:
        (st.warning if note.severity == "warning" else st.caption)(md_escape(say(note), 800))


def _where(key: str) -> str:
    """The address to load: "" for the server the load test starts itself (the only choice in hosted mode)."""
    if session.settings().hosted:
        st.caption(
            _(
                "On this hosted instance the load test only loads the server it starts itself, on a loopback port "
                "inside its sandbox; it never reaches another address."
            )
        )
        return ""
    return st.text_input(
        _("Or the address of a server already running (local mode only)"),
        "",
        placeholder="http://127.0.0.1:8000",
        key=f"{key}_url",
        help=_("Left empty, the load test starts the generated server on a loopback port of its own and stops it."),
    ).strip()


def _stream_sizes(key: str) -> tuple[int, int]:
    """A language model's streams: the new tokens each asks for and its prompt's length (ids drawn with the seed)."""
    new_column, prompt_column = st.columns(2)
    new = new_column.number_input(
        _("New tokens per stream"), 1, MAX_NEW_TOKENS, 32, key=f"{key}_new_tokens",
        help=_("Every stream asks for this many tokens and is not stopped at an end-of-sequence token."),
    )  # fmt: skip
    prompt = prompt_column.number_input(
        _("Prompt tokens"), 1, MAX_PROMPT_TOKENS, 16, key=f"{key}_prompt_tokens",
        help=_("Each stream's prompt: this many token ids drawn inside the vocabulary, the same for every stream."),
    )  # fmt: skip
    return int(new), int(prompt)


def loadtest_section(
    model: MeasuredModel, key: str, tuned: SessionConfig | None = None, *, generative: bool = False, tokenizer: str = ""
) -> None:
    """The served model under load: workers at each concurrency for some seconds, outputs checked, saved to the
    history (and so on the Dashboard). A language model's (``generative``) is loaded in streams of tokens, of the
    length and after the prompt chosen."""
    concurrency = st.multiselect(_("Concurrent requests"), CONCURRENCIES, [1, 4, 16], key=f"{key}_concurrency")
    duration = st.slider(_("Seconds per concurrency"), 1, 30, 5, key=f"{key}_duration")
    new_tokens, prompt_tokens = _stream_sizes(key) if generative else (32, 16)
    bodies = {
        "auto": _("JSON, or .npy/.npz when JSON would be over 1 MiB"),
        "json": "JSON",
        "npy" if len(model.inputs) == 1 else "npz": ".npy" if len(model.inputs) == 1 else ".npz",
    }
    body = st.selectbox(
        _("Request body"), list(bodies), format_func=bodies.__getitem__, key=f"{key}_body",
        help=_("The generated server takes JSON up to 16 MiB; a large input goes faster as an .npy (one input) or "
               ".npz (several) body, and its answers come back as .npz."),
    )  # fmt: skip
    url = _where(key)
    if st.button(_("Run the load test"), key=f"{key}_run", disabled=not concurrency, type="primary"):
        app = "" if url else _server(model, tuned, tokenizer).out_dir
        runtime = str(st.session_state.get(_RUNTIME, DEFAULT)) if app else (tuned.runtime if tuned else DEFAULT)
        request = LoadtestRequest(
            model=model, app=app or None, url=url, concurrency=sorted(concurrency), duration_s=float(duration),
            body=str(body), tuned=tuned, runtime=runtime, new_tokens=new_tokens, prompt_tokens=prompt_tokens,
        )  # fmt: skip
        said = _("Load-testing the server of “{name}”").format(name=model.name)
        report = jobs.run(LOADTEST_URL if url else LOADTEST, request, said, model=model.id)
        session.save_run(as_run(report))
    shown_report = jobs.kept(LOADTEST, model.id) or jobs.kept(LOADTEST_URL, model.id)
    if shown_report is not None:
        _results(shown_report)
