"""What Generate is asked and what it answers: a language model run token by token, greedy, with the figures its
users measure (time to the first token, tokens per second, inter-token latency, the cache's size, the worker's
peak memory), for ONNX Runtime and, with a PyTorch reference, for PyTorch eager beside it, token by token."""

from __future__ import annotations

from dataclasses import dataclass, field

from core.access import ReadPath
from core.model.generative import GenerativeLayout, GenerativePlan
from core.notes import Note
from core.runtime.machine import Environment
from core.runtime.stats import Interval

__all__ = ["EngineRun", "GenerateReport", "GenerateRequest", "Percentiles"]


@dataclass(frozen=True, kw_only=True)
class GenerateRequest:
    """A model generated from ``plan``, greedy, ``runs`` times after ``warmup`` runs, on ONNX Runtime and, with
    ``reference`` (a Hugging Face folder: config.json and safetensors weights), on PyTorch eager too."""

    model: ReadPath  # the ONNX file (its external data, genai_config.json and tokenizer.json beside it)
    plan: GenerativePlan = field(default_factory=GenerativePlan)
    reference: ReadPath = ""  # a Hugging Face folder of the PyTorch model, for eager token by token
    # a tokenizer.json for a text prompt and the tokens' text, when none lies beside the model (a Hugging Face folder
    # keeps it at its top, its ONNX files under onnx/)
    tokenizer: ReadPath = ""
    name: str = ""  # as the report names the model; else the file's name
    model_id: str = ""  # its sha256
    runs: int = 5
    warmup: int = 1
    threads: int | None = None  # intra-op threads; None: every core but one (core.runtime.machine.default_threads)
    level: str = "all"  # ONNX Runtime's optimization level (a key of core.runtime.ort.LEVELS)
    provider: str = "CPUExecutionProvider"


@dataclass(frozen=True, kw_only=True)
class Percentiles:
    """Percentiles of the decode steps' latencies (every step of every run), in ms."""

    p50: float
    p95: float
    p99: float


@dataclass(kw_only=True)
class EngineRun:
    """One engine's generation: its tokens and its figures over the runs."""

    engine: str  # "ort" or "eager"
    label: str  # "ONNX Runtime (ALL)", "PyTorch eager"
    tokens: list[list[int]]  # the generated ids, per sequence (the first from the prefill)
    ttft_ms: Interval  # time to the first token: the prefill and the first token's choice
    prefill_tok_s: Interval  # prompt tokens (all sequences) per second of prefill
    decode_tok_s: Interval  # generated tokens after the first (all sequences) per second of decoding
    inter_token_ms: Percentiles  # the time between two tokens, every decode step of every run
    step_ms: list[float]  # per position of the generated tokens, the median over the runs (0: the prefill)
    kv_cache_mb: float  # the cache's size once the last token is generated
    peak_rss_mb: float  # the worker's peak resident memory while this engine ran (not the machine's)
    load_ms: float  # creating the session, or loading the PyTorch model
    runs_ms: list[float] = field(default_factory=list)  # each run's whole time, for the record
    text: list[str] = field(default_factory=list)  # the generated tokens as text, per sequence (with a tokenizer)
    pieces: list[list[str]] = field(default_factory=list)  # per sequence, the text each token adds (with a tokenizer)
    steady: bool = True  # every run generated the same tokens


@dataclass(kw_only=True)
class GenerateReport:
    """Generate's answer: ONNX Runtime's run, PyTorch eager's beside it with a reference, and where they part."""

    model: str
    model_id: str
    created_at: str
    layout: GenerativeLayout  # the cache as the worker recognised it
    plan: GenerativePlan  # as asked
    prompt_ids: list[list[int]]  # the prompt the runs used, per sequence
    prompt_text: list[str]  # the prompt as text, per sequence (with a tokenizer; else empty)
    ort: EngineRun
    eager: EngineRun | None = None
    first_divergent_token: int | None = None  # the first step where the tokens differ (0: the first token)
    logit_diffs: list[float] = field(default_factory=list)  # per step, the largest |ORT - eager| of the logits
    runs: int = 0
    threads: int = 1
    environment: Environment | None = None
    notes: list[Note] = field(default_factory=list)
    seconds: float = 0.0
