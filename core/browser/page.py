"""The page you can send (``python -m core browser-bench``): one self-contained HTML file holding the runner, ONNX
Runtime Web, the model, its inputs and the server's outputs (base64, nothing fetched), which benchmarks the model in
whatever browser opens it. Its words come from the catalog (page_words), in the language asked for."""

from __future__ import annotations

import base64
import html

from core.browser.payload import BrowserPayload, RuntimeFiles
from core.graph.page import script_json
from core.i18n import N_, _

__all__ = ["PAGE_WORDS", "bench_message", "page_words", "standalone_page"]

# Every word the runner shows (ui/browser_component/src: say(...)), by its English; tests/unit/test_browser_bench.py
# checks each is in the bundle, so a word changed there is changed here.
PAGE_WORDS = (
    N_("This browser has no WebGPU (navigator.gpu is missing), so the model ran on WASM."),
    N_("WebGPU gave no GPU adapter (no GPU, or the GPU is blocked or turned off), so the model ran on WASM."),
    N_("This page carries only the WASM build of ONNX Runtime Web, so the model ran on WASM."),
    N_("{count} threads (the page is cross-origin isolated)"),
    N_(
        "1 thread: the page is not cross-origin isolated, so it has no SharedArrayBuffer and ONNX Runtime Web cannot "
        "start threads; with them it could use up to {cores} cores"
    ),
    N_("Browser"),
    N_("Operating system"),
    N_("Cores the browser reports"),
    N_("Backend"),
    N_("on"),
    N_("off"),
    N_("Threads"),
    N_("GPU adapter"),
    N_("none"),
    N_("milliseconds per call; red: the median, shaded: its 95 % CI"),
    N_("calls"),
    N_("the outputs differ in size"),
    N_("Starting the runtime (compiling its WebAssembly)"),
    N_("Session creation"),
    N_("First call"),
    N_("Warm-up calls"),
    N_("Timed calls"),
    N_("Median"),
    N_("95 % CI of the median"),
    N_("Largest difference from the server's ONNX Runtime"),
    N_("Starting ONNX Runtime Web"),
    N_("Creating the session"),
    N_("Warming up"),
    N_("Timing calls one by one"),
    N_("{model} in this browser"),
    N_(
        "ONNX Runtime Web runs the model here, on this device; the inputs and the server's outputs came with the page, "
        "so nothing is sent anywhere."
    ),
    N_("This browser"),
    N_("ONNX Runtime Web failed while {stage}: {message}"),
    N_("Timings"),
    N_(
        "This page's clock moves in steps of {step} ms (browsers coarsen it; more so on a page that is not "
        "cross-origin isolated), so calls this short are timed only roughly."
    ),
    N_("The time budget ran out after {count} calls."),
    N_("Keep the result"),
    N_("Download the result (JSON)"),
    N_(
        "Import it in ONNX Workbench's History page, or with python -m core history --import FILE, to see it beside "
        "the server's runs."
    ),
)


def page_words() -> dict[str, str]:
    """The runner's words in the current language, keyed by their English (none in English: the runner's own)."""
    return {word: _(word) for word in PAGE_WORDS if _(word) != word}


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def bench_message(
    payload: BrowserPayload, *, name: str, model_id: str, iterations: int, warmup: int, budget_s: float, backend: str
) -> dict[str, object]:
    """What the runner is told of the run (the page's ``meta``)."""
    return {
        "model": name,
        "model_id": model_id,
        "seed": payload.seed,
        "plan_inputs": payload.plan_inputs,
        "iterations": iterations,
        "warmup": warmup,
        "budget_ms": budget_s * 1000,
        "backend": backend,
    }


_PAGE = """<!doctype html>
<html lang="{lang}"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline' blob: \
'wasm-unsafe-eval'; worker-src blob:; style-src 'unsafe-inline'; img-src data:">
<title>{title}</title>
<style>body{{margin:24px;background:#fff}}</style>
</head><body>
<div id="bench"></div>
<script id="bench-data" type="application/json">{data}</script>
<script id="bench-runtimes" type="application/json">{runtimes}</script>
<script id="bench-words" type="application/json">{words}</script>
<script>{runner}</script>
<script>BrowserBench.mountPage(document.getElementById("bench"));</script>
</body></html>
"""


def standalone_page(
    payload: BrowserPayload,
    runtime: RuntimeFiles,
    *,
    meta: dict[str, object],
    webgpu: bool,
    language: str,
) -> str:
    """The HTML page: ``meta`` from bench_message; ``webgpu`` adds the WebGPU build (6.6 MB more, 8.8 MB in
    base64), tried first where the browser has an adapter, WASM otherwise."""
    data = {
        "meta": meta,
        "model": _b64(payload.model),
        "inputs": [{"name": t.name, "dtype": t.dtype, "shape": t.shape, "data": _b64(t.data)} for t in payload.inputs],
        "reference": [{"name": t.name, "shape": t.shape, "data": _b64(t.data)} for t in payload.reference],
    }
    runtimes = {
        "wasm": {"code": _b64(runtime.wasm_code), "wasm": _b64(runtime.wasm_binary)},
        "webgpu": {"code": _b64(runtime.webgpu_code), "wasm": _b64(runtime.webgpu_binary)} if webgpu else None,
    }
    return _PAGE.format(
        lang=html.escape(language),
        title=html.escape(_("{model} in this browser").format(model=meta["model"])),
        data=script_json(data),
        runtimes=script_json(runtimes),
        words=script_json(page_words()),
        runner=runtime.runner.replace("</script", "<\\/script"),
    )
