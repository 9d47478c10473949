"""What Tune says: why the chosen configuration is the one, and what it did not try, as notes (a template and its
values) that a page, the command line or the history says in its reader's language (core.notes)."""

from __future__ import annotations

from core.i18n import N_
from core.notes import Note, NoteValue, note
from core.tune.records import Candidate, TuneReport
from core.tune.search import STAGES, config_note

__all__ = ["headline", "not_tried_note"]

BUDGET_OUT = N_("{stage}: not tried, the time budget ran out first.")
TOO_SLOW = N_(
    "{stage}: not tried, one call of the model takes {call} ms, so timing a setting beside the best so far takes about "
    "{need} s, and {left} s of the budget were left."
)
VARIANTS_TOO_SLOW = N_(
    "{stage}: not tried, making them, checking their accuracy and timing one would take about {need} s (one call of "
    "the model takes {call} ms), and {left} s of the budget were left."
)
HELD_OUT_FEWER = N_(
    "The variants' accuracy was checked on {count} held-out inputs of the {asked} asked for: one call of the model "
    "takes {call} ms, and the checks keep to a fifth of the time that was left."
)
NO_ACCELERATOR = N_("{stage}: not tried, this ONNX Runtime has no provider but the CPU's here.")
NO_GPU = N_("{stage}: not tried, it only pays on a GPU provider's device, and none was chosen.")
NO_CUDA_GRAPH = N_(
    "{stage}: not tried, ONNX Runtime replays CUDA graphs only on the CUDA provider with IO binding, and the best so "
    "far has not both."
)
FIXED_BATCH = N_("{stage}: not tried, the model's batch axis is fixed.")
GENERATIVE_BATCH = N_(
    "{stage}: not tried, a language model's batch is a serving choice (sequences generated at once), measured by "
    "the load test in tokens/s, not by one prefill call."
)
NO_VARIANT = N_("{stage}: none passed the accuracy tolerance, or none could be made.")
NOT_ASKED = N_("{stage}: not asked for.")
NOTHING_LEFT = N_("{stage}: nothing to try beside the best so far.")
# the headline: why the best is the best, and what a batch above 1 means for it
USE = N_(
    "Use {name}: {speedup}× as fast as ONNX Runtime's defaults, median {ms} ms (95 % CI {low}–{high}) against "
    "{base_ms} ms ({base_low}–{base_high}), measured side by side; the intervals do not overlap."
)
SLOWER = N_(
    "ONNX Runtime's defaults stay: {name}, the best other configuration, was slower when timed beside them (median "
    "{ms} ms, 95 % CI {low}–{high}, against {base_ms} ms, {base_low}–{base_high})."
)
OVERLAP = N_(
    "ONNX Runtime's defaults stay: {name}, the best other configuration, was not surely faster (median {ms} ms, "
    "95 % CI {low}–{high}, against {base_ms} ms, {base_low}–{base_high}); the intervals overlap."
)
NONE_MEASURED = N_(
    "ONNX Runtime's defaults stay: no other configuration could be measured within the time budget; give it more time."
)
NONE_FASTER = N_(
    "ONNX Runtime's defaults stay: none of the {count} other configurations measured was surely faster than them."
)
PER_SAMPLE = N_("Latencies are per sample: a call at batch {batch} serves {batch} samples.")
BATCH_TRADE = N_(
    "That is per sample: one call at batch {batch} serves {batch} requests and takes {call} ms, against {base_call} "
    "ms for one request with the defaults. It raises throughput, and a request that has to wait for its batch is "
    "answered later; where each request must be answered at once, keep batch 1."
)
SENTENCES = N_("{said} {more}")  # a sentence and the one that follows it
STRICT_LEFT = N_(
    "Strict: these configurations fell back to the CPU provider (a provider took no node or left some to it), so they "
    "were measured and shown but not chosen: {names}."
)


def not_tried_note(template: str, stage: str, **values: NoteValue) -> Note:
    """A line of ``not_tried``: ``template`` said of stage ``stage`` (and ``values``)."""
    return note(template, stage=note(STAGES[stage]), **values)


def _figures(c: Candidate) -> dict[str, NoteValue]:
    low, high = c.ci_ms
    return {"ms": c.median_ms, "low": low, "high": high}


def _then(said: Note, more: Note | None) -> Note:
    return note(SENTENCES, said=said, more=more) if more is not None else said


def headline(report: TuneReport) -> Note:
    """Why the best is the best: it is surely faster than the defaults (intervals apart, measured side by side), or
    the defaults stay, and why."""
    best, default = report.best, report.default
    per_sample: Note | None = None
    batch = max(c.config.batch for c in (best, report.runner_up or best))
    if report.per_sample and batch > 1:
        per_sample = note(PER_SAMPLE, batch=batch)
    base = {f"base_{k}": v for k, v in _figures(default).items()} if default.measured else {}
    if best.config != default.config and best.measured and default.measured:
        speedup = default.median_ms / best.median_ms
        if best.config.batch > default.config.batch:  # faster per sample, slower per call: say what it trades
            call, base_call = best.median_ms * best.config.batch, default.median_ms * default.config.batch
            per_sample = note(BATCH_TRADE, batch=best.config.batch, call=call, base_call=base_call)
        figures = {**_figures(best), **base, "speedup": f"{speedup:.2f}"}
        return _then(note(USE, name=config_note(best.config), **figures), per_sample)
    runner_up = report.runner_up
    if runner_up is not None and runner_up.measured and default.measured:
        template = SLOWER if runner_up.ci_ms[0] > default.ci_ms[1] else OVERLAP
        return _then(note(template, name=config_note(runner_up.config), **_figures(runner_up), **base), per_sample)
    tried = sum(1 for c in report.candidates if c.measured and c.config != default.config)
    if not tried:
        return note(NONE_MEASURED)
    return _then(note(NONE_FASTER, count=tried), per_sample)
