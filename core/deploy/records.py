"""What Deploy and the load test are asked and what they answer."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from core.access import ReadPath, WritePath
from core.model.inputs import BenchInput
from core.model.measured import MeasuredModel
from core.notes import Note
from core.runtime.machine import Environment
from core.runtime.session_config import SessionConfig

__all__ = ["DeployReport", "DeployRequest", "LoadResult", "LoadtestReport", "LoadtestRequest", "TokenLoadResult"]


@dataclass(frozen=True, kw_only=True)
class DeployRequest:
    """Write a server for ``model`` into ``out_dir``: the FastAPI app, the model, its session options (``tuned``:
    the session configuration Tune chose; None takes ONNX Runtime's defaults), pinned requirements, a Dockerfile,
    a README and a Triton model repository; and a zip of it all (the download)."""

    model: ReadPath  # the ONNX file
    out_dir: WritePath
    name: str = ""  # the model's name as the README and Triton call it; else the file's
    tuned: SessionConfig | None = None
    zip: bool = True
    # the command line given only the float32 model: make the variant the tuned configuration names from it first,
    # as Tune made it (Quantize's tools; FP16's range checked on the plan's inputs at Tune's seeds)
    remake_variant: bool = False
    inputs: list[BenchInput] = field(default_factory=list)
    seed: int = 0
    # the build of ONNX Runtime the server runs (core.runtime.runtimes; the job runs in its worker): its package is
    # pinned, its providers asked for (``providers``; none given: Tune's, else the runtime's own) with their options
    runtime: str = "default"
    providers: list[str] = field(default_factory=list)
    # a language model's tokenizer.json to package when none lies beside ``model`` (a tuned variant's, written in a
    # folder of its own: its original's; a Hugging Face folder's top)
    tokenizer: ReadPath = ""


@dataclass(kw_only=True)
class DeployReport:
    out_dir: str
    files: list[str]  # relative to out_dir
    zip_path: str  # "" when no zip was asked for
    inputs: list[dict[str, Any]]  # name, dtype, shape (None for an open axis) as the server checks them
    outputs: list[dict[str, Any]]
    session: SessionConfig  # the session options the server opens its session with (its session.json)
    triton_name: str  # the model's folder in the Triton repository
    generate: bool = False  # a language model: the server streams tokens from POST /generate


@dataclass(frozen=True, kw_only=True)
class LoadtestRequest:
    """Load a served model with ``concurrency`` workers in turn, each for ``duration_s`` seconds.

    Either ``app`` (a folder Deploy wrote: the job starts it on a loopback port of its own, and stops it after)
    or ``url`` (a server already running; local mode only: the job runner refuses a job that reaches the network
    in hosted mode). Outputs of a sample of responses are checked against ONNX Runtime in-process, on the same
    model, and its latency in-process is measured beside them so the HTTP overhead shows.
    """

    model: MeasuredModel
    app: ReadPath | None = None
    url: str = ""
    concurrency: list[int] = field(default_factory=lambda: [1, 4, 16])
    duration_s: float = 5.0
    # the request body: "auto" sends JSON unless its text would be large (AUTO_JSON_BYTES: then .npy for one input,
    # .npz for several, and the answers come as .npz too), "json", "npy" (one input) or "npz"
    body: str = "auto"
    checks: int = 5  # responses checked per concurrency
    seed: int = 0
    tuned: SessionConfig | None = None  # the in-process session's options for a URL (an app brings its own)
    # a language model's server (its /health lists "generate"): each stream asks for new_tokens after a prompt of
    # prompt_tokens ids drawn with the seed, and is measured in tokens (TokenLoadResult)
    new_tokens: int = 32
    prompt_tokens: int = 16
    runtime: str = "default"  # the build of ONNX Runtime the job runs in: the app it starts and in-process run on it


@dataclass(kw_only=True)
class LoadResult:
    concurrency: int
    requests: int
    errors: int
    rps: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    p50_low_ms: float  # 95 % order-statistic intervals (core.runtime.stats)
    p50_high_ms: float
    p90_low_ms: float
    p90_high_ms: float
    p99_low_ms: float
    p99_high_ms: float
    checked: int  # responses whose outputs were compared with ONNX Runtime in-process
    max_abs_diff: float | None
    error_examples: list[str] = field(default_factory=list)


@dataclass(kw_only=True)
class TokenLoadResult:
    """One concurrency's streams of /generate: time to first token and inter-token latency (p50, p95, over every
    stream's tokens), tokens per second per stream (the median stream's, from its first token to its last) and in
    total (every token received, over the load's time)."""

    concurrency: int
    streams: int  # streams that ran to their end
    tokens: int
    errors: int
    ttft_p50_ms: float
    ttft_p95_ms: float
    itl_p50_ms: float
    itl_p95_ms: float
    stream_tok_s: float
    total_tok_s: float
    checked: int  # streams whose tokens were compared with the same greedy loop in-process
    mismatched: int  # ... of which gave other tokens
    error_examples: list[str] = field(default_factory=list)


@dataclass(kw_only=True)
class LoadtestReport:
    id: str
    model: str
    model_id: str
    created_at: str  # ISO 8601, UTC
    target: str  # the URL loaded ("the app the job started" is its loopback address)
    started_app: bool
    body: str  # "json", "npy" or "npz": what the requests sent
    duration_s: float
    results: list[LoadResult]
    in_process_p50_ms: float  # the same session options, in the job's own process, one call at a time
    in_process_low_ms: float
    in_process_high_ms: float
    in_process_calls: int
    session: SessionConfig
    environment: Environment
    notes: list[Note]  # what went wrong or costs more than it should (core.deploy.loadtest), said where shown
    seconds: float
    stopped_at: int | None = None  # the concurrency at which a run of failures stopped the load (notes say more)
    served_providers: list[str] = field(default_factory=list)  # the providers the server's /health said it runs
    tokens: list[TokenLoadResult] = field(default_factory=list)  # a language model's server: /generate, in tokens
    new_tokens: int = 0  # ... each stream's tokens asked for, after a prompt of prompt_tokens
    prompt_tokens: int = 0
