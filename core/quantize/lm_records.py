"""What Quantize asks and answers for a language model: each variant (int4 weight-only, dynamic INT8, FP16) judged
by its greedy tokens against the float model's on a fixed set of prompts, not by one call's outputs; with its
size and its decoding speed (Generate's loop, core.runtime.greedy), and, where its tokens part from the float model's,
the step, the two tokens and how far the logits were apart there."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from core.access import ReadPath, WritePath
from core.errors import QuantizeError
from core.i18n import N_, _
from core.model.generative import GenerativeLayout
from core.notes import Note
from core.quantize.records import VARIANTS, variant_label
from core.runtime.stats import Interval

__all__ = [
    "ACCURACY_LEVELS",
    "BLOCK_SIZES",
    "LM_KINDS",
    "Divergence",
    "LMKind",
    "LMQuantizeReport",
    "LMQuantizeRequest",
    "LMVariant",
    "LMVariantSpec",
    "check_variants",
    "original_label",
]

BLOCK_SIZES = (16, 32, 64, 128, 256)  # MatMulNBits' blocks along the weights' input axis: a power of two, ≥ 16
# MatMulNBits' accuracy level: the precision its kernel computes in (0: the attribute left out, the kernel's default)
ACCURACY_LEVELS = {
    0: N_("0: unset (the kernel's default)"),
    1: N_("1: float32"),
    2: N_("2: float16"),
    3: N_("3: bfloat16"),
    4: N_("4: int8 activations"),
}


class LMKind(NamedTuple):
    """A variant Quantize makes of a language model (core.quantize.lm_variants.MAKERS makes it, by its key)."""

    label: str


_INT4 = N_("INT4 weight-only (MatMulNBits, block {block}, accuracy level {level})")
# the kinds a language model is offered; the keys are the command line's --mode and the page's choices (dynamic INT8
# and FP16 are Quantize's own variants of those names, core.quantize.records.VARIANTS)
LM_KINDS: dict[str, LMKind] = {
    "int4": LMKind(_INT4),
    "dynamic": LMKind(VARIANTS["dynamic-qint8"].label),
    "fp16": LMKind(VARIANTS["fp16"].label),
}


@dataclass(frozen=True, kw_only=True)
class LMVariantSpec:
    """One variant to make: its kind (a key of LM_KINDS) and, for int4, its block size and accuracy level."""

    kind: str
    block_size: int = 32
    accuracy_level: int = 0

    @property
    def key(self) -> str:
        """The variant's name in files and in the report: ``int4-b32-a4``, ``dynamic``, ``fp16``."""
        return f"int4-b{self.block_size}-a{self.accuracy_level}" if self.kind == "int4" else self.kind

    def label(self) -> str:
        """The variant in words, in the current language."""
        return self._said(_(LM_KINDS[self.kind].label))

    def english(self) -> str:
        """The variant in English words (a name kept in the model library)."""
        return self._said(LM_KINDS[self.kind].label)

    def _said(self, template: str) -> str:
        return template.format(block=self.block_size, level=self.accuracy_level) if self.kind == "int4" else template


def check_variants(variants: list[LMVariantSpec]) -> None:
    """Refuse, before anything is made, no variant, an unknown kind, or an int4 block size or accuracy level that is
    not offered: each refusal names what is."""
    unknown = [v.kind for v in variants if v.kind not in LM_KINDS]
    if unknown or not variants:
        raise QuantizeError(
            _("Unknown variant {names}; a language model is offered {known}.").format(
                names=", ".join(unknown) or _("(none)"), known=", ".join(LM_KINDS)
            )
        )
    for spec in (v for v in variants if v.kind == "int4"):
        if spec.block_size not in BLOCK_SIZES or spec.accuracy_level not in ACCURACY_LEVELS:
            raise QuantizeError(
                _("INT4's block size is one of {blocks} and its accuracy level one of {levels}.").format(
                    blocks=", ".join(map(str, BLOCK_SIZES)), levels=", ".join(map(str, ACCURACY_LEVELS))
                )
            )


def original_label() -> str:
    """The float model's label, in the current language."""
    return variant_label("fp32")


@dataclass(frozen=True, kw_only=True)
class LMQuantizeRequest:
    """Make each of ``variants`` of the language model ``model`` into ``out_dir``, then generate greedily from the
    same prompts with each and with the float model: the tokens compared step by step (each variant fed the float
    model's tokens, so every step compares the same context), and the decoding speed timed ``runs`` times, the
    models in turn. The prompts: ``prompt_ids`` when given, else ``prompts`` drawn inside the vocabulary."""

    model: ReadPath  # the ONNX file (its external data and genai_config.json beside it)
    out_dir: WritePath
    variants: list[LMVariantSpec]
    tokenizer: ReadPath = ""  # a tokenizer.json when none lies beside the model (a Hugging Face folder's top)
    prompts: int = 3  # prompts drawn inside the vocabulary (a random-weight model repeats one token: several)
    prompt_length: int = 16  # each drawn prompt's tokens
    prompt_ids: list[list[int]] = field(default_factory=list)  # the prompts, given as ids (instead of drawn)
    new_tokens: int = 16  # tokens generated after each prompt
    runs: int = 5  # timed rounds (each model generates from every prompt once per round)
    threads: int = 0  # 0: every core but one
    seed: int = 0  # the drawn prompts' seed
    name: str = ""  # as the report names the model; else the file's name
    model_id: str = ""


@dataclass(frozen=True, kw_only=True)
class Divergence:
    """Where a variant's greedy tokens part from the float model's on one prompt."""

    prompt: int  # the prompt's index (0 for the first)
    step: int  # the generated token where they part (0: the first generated)
    float_token: int  # the float model's choice there
    variant_token: int  # the variant's choice there, on the same context
    logit_diff: float  # the largest |variant - float| of that step's logits
    margin: float  # how much the float model preferred its token over the variant's (its logits' gap, ≥ 0)


@dataclass(kw_only=True)
class LMVariant:
    """One model of the comparison (the float original first): its size, its speed and its tokens."""

    key: str  # "fp32" for the original
    label: str
    english: str = ""  # the label in English: a name kept in the model library, read in either language
    path: str = ""
    size_bytes: int = 0  # the file and its external data
    seconds: float = 0.0  # time to make it
    error: str = ""  # why it could not be made or run; the others still are
    tokens: list[list[int]] = field(default_factory=list)  # per prompt, its own greedy tokens
    text: list[str] = field(default_factory=list)  # per prompt, those tokens as text, decoded whole (a tokenizer)
    decode_tok_s: Interval | None = None  # tokens per second after the first, over the rounds
    ttft_ms: Interval | None = None  # time to the first token, over the rounds (the prompts' mean in each)
    speedup: Interval | None = None  # decoding speed against the float model's (its 95 % interval)
    divergences: list[Divergence] = field(default_factory=list)  # one per prompt whose tokens part
    max_logit_diff: float = 0.0  # the largest |variant - float| of the logits, every step of every prompt
    same_tokens: bool | None = None  # the float model's greedy tokens on every prompt (None: the original)
    verdict: Note | None = None  # what the comparison says of it


@dataclass(kw_only=True)
class LMQuantizeReport:
    """Quantize's answer for a language model: the float model and its variants, judged by their tokens."""

    model: str
    model_id: str
    layout: GenerativeLayout
    prompts: list[list[int]]  # the prompts' ids
    prompt_text: list[str] = field(default_factory=list)  # the prompts as text (with a tokenizer; else empty)
    new_tokens: int
    runs: int
    threads: int
    variants: list[LMVariant]  # the float original first
    recommended: str | None = None  # a variant's key: only ever one that kept every greedy token
    headline: Note | None = None
    notes: list[Note] = field(default_factory=list)
    seconds: float = 0.0
