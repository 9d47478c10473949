"""Tune: search ONNX Runtime's session settings for this model on this machine, within a time budget, and keep a
configuration only when it is surely faster than the defaults. Runs in the worker under the machine-wide lock.

Method: the search (core.tune.search) goes one setting at a time, the most promising first; each stage times its
candidates beside the best so far with the benchmark harness (core.runtime.harness: cold run, warm-up, rounds that
interleave them) and keeps a change only when its median's 95 % interval lies below the best's. Variants are
Quantize's, made by its tools and judged by its tolerance (core.quantize). A final round times the winner beside
ONNX Runtime's defaults, both opened afresh; the winner replaces the defaults only when the intervals are apart.
A quarter of the budget is kept for that round; the stages share the rest, and those it does not reach are named.
The search is planned from what one call at the defaults takes (and opening a session): a stage starts with as many
of its settings, the most promising first, as can each be timed FEWEST_CALLS times in the time left, and one that
cannot time even one says so with the call's time; every measurement keeps to its share (core.runtime.harness's
deadline), so a model of a second a call keeps the budget too (a 60 s one took 162 s and tried nothing).
After each stage, what was measured so far is written into the job's folder (core.tune.budget), so that a job the
worker's time limit ends keeps it.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from core.errors import TuneError, WorkbenchError
from core.i18n import _, number
from core.model.inputs import make_inputs, plan_summary
from core.notes import Note, note, read_notes
from core.quantize.judge import Tolerance
from core.quantize.records import VARIANTS
from core.quantize.variants import file_size, range_inputs
from core.runtime.activity import ActivityMeter
from core.runtime.fallback import FALLBACKS
from core.runtime.harness import Config, measure, result_of
from core.runtime.machine import environment
from core.runtime.ort import short_name
from core.runtime.session_config import SessionConfig
from core.tune.budget import TunePartial, write_partial
from core.tune.records import DEFAULT_VARIANTS, Candidate, TuneReport, TuneRequest
from core.tune.rematch import rematch
from core.tune.search import (
    NOT_HARDWARE,
    STAGES,
    Space,
    config_note,
    english_label,
    stage_configs,
    stage_winner,
    surely_faster,
)
from core.tune.sessions import harness_config, make_variants, open_session
from core.tune.words import (
    BUDGET_OUT,
    FIXED_BATCH,
    GENERATIVE_BATCH,
    HELD_OUT_FEWER,
    NO_ACCELERATOR,
    NO_CUDA_GRAPH,
    NO_GPU,
    NO_VARIANT,
    NOT_ASKED,
    NOTHING_LEFT,
    STRICT_LEFT,
    TOO_SLOW,
    VARIANTS_TOO_SLOW,
    headline,
    not_tried_note,
)

__all__ = ["run_tune"]

FINAL_SHARE = 0.25  # of the budget, kept for the final round: the defaults beside the winner
MIN_STAGE_S = 0.3  # a stage with less time than this left is not started
VARIANT_SHARE = 0.3  # of the search's time, left at least before variants are made (ORT's tools take seconds)
MIN_CALLS = 10  # per configuration, where the time allows: fewer give a wide interval
FEWEST_CALLS = 6  # per configuration at least: the fewest whose median has a 95 % interval
OVERHEAD_CALLS = 3  # a configuration's calls besides the timed ones: a trial, the first run, a warm-up
PROBES = 5  # calls at the defaults whose fastest sizes the first stage's rounds
PROBE_SHARE = 0.05  # of the budget, the most those calls take (one of them at least)
MAKE_S, MAKE_MB_S = 1.0, 50.0  # what making a variant takes, guessed: a second, and a second per 50 MB of the model
Progress = Callable[[float, str], None]


def _silent(fraction: float, message: str) -> None:
    """Progress goes nowhere when nobody watches."""


def _validate(request: TuneRequest) -> None:
    if not 1 <= request.budget_s <= 24 * 3600:
        raise TuneError(_("The time budget must be between 1 s and 24 hours."))
    keys = request.variants if request.variants is not None else list(DEFAULT_VARIANTS)
    unknown = [k for k in keys if k not in VARIANTS]
    static = [k for k in keys if k in VARIANTS and VARIANTS[k].mode == "static"]
    if unknown or static:
        raise TuneError(
            _("Tune tries dynamic INT8 and FP16 variants ({known}), not {names}; static INT8 needs calibration data: "
              "make it on the Quantize page.").format(
                known=", ".join(k for k, v in VARIANTS.items() if v.mode != "static"), names=", ".join(unknown + static)
            )
        )  # fmt: skip
    if any(not 1 <= b <= 4096 for b in request.batches or []):
        raise TuneError(_("Batch sizes must be between 1 and 4096."))
    if not 1 <= request.held_out <= 1000:
        raise TuneError(_("Held-out samples for accuracy must be between 1 and 1,000."))
    import onnxruntime as ort

    available = ort.get_available_providers()
    absent = [p for p in request.providers or [] if p not in available]
    if absent:
        said = _(
            "{providers} is not in the runtime {runtime} (it offers {offered}); tune on a runtime that has it "
            "(--runtime NAME; `python -m core runtimes` lists them)."
        )
        offered = ", ".join(short_name(p) for p in available)
        names = ", ".join(short_name(p) for p in absent)
        raise TuneError(said.format(providers=names, runtime=request.runtime, offered=offered))


def _space(request: TuneRequest, not_tried: list[Note]) -> Space:
    import onnxruntime as ort
    import psutil

    asked = request.providers or ort.get_available_providers()  # the runtime's own unless told
    providers = tuple(p for p in dict.fromkeys(asked) if p not in NOT_HARDWARE)
    if not providers:
        not_tried.append(not_tried_note(NO_ACCELERATOR, "providers"))
    open_batch = any(s.batch_axis is not None for s in request.model.inputs)
    generative = any(s.role == "past" for s in request.model.inputs)  # one prefill call says nothing of its batch
    batches = tuple(sorted({b for b in (request.batches or [8]) if b > 1})) if open_batch and not generative else ()
    if generative:
        not_tried.append(not_tried_note(GENERATIVE_BATCH, "batch"))
    elif not open_batch:
        not_tried.append(not_tried_note(FIXED_BATCH, "batch"))
    return Space(physical_cores=psutil.cpu_count(logical=False) or 1, providers=providers, variants=(), batches=batches)


class _Search:
    """One tuning run's state: the clock, the candidates so far and what was left out."""

    def __init__(self, request: TuneRequest, progress: Progress) -> None:
        self.request, self.progress = request, progress
        self.began = time.perf_counter()
        self.deadline = self.began + request.budget_s
        self.reserve = request.budget_s * FINAL_SHARE
        self.not_tried: list[Note] = []
        self.notes: list[Note] = []
        self.tried: list[Candidate] = []
        self.paths: dict[str, str] = {}
        self.space = _space(request, self.not_tried)
        self.open_s = 0.0  # what opening a session of the model takes (s)
        self.call_ms = self._probe()

    def left(self) -> float:
        return self.deadline - self.reserve - time.perf_counter()

    def per_config_s(self) -> float:
        """What timing one more configuration takes at the fewest calls: opening its session, and its calls."""
        return self.open_s + (FEWEST_CALLS + OVERHEAD_CALLS) * self.call_ms / 1000

    def _probe(self) -> float:
        """About how long one call at the defaults takes (ms): what sizes each stage's rounds (and ``open_s``)."""
        model = self.request.model
        session, load_ms = open_session(model.path, SessionConfig(runtime=self.request.runtime))
        self.open_s = load_ms / 1000
        feed = make_inputs(model.inputs, 1, self.request.seed)
        took = []
        try:
            session.run(None, feed)  # the first call pays for allocations
            enough = time.perf_counter() + PROBE_SHARE * self.request.budget_s
            for _call in range(PROBES):  # a call preempted on a busy machine would make every stage look too long
                start = time.perf_counter()
                session.run(None, feed)
                took.append(time.perf_counter() - start)
                if time.perf_counter() > enough:
                    break
        except Exception as exc:
            raise TuneError(_("The model failed on the plan's inputs: {error}").format(error=str(exc)[:600])) from exc
        return max(min(took) * 1000, 0.001)

    def measure(
        self, candidates: list[Candidate], seconds: float, span: tuple[float, float], notes: list[Note]
    ) -> dict[str, int]:
        """Time ``candidates`` side by side for about ``seconds`` with the harness; each gets its result, or the
        reason it could not be opened, within ``seconds`` from now (opening the sessions too). Returns how:
        iterations, warmup, rounds and seed."""
        deadline = time.perf_counter() + seconds
        configs: list[tuple[Candidate, Config]] = []
        model = self.request.model
        for c in candidates:
            path = self.paths.get(c.config.variant, model.path)
            try:
                configs.append((c, harness_config(c, path, model.inputs, self.request.seed)))
            except WorkbenchError as exc:
                c.error = str(exc)
        configs = self._affordable(configs, seconds)
        if not configs:
            return {}
        per_round = sum(self.call_ms * c.config.batch for c, _cfg in configs)
        iterations = int(min(2000, max(MIN_CALLS, 0.7 * seconds * 1000 / per_round)))
        warmup = min(10, max(1, iterations // 20))
        try:
            timed = [cfg for _c, cfg in configs]
            rounds = measure(timed, iterations, warmup, seconds, notes, self.progress, span, deadline=deadline)
        except WorkbenchError as exc:  # one configuration failed on the inputs: the stage is left out
            for c, _cfg in configs:
                c.error = str(exc)
            return {}
        for c, cfg in configs:
            c.result = result_of(cfg)
        return {"iterations": iterations, "warmup": warmup, "rounds": rounds, "seed": self.request.seed}

    def _affordable(self, configs: list[tuple[Candidate, Config]], seconds: float) -> list[tuple[Candidate, Config]]:
        """The configurations whose one call leaves room for the fewest calls in ``seconds`` (a setting can make a
        call far slower: parallel execution on a busy machine); the others say how long their call took. Sizes the
        rounds by the slowest kept."""
        kept, slowest = [], 0.0
        for c, cfg in configs:
            start = time.perf_counter()
            try:
                cfg.run()
            except Exception:  # the harness's first run says why, in its words
                kept.append((c, cfg))
                continue
            ms = (time.perf_counter() - start) * 1000 / c.config.batch
            if c is not configs[0][0] and ms * c.config.batch * FEWEST_CALLS > seconds * 1000:
                c.error = _("Too slow to measure within the budget: one call took {ms} ms.").format(ms=f"{ms:.3g}")
                continue
            kept.append((c, cfg))
            slowest = max(slowest, ms)
        self.call_ms = max(self.call_ms, min(slowest, 10 * self.call_ms)) if slowest else self.call_ms
        return kept

    def variants(self) -> list[Candidate]:
        """Quantize's variants, made and judged while time is left; the ones within tolerance join the space."""
        request = self.request
        keys = request.variants if request.variants is not None else list(DEFAULT_VARIANTS)
        if not keys:
            self.not_tried.append(not_tried_note(NOT_ASKED, "variant"))
            return []
        if self.left() < VARIANT_SHARE * (request.budget_s - self.reserve):  # making them takes seconds
            self.not_tried.append(not_tried_note(BUDGET_OUT, "variant"))
            return []
        held = self._held_out(len(keys))
        if not held:
            return []
        held_out = [make_inputs(request.model.inputs, 1, request.seed + 1 + k) for k in range(held)]
        tolerance = Tolerance(min_cosine=request.min_cosine)
        deadline = self.deadline - self.reserve
        seen = range_inputs(request.model.inputs, request.seed)
        made, self.paths, notes = make_variants(
            keys, Path(request.model.path), Path(request.out_dir), (seen, held_out), tolerance, deadline
        )
        self.notes += read_notes(notes)  # Quantize's
        for c in made:  # judged on this worker's runtime: its candidates say so
            c.config = dataclasses.replace(c.config, runtime=request.runtime)
            c.label = english_label(c.config)
        passing = tuple(c.config.variant for c in made if c.accuracy_ok)
        self.space = dataclasses.replace(self.space, variants=passing)
        if not passing:
            self.not_tried.append(not_tried_note(NO_VARIANT, "variant"))
        return made

    def _held_out(self, count: int) -> int:
        """How many held-out inputs the ``count`` variants are judged on: as many as asked, or as a fifth of the time
        left allows (two at least), a note saying so; 0 (and why in ``not_tried``) when making the variants,
        judging them and timing one beside the best so far would not fit in the time left."""
        request, left, call_s = self.request, max(self.left(), 0.0), self.call_ms / 1000
        held = min(request.held_out, max(2, int(0.2 * left / (call_s * (1 + count)))))
        making = count * (MAKE_S + file_size(Path(request.model.path)) / 1e6 / MAKE_MB_S)
        need = making + held * (1 + count) * call_s + 2 * self.per_config_s()
        if need > left:
            self.not_tried.append(not_tried_note(VARIANTS_TOO_SLOW, "variant", need=need, left=left, call=self.call_ms))
            return 0
        if held < request.held_out:
            self.notes.append(note(HELD_OUT_FEWER, count=held, asked=request.held_out, call=self.call_ms))
        return held

    def stage(self, stage: str, incumbent: Candidate, span: tuple[float, float], stages_left: int) -> Candidate:
        """Try stage ``stage`` against ``incumbent``; returns the winner (``incumbent`` unless one is surely
        faster)."""
        judged = {c.config.variant: c for c in self.variants()} if stage == "variant" else {}
        self.tried += [j for j in judged.values() if not j.accuracy_ok]  # shown with why they were left out
        configs = stage_configs(stage, incumbent.config, self.space)
        if not configs:
            if stage == "io_binding":
                self.not_tried.append(not_tried_note(NO_GPU, stage))
            elif stage == "cuda_graph":
                self.not_tried.append(not_tried_note(NO_CUDA_GRAPH, stage))
            elif stage in ("threads", "level", "mode"):
                self.not_tried.append(not_tried_note(NOTHING_LEFT, stage))
            return incumbent
        candidates = [Candidate(config=c, label=english_label(c), stage=stage) for c in configs]
        for c in candidates:  # a variant keeps the accuracy it was judged with
            known = judged.get(c.config.variant)
            if known is not None:
                c.accuracy_ok, c.accuracy_note, c.cosine, c.max_abs_error = (
                    known.accuracy_ok, known.accuracy_note, known.cosine, known.max_abs_error
                )  # fmt: skip
        each, left = self.per_config_s(), max(self.left(), 0.0)
        fit = int(left // each) - 1  # beside the best so far, which is timed again in the same rounds
        if fit < 1:  # a slow model: not one setting can be timed beside the best so far
            self.not_tried.append(not_tried_note(TOO_SLOW, stage, call=self.call_ms, need=2 * each, left=left))
            return incumbent
        for c in candidates[fit:]:  # the most promising first: the others wait for a longer budget
            said = _("Not measured: the time left held {count} of this stage's {total} settings.")
            c.error = said.format(count=fit, total=len(candidates))
        self.tried += candidates[fit:]
        candidates = candidates[:fit]
        seconds = min(max(left / stages_left, (len(candidates) + 1) * each), left)
        again = Candidate(config=incumbent.config, label=incumbent.label, stage=stage)
        self.progress(span[0], _("Trying {stage}").format(stage=_(STAGES[stage])))
        self.measure([again, *candidates], seconds, span, [])
        if again.measured:
            self.call_ms = again.median_ms  # what a call costs now: sizes the next stages' rounds
            for c in candidates:
                c.against, c.against_ms = again.label, (again.median_ms, *again.ci_ms)
        self.tried += candidates
        # a provider that fell back is shown so, measured; under strict it is never chosen (core.runtime.fallback)
        winner = stage_winner(again, [c for c in candidates if not (self.request.strict and c.fell_back)])
        return winner if winner is not again else incumbent


def _fallbacks(candidates: list[Candidate]) -> list[Note]:
    """What fell back, once each (a provider that took no node or left nodes to the CPU provider): said before any
    figure, as Benchmark says it."""
    said: dict[str, Note] = {}
    for c in candidates:
        for n in c.placement:
            if n.key in FALLBACKS:
                said.setdefault(n.english(), n)
    return list(said.values())


def run_tune(request: TuneRequest, progress: Progress | None = None) -> TuneReport:
    """Search, then the final round, then the answer; see the module's docstring for the method."""
    if request.rematch is not None:  # a runtime's best timed again, between the other runtimes' (core.tune.across)
        return rematch(request, request.rematch, progress)
    _validate(request)
    report_progress = progress or _silent
    report_progress(0.01, _("Opening the model at ONNX Runtime's defaults"))
    search = _Search(request, report_progress)
    started_wall, meter = time.time(), ActivityMeter()
    home = SessionConfig(runtime=request.runtime)  # ONNX Runtime's defaults, in this worker's build
    default = Candidate(config=home, label=english_label(home), stage="final")
    best = default
    stages = list(STAGES)
    for k, stage in enumerate(stages):
        if search.left() < MIN_STAGE_S:
            search.not_tried += [not_tried_note(BUDGET_OUT, s) for s in stages[k:]]
            break
        span = (0.05 + 0.7 * k / len(stages), 0.05 + 0.7 * (k + 1) / len(stages))
        best = search.stage(stage, best, span, len(stages) - k)
        done = TunePartial(budget_s=request.budget_s, seconds=time.perf_counter() - search.began,
                           stages_done=stages[: k + 1], best=best, candidates=list(search.tried))  # fmt: skip
        write_partial(request.out_dir, done)  # a job the worker's limit ends still keeps what was measured
    final = Candidate(config=best.config, label=best.label, stage="final")
    report_progress(0.78, _("Final round: the best beside ONNX Runtime's defaults"))
    seconds = max(search.deadline - time.perf_counter(), MIN_STAGE_S)
    pair = [default] if final.config == default.config else [default, final]
    final_round = search.measure(pair, seconds, (0.78, 0.98), [])  # bounded on purpose: its calls are in the table
    if not default.measured:
        said = _("The model could not be measured at ONNX Runtime's defaults: {error}")
        raise TuneError(said.format(error=default.error))
    activity = meter.stop()
    left_out = [c for c in search.tried if request.strict and c.fell_back and c.measured]
    if left_out:  # said, so that "none was surely faster" is not read as "none was faster"
        names = [config_note(config) for config in dict.fromkeys(c.config for c in left_out)]  # said in "; "
        search.notes.append(note(STRICT_LEFT, names=names))
    wins = final.config != default.config and surely_faster(final, default)
    wins = wins and not (request.strict and final.fell_back)
    report = TuneReport(
        id=uuid.uuid4().hex[:12],
        model=request.model.name or Path(request.model.path).name,
        model_id=request.model.id,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        default=default,
        best=final if wins else default,
        runner_up=None if wins or final.config == default.config else final,
        candidates=[default, *search.tried],
        headline=Note.kept(""),
        not_tried=search.not_tried,
        notes=_fallbacks([default, final, *search.tried])
        + search.notes
        + ([activity.note] if (activity.busy or not activity.known) and activity.note else []),
        tolerance=Tolerance(min_cosine=request.min_cosine).describe(),
        budget_s=request.budget_s,
        seconds=time.perf_counter() - search.began,
        per_sample=any(c.config.batch > 1 for c in search.tried if c.measured),
        environment=environment(torch=False),  # Tune never runs PyTorch: its version is not part of what it measured
        inputs=plan_summary(request.model.inputs),
        variant_paths=search.paths,
        started=started_wall,
        finished=time.time(),
        activity=activity,
        final_round=final_round,
    )
    report.headline = headline(report)
    report_progress(1.0, _("Done in {seconds} s").format(seconds=number(report.seconds, 1)))
    return report
