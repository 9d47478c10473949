"""The text each generated token adds (core.generate.prompt.Prompt.pieces), as the Generate panel shows the tokens
side by side: a Chinese character split over byte-level tokens (as Qwen's tokenizer splits it) reads whole, on the
token that completes it, never as U+FFFD."""

from __future__ import annotations

from pathlib import Path

from tokenizers import Tokenizer

from core.generate.prompt import Prompt
from tests.lm_models import byte_tokenizer, word_tokenizer


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
