"""What Tune says: why the chosen configuration is the one, and what it did not try. A saved run keeps these in
English; a page finds the template again and shows it in its reader's language (core.recorded)."""

from __future__ import annotations

from core.i18n import N_, _, number
from core.recorded import shown, significant
from core.tune.records import Candidate, TuneReport
from core.tune.search import STAGES, config_label

__all__ = ["NOT_TRIED", "headline", "not_tried_text", "shown_not_tried"]

BUDGET_OUT = N_("{stage}: not tried, the time budget ran out first.")
NO_ACCELERATOR = N_("{stage}: not tried, this ONNX Runtime has no provider but the CPU's here.")
NO_GPU = N_("{stage}: not tried, it only pays on a GPU provider's device, and none was chosen.")
FIXED_BATCH = N_("{stage}: not tried, the model's batch axis is fixed.")
NO_VARIANT = N_("{stage}: none passed the accuracy tolerance, or none could be made.")
NOT_ASKED = N_("{stage}: not asked for.")
NOTHING_LEFT = N_("{stage}: nothing to try beside the best so far.")
NOT_TRIED = (BUDGET_OUT, NO_ACCELERATOR, NO_GPU, FIXED_BATCH, NO_VARIANT, NOT_ASKED, NOTHING_LEFT, *STAGES.values())


def not_tried_text(template: str, stage: str) -> str:
    """A line of ``not_tried``, in English (kept in the run)."""
    return template.format(stage=STAGES[stage])


def _figures(c: Candidate) -> dict[str, str]:
    low, high = c.ci_ms
    return {"ms": significant(c.median_ms), "low": significant(low), "high": significant(high)}


def headline(report: TuneReport) -> str:
    """Why the best is the best, in the reader's language: it is surely faster than the defaults (intervals apart,
    measured side by side), or the defaults stay, and why."""
    best, default = report.best, report.default
    per_sample = ""
    batch = max(c.config.batch for c in (best, report.runner_up or best))
    if report.per_sample and batch > 1:
        said = _("Latencies are per sample: a call at batch {batch} serves {batch} samples.")
        per_sample = " " + said.format(batch=batch)
    base = {f"base_{k}": v for k, v in _figures(default).items()} if default.measured else {}
    if best.config != default.config and best.measured and default.measured:
        speedup = default.median_ms / best.median_ms
        if best.config.batch > default.config.batch:  # faster per sample, slower per call: say what it trades
            per_sample = " " + _(
                "That is per sample: one call at batch {batch} serves {batch} requests and takes {call} ms, against "
                "{base_call} ms for one request with the defaults. It raises throughput, and a request that has to "
                "wait for its batch is answered later; where each request must be answered at once, keep batch 1."
            ).format(
                batch=best.config.batch,
                call=significant(best.median_ms * best.config.batch),
                base_call=significant(default.median_ms * default.config.batch),
            )
        return (
            _(
                "Use {name}: {speedup}× as fast as ONNX Runtime's defaults, median {ms} ms (95 % CI {low}–{high}) "
                "against {base_ms} ms ({base_low}–{base_high}), measured side by side; the intervals do not overlap."
            ).format(name=config_label(best.config), speedup=number(speedup, 2), **_figures(best), **base)
            + per_sample
        )
    runner_up = report.runner_up
    if runner_up is not None and runner_up.measured and default.measured and runner_up.ci_ms[0] > default.ci_ms[1]:
        return (
            _(
                "ONNX Runtime's defaults stay: {name}, the best other configuration, was slower when timed beside "
                "them (median {ms} ms, 95 % CI {low}–{high}, against {base_ms} ms, {base_low}–{base_high})."
            ).format(name=config_label(runner_up.config), **_figures(runner_up), **base)
            + per_sample
        )
    if runner_up is not None and runner_up.measured and default.measured:
        return (
            _(
                "ONNX Runtime's defaults stay: {name}, the best other configuration, was not surely faster "
                "(median {ms} ms, 95 % CI {low}–{high}, against {base_ms} ms, {base_low}–{base_high}); the intervals "
                "overlap."
            ).format(name=config_label(runner_up.config), **_figures(runner_up), **base)
            + per_sample
        )
    tried = sum(1 for c in report.candidates if c.measured and c.config != default.config)
    if not tried:
        return _(
            "ONNX Runtime's defaults stay: no other configuration could be measured within the time budget; give it "
            "more time."
        )
    return (
        _(
            "ONNX Runtime's defaults stay: none of the {count} other configurations measured was surely faster than "
            "them."
        ).format(count=number(tried))
        + per_sample
    )


def shown_not_tried(lines: list[str]) -> list[str]:
    return [shown(line, NOT_TRIED) for line in lines]
