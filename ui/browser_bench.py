"""Benchmark's "This browser": the current model run by ONNX Runtime Web in the visitor's own browser, on the same
input plan, as a Streamlit component (``st.components.v2``; ui/browser_component, its committed bundle).

The model's bytes go only to the session that asked: a component's data reaches that session's browser alone.
They travel as the element's data, bytes: a one-line JSON header (token, what to run, words, where each part
lies), then the runtime, its gzipped .wasm, the model, the inputs and the server's outputs (src/streamlit.js). A
model over ``browser_model_mb`` is refused before the job that reads it runs, and a message over Streamlit's
``server.maxMessageSize`` before it is sent. The runner works in a Web Worker, so the page stays live; the result
comes back as the component's state (the raw call times), and its statistics are computed here
(core.browser.browser_report, core.runtime.stats) and saved to the history once, the browser as its machine.
"""

from __future__ import annotations

import json
import uuid

import msgspec
import streamlit as st

from core.bench import headline
from core.browser import BrowserPayload, BrowserRequest, browser_report, runtime_files
from core.browser.page import bench_message, page_words
from core.browser.payload import RUNTIME_DIR
from core.errors import WorkbenchError
from core.i18n import _, number
from core.jobs import BROWSER
from core.model.inputs import BenchInput
from core.model.records import ModelRecord
from core.notes import say
from core.runtime.runs import BrowserRun
from ui import jobs, pages, session
from ui.plan_view import measured_model
from ui.text import md_escape

__all__ = ["browser_section", "component_data"]

_JS = (RUNTIME_DIR / "bench.js").read_text(
    encoding="utf-8"
) + "\nexport default (c) => BrowserBench.streamlitComponent(c);\n"
_component = st.components.v2.component("onnx_workbench.browser_bench", js=_JS)

_PENDING = "browser_bench_pending"  # session state: (token, model id, data bytes) of the run sent to the browser
_SAVED = "browser_bench_saved"  # session state: token -> the saved report


def component_data(payload: BrowserPayload, meta: dict[str, object], token: str, webgpu: bool) -> bytes:
    """The component's data: the JSON header line, then every part's bytes at the offsets it names."""
    runtime = runtime_files()
    parts: list[bytes] = []

    def at(data: bytes) -> list[int]:
        offset = sum(len(p) for p in parts)
        parts.append(data)
        return [offset, len(data)]

    where = {"ort_wasm": at(runtime.wasm_code), "wasm_wasm": at(runtime.wasm_binary), "model": at(payload.model)}
    if webgpu:
        where |= {"ort_webgpu": at(runtime.webgpu_code), "webgpu_wasm": at(runtime.webgpu_binary)}
    header = {
        "token": token,
        "meta": meta,
        "words": page_words(),
        "parts": where,
        "inputs": [{"name": t.name, "dtype": t.dtype, "shape": t.shape, "at": at(t.data)} for t in payload.inputs],
        "reference": [{"name": t.name, "shape": t.shape, "at": at(t.data)} for t in payload.reference],
    }
    return msgspec.json.encode(header) + b"\n" + b"".join(parts)


def _limits(record: ModelRecord) -> bool:
    """Whether the model may be sent: under browser_model_mb (else refused, saying so, before any byte moves)."""
    limit = session.settings().browser_model_mb
    if record.size_bytes > limit * 1024 * 1024:
        st.warning(
            _(
                "This model is {size} MB; a browser is sent models up to {limit} MB here (the setting "
                "browser_model_mb), so it is not sent. Benchmark it on this server, or make it smaller on the "
                "Quantize page."
            ).format(size=number(record.size_bytes / 1024 / 1024, 0), limit=limit)
        )
        return False
    return True


def _send(record: ModelRecord, inputs: list[BenchInput], webgpu: bool, settings: tuple[int, int, float, int]) -> None:
    iterations, warmup, budget, seed = settings
    request = BrowserRequest(
        model=measured_model(record, inputs), seed=seed, limit_mb=session.settings().browser_model_mb
    )
    payload = jobs.run(BROWSER, request, _("Preparing “{name}” for this browser").format(name=record.name))
    token = uuid.uuid4().hex
    meta = bench_message(
        payload, name=record.name, model_id=record.id, iterations=iterations, warmup=warmup, budget_s=budget,
        backend="webgpu" if webgpu else "wasm",
    )  # fmt: skip
    data = component_data(payload, meta, token, webgpu)
    most = int(st.get_option("server.maxMessageSize")) * 1024 * 1024
    if len(data) > most:
        st.warning(
            _(
                "The model, its inputs and ONNX Runtime Web come to {size} MB, more than this server sends in one "
                "message ({most} MB, Streamlit's server.maxMessageSize); nothing was sent."
            ).format(size=number(len(data) / 1024 / 1024, 0), most=most // (1024 * 1024))
        )
        return
    st.session_state[_PENDING] = (token, record.id, data)


def _save(value: object, token: str) -> BrowserRun | None:
    """The browser's result for ``token`` as a saved run (once per token); None until it has come."""
    saved: dict[str, BrowserRun] = st.session_state.setdefault(_SAVED, {})
    if token in saved:
        return saved[token]
    if not isinstance(value, str):
        return None
    try:
        data = json.loads(value)
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get("token") != token:
        return None
    if "error" in data:
        return None  # the component shows what went wrong
    try:
        report = browser_report(data)
    except WorkbenchError as exc:  # a device whose clock is years off: said, and nothing saved
        st.error(md_escape(str(exc), 600))
        return None
    saved[token] = report
    session.save_run(report)
    from ui.classroom_view import pool_browser  # lazy, as ui/jobs.py: the classroom uses this page's session

    pool_browser(report)  # a workshop participant's run goes to the room board, once per run
    return report


def browser_section(record: ModelRecord, inputs: list[BenchInput], ready: bool) -> None:
    """The section: what it does, the backend, the button, then the component while it runs and its result."""
    st.header(_("In this browser"), anchor="browser")
    st.markdown(
        _(
            "Run the same model on the device you are reading this on: ONNX Runtime Web runs it in this browser, "
            "on the same inputs (made on the server from the seed, with the server's outputs to compare). Each "
            "call is timed in the browser; the statistics are the server's, and the run is saved to the history "
            "with this browser as its machine. The model's bytes go only to this browser tab."
        )
    )
    left, mid, right = st.columns([2, 1, 1])
    backend = left.radio(
        _("Backend"),
        ["wasm", "webgpu"],
        format_func=lambda b: "WASM" if b == "wasm" else "WebGPU",  # names, in every language
        horizontal=True,
        help=_("WASM runs on the CPU; WebGPU on the GPU, where the browser has one (else it falls back to WASM)."),
        key="browser_backend",
    )
    iterations = mid.number_input(_("Timed calls in the browser"), 10, 10_000, 100, step=50, key="browser_iters")
    warmup = right.number_input(_("Warm-up calls in the browser"), 0, 1000, 10, key="browser_warmup")
    allowed = _limits(record)
    if st.button(_("Run it in this browser"), disabled=not (allowed and ready), key="browser_run"):
        seed = int(st.session_state.get("bench_seed", 0))
        _send(record, inputs, backend == "webgpu", (int(iterations), int(warmup), 60.0, seed))
    pending = st.session_state.get(_PENDING)
    if pending is None or pending[1] != record.id:
        st.caption(
            _(
                "WASM runs on one thread here: threads need a cross-origin isolated page, which this app's pages are "
                "not. WebGPU needs a browser with a GPU adapter; without one the run falls back to WASM and says so."
            )
        )
        return
    token, _model, data = pending
    state = _component(
        key="browser_bench", data=data, default={"result": None}, height="content", on_result_change=lambda: None
    )
    report = _save(state.get("result"), token)
    if report is not None:
        st.markdown(md_escape(say(headline(report)), 400))  # the server's statistics on the browser's call times
        pages.link("history", _("Saved to the history as run {run}").format(run=report.id), run=report.id)
