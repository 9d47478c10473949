"""Quantize for a language model (core.quantize.lm): int4 weight-only, dynamic INT8 and FP16 variants judged by
their greedy tokens against the original's on several prompts, never by one call; a variant that changes a token
is not recommended, whatever its speed, and where it parts (the step, both tokens, the logits' gap) is said. The
models are built from configs with random weights (tests/lm_models.py), never downloaded."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest

from core.errors import QuantizeError
from core.model.generative import GenerativeLayout
from core.notes import say
from core.quantize.lm import quantize_language_model
from core.quantize.lm_judge import CHANGED, FASTER, KEPT, NONE_KEPT, SMALLER, divergence, judge_variants
from core.quantize.lm_records import LMQuantizeReport, LMQuantizeRequest, LMVariant, LMVariantSpec
from core.runtime.greedy import Trace
from core.runtime.stats import Interval
from tests.cli import cli
from tests.lm_models import LanguageModel  # the models gpt2_past and qwen_genai: fixtures of tests/unit/conftest.py


@pytest.fixture(scope="module")
def qwen_judged(qwen_genai: LanguageModel, tmp_path_factory: pytest.TempPathFactory) -> LMQuantizeReport:
    """The genai-built Qwen2's int4, dynamic INT8 and FP16 variants, judged once on three drawn prompts."""
    request = LMQuantizeRequest(
        model=str(qwen_genai.onnx),
        out_dir=str(tmp_path_factory.mktemp("qwen_variants")),
        variants=[LMVariantSpec(kind="int4", block_size=32), LMVariantSpec(kind="dynamic"), LMVariantSpec(kind="fp16")],
        prompts=3,
        new_tokens=8,
        runs=2,
        threads=1,
    )
    return quantize_language_model(request)


def test_each_variant_is_judged_by_its_greedy_tokens_on_every_prompt(qwen_judged: LMQuantizeReport) -> None:
    original, *variants = qwen_judged.variants
    assert [v.key for v in variants] == ["int4-b32-a0", "dynamic", "fp16"]
    assert len(qwen_judged.prompts) == 3 and len({tuple(p) for p in qwen_judged.prompts}) == 3
    assert len(original.tokens) == 3 and all(len(t) == 8 for t in original.tokens)
    for variant in variants:
        assert not variant.error, variant.error
        assert variant.same_tokens == (variant.tokens == original.tokens)  # parted where its own run parts
        assert variant.decode_tok_s is not None and variant.speedup is not None
        assert 0 < variant.size_bytes < original.size_bytes  # the external data counted (FP16's named after it)
        assert Path(variant.path + ".data").is_file()
        assert variant.max_logit_diff > 0 and variant.verdict is not None


def test_a_variant_that_changes_the_tokens_says_where_and_is_never_recommended(qwen_judged: LMQuantizeReport) -> None:
    original = qwen_judged.variants[0]
    int4 = next(v for v in qwen_judged.variants if v.key.startswith("int4"))
    assert int4.same_tokens is False and int4.divergences  # random weights: near ties, which int4 tips
    first = min(int4.divergences, key=lambda d: (d.step, d.prompt))
    assert original.tokens[first.prompt][first.step] == first.float_token != first.variant_token
    assert int4.tokens[first.prompt][: first.step] == original.tokens[first.prompt][: first.step]
    assert first.margin >= 0 and first.logit_diff > 0
    assert int4.verdict is not None and int4.verdict.key == CHANGED and int4.verdict.severity == "warning"
    said = say(int4.verdict)
    assert f"at token {first.step}" in said and "Not recommended, whatever its speed" in said
    assert qwen_judged.recommended != int4.key
    fp16 = next(v for v in qwen_judged.variants if v.key == "fp16")
    assert fp16.same_tokens and fp16.verdict is not None and fp16.verdict.key == KEPT
    assert fp16.max_logit_diff < 1e-2


def _trace(tokens: list[int], logits: list[list[float]]) -> Trace:
    return Trace(tokens=np.asarray([tokens]), step_ns=[1] * len(tokens), logits=[np.asarray([row]) for row in logits])


def test_the_divergence_is_the_first_step_chosen_otherwise_with_the_originals_margin_and_the_logits_move() -> None:
    original = _trace([2, 0, 1], [[0.0, 0.1, 0.9], [0.8, 0.7, 0.0], [0.0, 1.0, 0.5]])
    fed = _trace([2, 1, 1], [[0.0, 0.1, 0.8], [0.6, 0.75, 0.0], [0.0, 1.0, 0.1]])
    parted, largest = divergence(1, original, fed)
    assert parted is not None and (parted.prompt, parted.step, parted.float_token, parted.variant_token) == (1, 1, 0, 1)
    assert parted.margin == pytest.approx(0.1) and parted.logit_diff == pytest.approx(0.2)
    assert largest == pytest.approx(0.4)  # over every step, the last one's too
    assert divergence(0, original, original) == (None, 0.0)


def _variant(key: str, size: int, speedup: float, same: bool) -> LMVariant:
    variant = LMVariant(key=key, label=key, size_bytes=size, same_tokens=same, max_logit_diff=0.01)
    variant.decode_tok_s = Interval(median=100 * speedup, low=95 * speedup, high=105 * speedup)
    variant.speedup = Interval(median=speedup, low=speedup * 0.9, high=speedup * 1.1)
    if not same:
        from core.quantize.lm_records import Divergence

        variant.divergences = [
            Divergence(prompt=0, step=3, float_token=7, variant_token=9, logit_diff=0.2, margin=0.01)
        ]
    return variant


def _report(*variants: LMVariant) -> LMQuantizeReport:
    original = LMVariant(key="fp32", label="fp32", size_bytes=1000)
    original.decode_tok_s = Interval(median=100, low=95, high=105)
    layout = GenerativeLayout(
        ids="input_ids", ids_dtype="int64", logits="logits", layers=[], kv_dtype="float32", kv_shape=[],
        sequence_axis=2, kv_heads=1, head_size=1, vocabulary=10,
    )  # fmt: skip
    return LMQuantizeReport(
        model="m", model_id="", layout=layout, prompts=[[1], [2]], new_tokens=4, runs=2, threads=1,
        variants=[original, *variants],
    )  # fmt: skip


def test_speed_never_buys_a_recommendation_for_a_variant_that_changed_a_token() -> None:
    report = _report(_variant("int4", 300, 3.0, same=False), _variant("fp16", 500, 0.8, same=True))
    judge_variants(report)
    assert report.recommended == "fp16" and report.headline is not None and report.headline.key == SMALLER
    report = _report(_variant("int4", 300, 3.0, same=False), _variant("dynamic", 400, 1.5, same=True))
    judge_variants(report)
    assert report.recommended == "dynamic" and report.headline is not None and report.headline.key == FASTER
    report = _report(_variant("int4", 300, 3.0, same=False))
    judge_variants(report)
    assert report.recommended is None and report.headline is not None and report.headline.key == NONE_KEPT


def test_the_command_writes_the_variants_and_says_where_tokens_part(gpt2_past: LanguageModel, tmp_path: Path) -> None:
    out = tmp_path / "lm.onnx"
    result = cli(
        "quantize", str(gpt2_past.onnx), "--mode", "int4", "--mode", "fp16", "--accuracy-level", "0",
        "--accuracy-level", "4", "--new", "4", "--prompts", "2", "--runs", "2", "--threads", "1", "-o", str(out),
        "--json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    keys = ["int4-b32-a0", "int4-b32-a4", "fp16"]
    assert [v["key"] for v in data["variants"]] == ["fp32", *keys] and len(data["prompts"]) == 2
    assert set(data["outputs"]) == set(keys)
    for variant in data["variants"][1:]:
        assert isinstance(variant["verdict"], str) and variant["decode_tok_s"]["median"] > 0
        written = onnx.load(data["outputs"][variant["key"]])  # a file that stands on its own, beside its own data
        assert any(n.op_type == "MatMulNBits" for n in written.graph.node) == variant["key"].startswith("int4")
    assert all(isinstance(n, str) for n in data["notes"])
    text = cli("quantize", str(gpt2_past.onnx), "--mode", "dynamic", "--new", "3", "--prompts", "2", "--runs", "1",
               "-o", str(tmp_path / "d.onnx"))  # fmt: skip
    assert text.returncode == 0, text.stderr
    assert "tokens    Dynamic INT8" in text.stdout and "decode " in text.stdout and (tmp_path / "d.onnx").is_file()


def test_static_int8_an_int4_model_and_bad_settings_are_refused(gpt2_past: LanguageModel, tmp_path: Path) -> None:
    static = cli("quantize", str(gpt2_past.onnx), "--mode", "static", "-o", str(tmp_path / "s.onnx"))
    assert static.returncode == 2 and "Static INT8 is not offered for a language model" in static.stderr
    int4 = tmp_path / "int4.onnx"
    made = cli("quantize", str(gpt2_past.onnx), "--mode", "int4", "--new", "2", "--prompts", "1", "--runs", "1",
               "-o", str(int4))  # fmt: skip
    assert made.returncode == 0, made.stderr
    again = cli("quantize", str(int4), "--mode", "int4", "-o", str(tmp_path / "again.onnx"))
    assert again.returncode == 2 and "4-bit already" in again.stderr
    with pytest.raises(QuantizeError, match="block size is one of"):
        quantize_language_model(
            LMQuantizeRequest(
                model=str(gpt2_past.onnx),
                out_dir=str(tmp_path / "x"),
                variants=[LMVariantSpec(kind="int4", block_size=24)],
            )
        )


def test_a_model_whose_data_file_is_hard_linked_as_an_upload_is_still_quantized(
    qwen_genai: LanguageModel, tmp_path: Path
) -> None:
    """The app links an upload into its workspace; onnx's loader refuses a data file with a second link."""
    folder = tmp_path / "linked"
    folder.mkdir()
    for path in qwen_genai.onnx.parent.iterdir():
        (folder / path.name).hardlink_to(path)
    report = quantize_language_model(
        LMQuantizeRequest(
            model=str(folder / "model.onnx"),
            out_dir=str(tmp_path / "out"),
            variants=[LMVariantSpec(kind="int4"), LMVariantSpec(kind="fp16")],
            prompts=2,
            new_tokens=3,
            runs=1,
            threads=1,
        )
    )
    assert [v.error for v in report.variants] == ["", "", ""]


def test_with_a_tokenizer_the_prompts_and_each_models_tokens_are_also_text_decoded_whole(
    gpt2_past: LanguageModel, tmp_path: Path
) -> None:
    from tokenizers import Tokenizer

    from tests.lm_models import CHINESE, byte_tokenizer

    tokenizer_file = byte_tokenizer(tmp_path / "tokenizer.json")  # not beside the model: a Hugging Face folder's top
    tokenizer = Tokenizer.from_file(str(tokenizer_file))
    prompt = tokenizer.encode(CHINESE[0]).ids
    request = LMQuantizeRequest(
        model=str(gpt2_past.onnx), out_dir=str(tmp_path / "out"), variants=[LMVariantSpec(kind="fp16")],
        tokenizer=str(tokenizer_file), prompt_ids=[prompt], new_tokens=4, runs=1, threads=1,
    )  # fmt: skip
    report = quantize_language_model(request)
    assert report.prompt_text == [CHINESE[0]]  # a character split over byte tokens reads whole
    for variant in report.variants:
        assert variant.text == [tokenizer.decode(variant.tokens[0], skip_special_tokens=False)]
