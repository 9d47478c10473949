"""Deploy: a small FastAPI server generated for a model (with a Triton repository beside it), and its latency
under load over HTTP, against ONNX Runtime in-process."""

from __future__ import annotations

from core.deploy.records import (
    DeployReport,
    DeployRequest,
    LoadResult,
    LoadtestReport,
    LoadtestRequest,
    TokenLoadResult,
)

__all__ = ["DeployReport", "DeployRequest", "LoadResult", "LoadtestReport", "LoadtestRequest", "TokenLoadResult"]
