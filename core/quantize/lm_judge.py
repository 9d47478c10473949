"""How a language model's variant is judged: by its greedy tokens against the original's on every prompt (a variant
that changes one is never recommended, whatever its speed, and it is said where and by how much), then by its
decoding speed and its size; and the notes that say so (core.notes)."""

from __future__ import annotations

from typing import Any

from core.i18n import N_
from core.notes import Note, note, warning
from core.quantize.lm_records import Divergence, LMQuantizeReport, LMVariant
from core.runtime.greedy import NOISY_DECODE, Trace
from core.runtime.harness import NOISY
from core.runtime.stats import Interval

__all__ = ["CHANGED", "KEPT", "divergence", "judge_variants", "largest_difference", "method_note", "repeats_note"]

KEPT = N_(
    "{variant}: the same greedy tokens as the original on all {prompts} prompts ({tokens} tokens each); the logits "
    "differ by at most {diff}."
)
CHANGED = N_(
    "{variant} changes the greedy tokens on {parted} of {prompts} prompts: first on prompt {prompt} at token {step} "
    "(0 is the first generated), where it chose {variant_token} and the original {float_token}; the original "
    "preferred its token by {margin} in its logits, and the variant's logits moved by up to {diff} there. Not "
    "recommended, whatever its speed."
)
FASTER = N_(
    "Recommended: {variant}: the same greedy tokens as the original on all {prompts} prompts, {speedup}× its decoding "
    "speed (95 % CI {low}–{high}), {smaller}× smaller."
)
SMALLER = N_(
    "Recommended for size: {variant}: the same greedy tokens as the original on all {prompts} prompts, {smaller}× "
    "smaller; no variant that keeps the tokens is surely faster on this machine."
)
NONE_KEPT = N_(
    "No variant kept the original's greedy tokens on every prompt: keep the original. A variant that changes the "
    "tokens is never recommended, whatever its speed."
)
NONE_BETTER = N_(
    "The variants that keep the greedy tokens are neither surely faster nor smaller here; keep the original."
)
NONE_MADE = N_("No variant could be made and measured; the original stays the one to use.")
METHOD = N_(
    "Each model generated {tokens} tokens greedily from each of {prompts} prompts, {runs} rounds with the models in "
    "turn, {threads} thread(s); each variant was also fed the original's tokens, so every step's logits are compared "
    "on the same context."
)
REPEATS = N_(
    "The original repeats one token on {count} of {prompts} prompts (random weights do): tokens that agree there "
    "prove little, the logits' differences say more."
)


def largest_difference(a: Any, b: Any) -> float:
    """The largest |a - b| of two logits arrays."""
    import numpy as np

    return float(np.max(np.abs(np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64))))


def divergence(prompt: int, original: Trace, fed: Trace) -> tuple[Divergence | None, float]:
    """Where the variant's choices (``fed``: it ran on the original's tokens) part from the original's on one prompt
    of one sequence, and the largest logit difference over its steps."""
    diffs = [largest_difference(a, b) for a, b in zip(original.logits, fed.logits, strict=True)]
    chosen, theirs = original.tokens[0], fed.tokens[0]
    step = next((s for s in range(len(chosen)) if int(chosen[s]) != int(theirs[s])), None)
    if step is None:
        return None, max(diffs, default=0.0)
    logits = original.logits[step][0]
    first, other = int(chosen[step]), int(theirs[step])
    parted = Divergence(
        prompt=prompt,
        step=step,
        float_token=first,
        variant_token=other,
        logit_diff=diffs[step],
        margin=float(logits[first]) - float(logits[other]),
    )
    return parted, max(diffs, default=0.0)


def _verdict(variant: LMVariant, prompts: int, tokens: int) -> Note:
    if not variant.divergences:
        return note(KEPT, variant=variant.label, prompts=prompts, tokens=tokens, diff=f"{variant.max_logit_diff:.2g}")
    first = min(variant.divergences, key=lambda d: (d.step, d.prompt))
    return warning(
        CHANGED,
        variant=variant.label,
        parted=len(variant.divergences),
        prompts=prompts,
        prompt=first.prompt + 1,
        step=first.step,
        variant_token=first.variant_token,
        float_token=first.float_token,
        margin=f"{first.margin:.3g}",
        diff=f"{first.logit_diff:.3g}",
    )


def _wide(value: Interval | None) -> bool:
    return value is not None and value.median > 0 and (value.high - value.low) / value.median > NOISY


def _recommend(report: LMQuantizeReport) -> tuple[str | None, Note]:
    original, prompts = report.variants[0], len(report.prompts)
    made = [v for v in report.variants[1:] if not v.error and v.decode_tok_s is not None]
    if not made:
        return None, note(NONE_MADE)
    kept = [v for v in made if v.same_tokens]
    if not kept:
        return None, warning(NONE_KEPT)
    faster = [v for v in kept if v.speedup is not None and v.speedup.low > 1.0]
    if faster:
        best = max(faster, key=lambda v: v.speedup.median if v.speedup else 0.0)
        assert best.speedup is not None
        return best.key, note(
            FASTER,
            variant=best.label,
            prompts=prompts,
            speedup=f"{best.speedup.median:.2f}",
            low=f"{best.speedup.low:.2f}",
            high=f"{best.speedup.high:.2f}",
            smaller=f"{original.size_bytes / max(best.size_bytes, 1):.1f}",
        )
    small = min(kept, key=lambda v: v.size_bytes)
    if small.size_bytes < original.size_bytes:
        smaller = f"{original.size_bytes / max(small.size_bytes, 1):.1f}"
        return small.key, note(SMALLER, variant=small.label, prompts=prompts, smaller=smaller)
    return None, note(NONE_BETTER)


def judge_variants(report: LMQuantizeReport) -> None:
    """Each variant's verdict, the recommendation and its headline, and a note where a speed is too noisy to read."""
    prompts, tokens = len(report.prompts), report.new_tokens
    for variant in report.variants[1:]:
        if not variant.error and variant.same_tokens is not None:
            variant.verdict = _verdict(variant, prompts, tokens)
    report.recommended, report.headline = _recommend(report)
    for variant in report.variants:
        if not variant.error and _wide(variant.decode_tok_s):
            report.notes.append(warning(NOISY_DECODE, engine=variant.label, percent=round(NOISY * 50)))


def method_note(report: LMQuantizeReport) -> Note:
    """How the models were run and compared."""
    return note(METHOD, tokens=report.new_tokens, prompts=len(report.prompts), runs=report.runs, threads=report.threads)


def repeats_note(report: LMQuantizeReport) -> Note | None:
    """Where the original repeats one token over a whole prompt's generation, said (its tokens prove little)."""
    tokens = report.variants[0].tokens
    repeating = sum(1 for t in tokens if len(t) > 2 and len(set(t)) == 1)
    return note(REPEATS, count=repeating, prompts=len(tokens)) if repeating else None
