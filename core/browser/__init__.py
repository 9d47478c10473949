"""The model on the visitor's own device: ONNX Runtime Web in their browser, on the server's input plan, its calls
timed there and their statistics computed here (core.runtime.stats), saved to the history like a server's run."""

from __future__ import annotations

from core.browser.payload import BrowserPayload, BrowserRequest, RuntimeFiles, browser_payload, runtime_files
from core.browser.result import browser_report

__all__ = ["BrowserPayload", "BrowserRequest", "RuntimeFiles", "browser_payload", "browser_report", "runtime_files"]
