"""Language models token by token (core.generate): greedy generation with the cache in ONNX Runtime's own buffers
against PyTorch eager on the same prompts (the same tokens, each step's logits), the figures a run reports, the
prompts it refuses, and the command's JSON and words. The models are built from configs with random weights
(tests/lm_models.py), never downloaded."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import onnx
import pytest

from core.errors import GenerateError
from core.generate.generator import run_generate
from core.generate.records import GenerateReport, GenerateRequest
from core.model.generative import GenerativePlan
from tests.cli import cli
from tests.lm_models import (  # the models gpt2_past and qwen_genai: fixtures of tests/unit/conftest.py
    HEAD_SIZE,
    LAYERS,
    LanguageModel,
    copy_model,
    hf_offline,  # noqa: F401 - an autouse fixture: transformers never reaches the network
    unrecognised_cache_model,
    word_tokenizer,
)


def _generate(model: LanguageModel, **plan: object) -> GenerateReport:
    request = GenerateRequest(
        model=str(model.onnx),
        plan=GenerativePlan(**plan),  # type: ignore[arg-type]
        reference=str(model.reference),
        runs=2,
        threads=1,
    )
    return run_generate(request)


@pytest.mark.parametrize("which", ["qwen_genai", "gpt2_past"])
def test_greedy_tokens_of_onnx_runtime_are_transformers_eager_tokens_on_several_prompts(
    which: str, request: pytest.FixtureRequest
) -> None:
    model = request.getfixturevalue(which)
    drawn = _generate(model, prompt_length=7, new_tokens=6, batch=3, seed=1)  # three prompts of drawn ids
    given = _generate(model, prompt_ids=[5, 6, 7, 8, 9], new_tokens=6)
    for report in (drawn, given):
        assert report.eager is not None and report.first_divergent_token is None
        assert report.ort.tokens == report.eager.tokens
        assert len(report.logit_diffs) == 6 and max(report.logit_diffs) < 1e-3
    assert len({tuple(t) for t in drawn.prompt_ids}) == 3
    assert given.prompt_ids == [[5, 6, 7, 8, 9]]


def test_the_figures_count_what_was_run(gpt2_past: LanguageModel) -> None:
    report = run_generate(
        GenerateRequest(model=str(gpt2_past.onnx), plan=GenerativePlan(new_tokens=5, batch=2), runs=2)
    )
    ort_run = report.ort
    assert report.eager is None and report.first_divergent_token is None
    assert len(ort_run.tokens) == 2 and len(ort_run.tokens[0]) == 5 and len(ort_run.step_ms) == 5
    positions = 16 + 5 - 1  # the last token is generated, never fed
    assert ort_run.kv_cache_mb == pytest.approx(2 * LAYERS * 2 * 4 * HEAD_SIZE * 4 * positions / 2**20)
    for figure in (ort_run.ttft_ms, ort_run.prefill_tok_s, ort_run.decode_tok_s):
        assert 0 < figure.low <= figure.median <= figure.high
    assert ort_run.inter_token_ms.p50 <= ort_run.inter_token_ms.p95 <= ort_run.inter_token_ms.p99
    assert 20 < ort_run.peak_rss_mb < 4096  # the worker's own, not the machine's


def test_a_text_prompt_goes_through_the_tokenizer_beside_the_model_and_comes_back_as_text(
    gpt2_past: LanguageModel, tmp_path: Path
) -> None:
    model = copy_model(gpt2_past.onnx, tmp_path / "with_tokenizer")
    word_tokenizer(model.parent / "tokenizer.json")
    report = run_generate(
        GenerateRequest(model=str(model), plan=GenerativePlan(prompt_text="你好 世界 hello", new_tokens=3), runs=1)
    )
    assert report.prompt_ids == [[5, 6, 1]] and report.prompt_text == ["你好 世界 hello"]
    assert len(report.ort.text) == 1 and report.ort.text[0]
    with pytest.raises(GenerateError, match=r"tokenizer\.json"):
        run_generate(GenerateRequest(model=str(gpt2_past.onnx), plan=GenerativePlan(prompt_text="hello"), runs=1))


def test_prompts_outside_the_vocabulary_or_the_context_and_pickled_references_are_refused(
    qwen_genai: LanguageModel, gpt2_past: LanguageModel, tmp_path: Path
) -> None:
    with pytest.raises(GenerateError, match="outside the model's vocabulary of 512"):
        run_generate(GenerateRequest(model=str(gpt2_past.onnx), plan=GenerativePlan(prompt_ids=[1, 512]), runs=1))
    with pytest.raises(GenerateError, match="context of 256"):
        run_generate(GenerateRequest(model=str(qwen_genai.onnx), plan=GenerativePlan(prompt_length=250, new_tokens=10)))
    pickled = tmp_path / "pickled"
    pickled.mkdir()
    shutil.copy(gpt2_past.reference / "config.json", pickled / "config.json")
    (pickled / "pytorch_model.bin").write_bytes(b"\x80\x04not loaded")
    with pytest.raises(GenerateError, match="safetensors"):
        run_generate(
            GenerateRequest(
                model=str(gpt2_past.onnx), plan=GenerativePlan(new_tokens=2), reference=str(pickled), runs=1
            )
        )


def test_the_command_prints_the_figures_as_json_with_eager_beside_them(gpt2_past: LanguageModel) -> None:
    result = cli(
        "generate", str(gpt2_past.onnx), "--new", "4", "--runs", "2", "--prompt-ids", "3,4,5", "--reference",
        str(gpt2_past.reference), "--json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    for field in ("ttft_ms", "prefill_tok_s", "decode_tok_s"):
        assert set(data[field]) == {"median", "ci"} and len(data[field]["ci"]) == 2
        assert set(data["eager"][field]) == {"median", "ci"}
    assert set(data["inter_token_ms"]) == {"p50", "p95", "p99"}
    assert data["kv_cache_mb"] > 0 and data["peak_rss_mb"] > 0 and data["eager"]["peak_rss_mb"] > 0
    assert len(data["tokens"][0]) == 4 and data["tokens"] == data["eager"]["tokens"]
    assert data["first_divergent_token"] is None and data["prompt_ids"] == [[3, 4, 5]]
    assert all(isinstance(n, str) for n in data["notes"])


def test_the_command_speaks_the_readers_language_and_refuses_a_model_without_a_cache(
    gpt2_past: LanguageModel, tmp_path: Path
) -> None:
    result = cli("--lang", "zh", "generate", str(gpt2_past.onnx), "--new", "3", "--runs", "2")
    assert result.returncode == 0, result.stderr
    assert "ONNX Runtime (ALL)" in result.stdout and "首个词元" in result.stdout
    onnx.save(unrecognised_cache_model(), tmp_path / "odd.onnx")
    refused = cli("generate", str(tmp_path / "odd.onnx"))
    assert refused.returncode == 2 and "cache_k" in refused.stderr and "not recognised" in refused.stderr
