"""What Tune is asked and what it answers: every candidate configuration with its latency, the defaults, the one
chosen and why."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from core.access import WritePath
from core.model.measured import MeasuredModel
from core.notes import Note
from core.runtime.activity import Activity
from core.runtime.fallback import FALLBACKS
from core.runtime.harness import BenchResult
from core.runtime.machine import Environment
from core.runtime.runtimes import RuntimeChoice
from core.runtime.session_config import SessionConfig

__all__ = ["DEFAULT_VARIANTS", "Candidate", "TuneReport", "TuneRequest"]

DEFAULT_VARIANTS = ("dynamic-qint8", "fp16")  # Quantize's variants tried unless told otherwise (no calibration)


@dataclass(frozen=True, kw_only=True)
class TuneRequest(RuntimeChoice):
    """Search the session configurations of ``model`` for ``budget_s`` seconds, the promising ones first; variants
    (keys of Quantize's VARIANTS) are made into ``out_dir`` and must pass Quantize's accuracy tolerance
    (``min_cosine``); ``batches`` above 1 are tried only when the batch axis is open (None: 1 and 8). On its runtime
    (RuntimeChoice) it tries ``providers`` of that build (None: each it has); with ``strict``, a candidate whose
    provider took no node or left some to the CPU provider is measured but never chosen."""

    model: MeasuredModel
    out_dir: WritePath
    budget_s: float = 60.0
    variants: list[str] | None = None
    batches: list[int] | None = None
    held_out: int = 8
    seed: int = 0
    min_cosine: float = 0.99
    rematch: SessionConfig | None = None  # no search: this configuration timed again alone (core.tune.rematch)


@dataclass(kw_only=True)
class Candidate:
    """One configuration tried: its latency at its batch (``result``), per sample below, and for a variant the
    accuracy it kept."""

    config: SessionConfig
    label: str  # in English, as the history keeps it: "intra 1 · ALL · fp32"
    stage: str  # the part of the search that tried it: threads, level, providers, io_binding, variant, batch
    result: BenchResult | None = None
    error: str = ""  # why it could not be measured (a provider that refused the model, a variant not made)
    accuracy_ok: bool | None = None  # a variant within Quantize's tolerance (None: the original, or not measured)
    accuracy_note: Note | str = ""  # why not (a note; str: an earlier version's sentence; "" when within)
    cosine: float | None = None  # of the variant's outputs with the original's
    max_abs_error: float | None = None
    # the best configuration so far, measured in the same rounds: what this one had to beat (its label, median and
    # 95 % interval per sample); None in the final round, where the defaults are the candidate beside it
    against: str = ""
    against_ms: tuple[float, float, float] | None = None
    # what its session did: the providers it kept (``get_providers()``, in the runtime that measured it), how many
    # nodes each ran, and what fell back (core.runtime.fallback's notes: warnings for a provider that took nothing)
    used: list[str] = field(default_factory=list)
    nodes: dict[str, int] = field(default_factory=dict)
    placement: list[Note] = field(default_factory=list)

    @property
    def fell_back(self) -> bool:
        """Whether a provider it asked for was absent, left out, took no node or left nodes to the CPU provider."""
        return any(n.key in FALLBACKS for n in self.placement)

    @property
    def measured(self) -> bool:
        return self.result is not None and self.result.n > 0

    @property
    def median_ms(self) -> float:
        """The median per sample (per call at batch 1)."""
        assert self.result is not None
        return self.result.median_ms / self.config.batch

    @property
    def ci_ms(self) -> tuple[float, float]:
        """The median's 95 % interval, per sample."""
        assert self.result is not None
        return self.result.median_low_ms / self.config.batch, self.result.median_high_ms / self.config.batch


@dataclass(kw_only=True)
class TuneReport:
    id: str
    model: str
    model_id: str
    created_at: str  # ISO 8601, UTC
    default: Candidate  # ONNX Runtime's defaults, measured in the final round beside the best
    best: Candidate  # the default itself unless another is surely faster
    candidates: list[Candidate]  # every one tried, the default first, in the order tried
    headline: Note  # why the best is the best (core.tune.words.headline)
    not_tried: list[Note]  # the parts of the search the budget or the machine left out
    notes: list[Note]
    tolerance: Note | str  # what a variant must keep of the original's outputs (Quantize's rule, a note)
    budget_s: float
    seconds: float  # the whole run, from the request to the answer
    per_sample: bool  # some candidate ran at a batch above 1: latencies are per sample
    environment: Environment
    inputs: dict[str, Any] = field(default_factory=dict)  # the plan, as Benchmark records it
    variant_paths: dict[str, str] = field(default_factory=dict)  # variant key -> its file in the job's folder
    started: float = 0.0
    finished: float = 0.0
    activity: Activity | None = None
    # the best other configuration when it did not win the final round (then ``best`` is the default)
    runner_up: Candidate | None = None
    final_round: dict[str, int] = field(default_factory=dict)  # iterations, warmup, rounds and seed of the final round
    # tuned across runtimes (core.tune.across): each runtime's best (its own final round) and its onnxruntime version
    runtime_bests: list[Candidate] = field(default_factory=list)
    runtime_versions: dict[str, str] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        """Whether another configuration than the defaults won (surely faster in the final round)."""
        return self.best.config != self.default.config

    def is_winner(self, candidate: Candidate) -> bool:
        """Whether ``candidate`` is the winner's final-round measurement (never the defaults)."""
        return self.changed and candidate.stage == "final" and candidate.config == self.best.config
