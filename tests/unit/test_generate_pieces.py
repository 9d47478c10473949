"""The text each generated token adds (core.runtime.greedy_prompt.Prompt.pieces), as the Generate panel shows the tokens
side by side: a Chinese character split over byte-level tokens (as Qwen's tokenizer splits it) reads whole, on the
token that completes it, never as U+FFFD; and a tokenizer at a Hugging Face folder's top serves its model under onnx/
(the model gpt2_past: a fixture of tests/unit/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tokenizers import Tokenizer

from core.errors import GenerateError
from core.generate.generator import run_generate
from core.generate.records import GenerateRequest
from core.model.generative import GenerativePlan
from core.runtime.greedy_prompt import Prompt
from tests.lm_models import LanguageModel, byte_tokenizer, copy_model, word_tokenizer


def test_a_character_split_over_byte_level_tokens_is_said_once_on_the_token_that_completes_it(tmp_path: Path) -> None:
    tokenizer = Tokenizer.from_file(str(byte_tokenizer(tmp_path / "tokenizer.json")))
    prompt = Prompt(ids=None, tokenizer=tokenizer)
    text = "你好，世界。语言模型"
    ids = tokenizer.encode(text).ids
    alone = [tokenizer.decode([i]) for i in ids]
    assert any("\ufffd" in piece for piece in alone)  # the case: a token alone is half a character
    pieces = prompt.pieces(ids)
    assert len(pieces) == len(ids) and "".join(pieces) == text
    assert not any("\ufffd" in piece for piece in pieces)
    assert "" in pieces  # the first part of a split character adds nothing yet


def test_pieces_after_a_prompt_keep_the_spaces_between_words(tmp_path: Path) -> None:
    tokenizer = Tokenizer.from_file(str(word_tokenizer(tmp_path / "tokenizer.json")))
    prompt = Prompt(ids=None, tokenizer=tokenizer)
    assert prompt.pieces([2, 3, 4], before=[1]) == [" world", " the", " model"]  # after "hello"
    assert Prompt(ids=None).pieces([2, 3]) == []  # no tokenizer: ids alone


def test_a_tokenizer_at_a_folders_top_serves_a_model_under_onnx(gpt2_past: LanguageModel, tmp_path: Path) -> None:
    folder = tmp_path / "tiny-gpt2"  # the Hub's layout: tokenizer.json at the top, the model under onnx/
    model = copy_model(gpt2_past.onnx, folder / "onnx")
    tokenizer = word_tokenizer(folder / "tokenizer.json")
    plan = GenerativePlan(prompt_text="你好 世界 hello", new_tokens=2)
    with pytest.raises(GenerateError, match=r"tokenizer\.json"):
        run_generate(GenerateRequest(model=str(model), plan=plan, runs=1))
    report = run_generate(GenerateRequest(model=str(model), plan=plan, tokenizer=str(tokenizer), runs=1))
    assert report.prompt_ids == [[5, 6, 1]] and report.prompt_text == ["你好 世界 hello"]
    assert len(report.ort.pieces[0]) == 2 and all(p.startswith(" ") for p in report.ort.pieces[0] if p)
