"""Sections of the Quantize page for a language model: the variants to make (int4 with its block sizes and accuracy
levels, dynamic INT8, FP16) and the prompts, then each variant judged by its greedy tokens against the original's:
where it parts (the step, both tokens, the logits' gap), its decoding speed and its size."""

from __future__ import annotations

import itertools

import pandas as pd
import streamlit as st

from core.i18n import _, number
from core.model.hf_folder import folder_tokenizer
from core.model.records import ModelRecord
from core.notes import say
from core.quantize.lm_records import (
    ACCURACY_LEVELS,
    BLOCK_SIZES,
    LM_KINDS,
    LMQuantizeReport,
    LMQuantizeRequest,
    LMVariant,
    LMVariantSpec,
)
from core.runtime.machine import default_threads
from core.runtime.stats import Interval
from ui.quantize_view import choose_variant
from ui.text import escaped_frame, human_bytes, md_escape

__all__ = ["language_model_form", "language_model_results"]


def _kind_label(kind: str) -> str:
    return _("INT4 weight-only (MatMulNBits)") if kind == "int4" else LMVariantSpec(kind=kind).label()


def language_model_form(record: ModelRecord) -> LMQuantizeRequest | None:
    """The choices, and the request when the form is sent."""
    st.markdown(
        _(
            "This is a language model: each variant is judged by the tokens it generates, not by one call's "
            "outputs. The original and every variant generate greedily from the same prompts; a variant is also fed "
            "the original's tokens, so each step's logits are compared on the same context and the first token it "
            "chooses otherwise is where its greedy tokens part. A variant that changes a token is never recommended, "
            "whatever its speed. **INT4 weight-only** stores the MatMul weights in 4-bit blocks (MatMulNBits); the "
            "**accuracy level** sets the precision its kernel computes in, and can change tokens by itself."
        )
    )
    with st.form("quantize_lm_form"):
        kinds = st.multiselect(
            _("Variants"), list(LM_KINDS), default=list(LM_KINDS), format_func=_kind_label, key="quantize_lm_kinds"
        )
        left, right = st.columns(2)
        blocks = left.multiselect(_("INT4 block sizes"), list(BLOCK_SIZES), default=[32], key="quantize_lm_blocks")
        levels = right.multiselect(
            _("INT4 accuracy levels"),
            list(ACCURACY_LEVELS),
            default=[0],
            format_func=lambda level: _(ACCURACY_LEVELS[level]),
            key="quantize_lm_levels",
        )
        columns = st.columns(4)
        prompts = columns[0].number_input(_("Prompts (drawn ids)"), 1, 32, 3, key="quantize_lm_prompts")
        length = columns[1].number_input(_("Tokens per prompt"), 1, 4096, 16, key="quantize_lm_length")
        new = columns[2].number_input(_("New tokens per prompt"), 1, 1024, 16, key="quantize_lm_new")
        runs = columns[3].number_input(_("Timed rounds"), 1, 100, 5, key="quantize_lm_runs")
        submitted = st.form_submit_button(_("Quantize and compare the tokens"), type="primary")
    if not submitted:
        return None
    specs = [
        LMVariantSpec(kind=kind, block_size=block, accuracy_level=level)
        for kind in kinds
        for block, level in (itertools.product(blocks or [32], levels or [0]) if kind == "int4" else [(32, 0)])
    ]
    return LMQuantizeRequest(
        model=record.path,
        out_dir="",  # a fresh folder of this session's (ui.jobs)
        variants=specs,
        tokenizer=folder_tokenizer(record),
        prompts=int(prompts),
        prompt_length=int(length),
        new_tokens=int(new),
        runs=int(runs),
        threads=default_threads(),
        name=record.name,
        model_id=record.id,
    )


def _interval(value: Interval | None) -> str:
    if value is None:
        return ""
    if value.median >= 10:
        return f"{value.median:,.0f} ({value.low:,.0f}–{value.high:,.0f})"
    return f"{value.median:.2f} ({value.low:.2f}–{value.high:.2f})"


def _tokens_verdict(variant: LMVariant) -> str:
    if variant.same_tokens is None:
        return _("(reference)") if variant.key == "fp32" else ""
    if variant.same_tokens:
        return _("the same")
    first = min(variant.divergences, key=lambda d: (d.step, d.prompt))
    return _("parts on {count} prompt(s): first at token {step} of prompt {prompt}").format(
        count=number(len(variant.divergences)), step=first.step, prompt=first.prompt + 1
    )


def _frame(report: LMQuantizeReport) -> pd.DataFrame:
    original = report.variants[0]
    rows = [
        {
            _("variant"): v.label,
            _("greedy tokens"): _tokens_verdict(v),
            _("largest logit difference"): "" if v.key == "fp32" else f"{v.max_logit_diff:.3g}",
            _("decode tok/s (95 % CI)"): _interval(v.decode_tok_s),
            _("speed vs the original (95 % CI)"): _interval(v.speedup) if v.key != "fp32" else "1×",
            _("size"): human_bytes(v.size_bytes) if v.size_bytes else "",
            _("× smaller"): f"{original.size_bytes / v.size_bytes:.2f}" if v.size_bytes else "",
            _("problem"): v.error,
        }
        for v in report.variants
    ]
    return pd.DataFrame(rows)  # for st.dataframe, which renders no Markdown


def _side_by_side(report: LMQuantizeReport, made: list[LMVariant]) -> None:
    """Each prompt's tokens, model by model, the first token that parts from the original's marked ⟨so⟩; with a
    tokenizer, each model's tokens as text beside them (decoded whole, so a character split over tokens reads)."""
    st.markdown(_("**The tokens, prompt by prompt** (the first that parts from the original's is marked ⟨so⟩)"))
    original = made[0].tokens
    for index, prompt in enumerate(report.prompts):
        rows, texts = [], []
        for variant in made:
            tokens = variant.tokens[index] if index < len(variant.tokens) else []
            step = next((s for s, (a, b) in enumerate(zip(tokens, original[index], strict=False)) if a != b), None)
            rows.append(" ".join(f"⟨{t}⟩" if s == step else str(t) for s, t in enumerate(tokens)))
            texts.append(variant.text[index] if index < len(variant.text) else "")
        shown = " ".join(map(str, prompt[:12])) + (" …" if len(prompt) > 12 else "")
        if index < len(report.prompt_text):  # the tokenizer's text, escaped below
            shown += f" “{report.prompt_text[index][:200]}”"
        st.caption(_("Prompt {index}: {ids}").format(index=index + 1, ids=md_escape(shown, 400)))
        columns = {_("tokens"): rows} | ({_("text"): texts} if any(texts) else {})
        st.table(escaped_frame(pd.DataFrame(columns, index=[v.label for v in made])))


def language_model_results(report: LMQuantizeReport, key: str) -> LMVariant | None:
    """The comparison; returns the variant the user asked to make current, if any."""
    if report.headline is not None and report.headline.severity == "warning":
        st.warning(md_escape(say(report.headline), 600))
    elif report.headline is not None:
        st.subheader(md_escape(say(report.headline), 600))
    for variant in report.variants[1:]:
        if variant.error:
            st.warning(
                _("**{variant}** could not be made: {error}").format(
                    variant=md_escape(variant.label), error=md_escape(variant.error, 800)
                )
            )
        elif variant.verdict is not None and variant.verdict.severity == "warning":
            st.warning(md_escape(say(variant.verdict), 800))
        elif variant.verdict is not None:
            st.success(md_escape(say(variant.verdict), 800))
    st.dataframe(_frame(report), hide_index=True, width="stretch")
    made = [v for v in report.variants if not v.error and v.tokens]
    if made:
        _side_by_side(report, made)
    for said in report.notes:
        st.caption(md_escape(say(said), 800))
    return choose_variant(made, key)
