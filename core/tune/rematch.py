"""A runtime's best timed again, alone in a job of its runtime: the rounds that Tune across runtimes alternates
between runtimes (core.tune.across), since two builds of ONNX Runtime cannot share the harness's rounds in one
process. Runs in the worker, with the harness (its cold run, warm-up and timed calls, to the deadline)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from core.model.inputs import plan_summary
from core.notes import Note, note
from core.runtime.harness import measure, result_of
from core.runtime.machine import environment
from core.runtime.session_config import SessionConfig
from core.tune.records import Candidate, TuneReport, TuneRequest
from core.tune.search import english_label
from core.tune.sessions import harness_config

__all__ = ["rematch"]

ITERATIONS = 2000  # the most calls; the deadline (the request's budget) ends it first on all but the fastest model
WARMUP = 5


def _silent(fraction: float, message: str) -> None:
    """Progress goes nowhere when nobody watches."""


def rematch(
    request: TuneRequest, config: SessionConfig, progress: Callable[[float, str], None] | None = None
) -> TuneReport:
    """``config`` (the request's ``rematch``) timed for ``request.budget_s`` seconds on ``request.model`` (the
    variant's file when the configuration is a variant's), as a report whose default and best are that one
    measurement."""
    began, started = time.perf_counter(), time.time()
    report = progress or _silent
    candidate = Candidate(config=config, label=english_label(config), stage="final")
    timed = harness_config(candidate, request.model.path, request.model.inputs, request.seed)
    notes: list[Note] = []
    deadline = began + request.budget_s
    rounds = measure([timed], ITERATIONS, WARMUP, request.budget_s, notes, report, (0.05, 0.95), deadline=deadline)
    candidate.result = result_of(timed)
    return TuneReport(
        id=uuid.uuid4().hex[:12], model=request.model.name or Path(request.model.path).name,
        model_id=request.model.id, created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        default=candidate, best=candidate, candidates=[candidate], headline=note(""), not_tried=[], notes=notes,
        tolerance="", budget_s=request.budget_s, seconds=time.perf_counter() - began,
        per_sample=config.batch > 1, environment=environment(torch=False), inputs=plan_summary(request.model.inputs),
        started=started, finished=time.time(), final_round={"rounds": rounds, "seed": request.seed},
    )  # fmt: skip
