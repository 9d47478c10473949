"""What a generation says, as notes (core.notes): its headline, whether PyTorch eager and ONNX Runtime chose the
same tokens (and where they parted), tokens that changed between runs, and intervals too wide to be one number."""

from __future__ import annotations

from core.generate.records import EngineRun, GenerateReport
from core.i18n import N_
from core.notes import Note, note, warning
from core.runtime.greedy import NOISY_DECODE
from core.runtime.harness import NOISY
from core.runtime.stats import Interval

__all__ = ["headline", "run_notes"]

HEADLINE = N_(
    "{engine}: {decode} tokens/s decoding (95 % CI {low}–{high}), the first token in {ttft} ms, {new} tokens "
    "from a prompt of {prompt}"
)
SAME_TOKENS = N_(
    "PyTorch eager and ONNX Runtime chose the same {count} tokens; the logits differ by at most {diff} over the steps "
    "(PyTorch fed ONNX Runtime's tokens, so each step compares the same context)."
)
DIVERGED = N_(
    "PyTorch eager and ONNX Runtime part at token {step} (0 is the first generated): ONNX Runtime chose {ort}, "
    "PyTorch {eager}; there the logits differ by up to {diff}. A model in float32 that parts this early was exported "
    "or converted with an error: compare the two at that step."
)
UNSTEADY = N_(
    "{engine} did not generate the same tokens in every run: its greedy choice depends on more than the prompt "
    "(ties between logits, or kernels that are not deterministic)."
)


def _wide(value: Interval) -> bool:
    return value.median > 0 and (value.high - value.low) / value.median > NOISY


def headline(run: EngineRun, prompt_length: int) -> Note:
    """One engine's figures in a sentence."""
    decode = run.decode_tok_s
    return note(
        HEADLINE,
        engine=run.label,
        decode=decode.median,
        low=decode.low,
        high=decode.high,
        ttft=run.ttft_ms.median,
        new=len(run.tokens[0]),
        prompt=prompt_length,
    )


def run_notes(report: GenerateReport) -> list[Note]:
    """The notes of a generation: eager against ONNX Runtime, steadiness, noise."""
    notes: list[Note] = []
    runs = [report.ort, *([report.eager] if report.eager is not None else [])]
    if report.eager is not None:
        step = report.first_divergent_token
        if step is None:
            diff = max(report.logit_diffs, default=0.0)
            notes.append(note(SAME_TOKENS, count=len(report.ort.tokens[0]), diff=f"{diff:.2g}"))
        else:
            ort = [tokens[step] for tokens in report.ort.tokens]
            eager = [tokens[step] for tokens in report.eager.tokens]
            diff = report.logit_diffs[step] if step < len(report.logit_diffs) else 0.0
            pairs = [(o, e) for o, e in zip(ort, eager, strict=True) if o != e] or [(ort[0], eager[0])]
            notes.append(warning(DIVERGED, step=step, ort=pairs[0][0], eager=pairs[0][1], diff=f"{diff:.2g}"))
    for run in runs:
        if not run.steady:
            notes.append(warning(UNSTEADY, engine=run.label))
        if _wide(run.decode_tok_s):
            notes.append(warning(NOISY_DECODE, engine=run.label, percent=round(NOISY * 50)))
    return notes
