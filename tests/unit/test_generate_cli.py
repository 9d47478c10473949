"""``python -m core generate`` given what people have: a tokenizer.json apart from the model (``--tokenizer``), whose
byte-level pieces of a Chinese character are joined before they are decoded; and a Hugging Face folder of config.json
and weights with no ONNX file, exported with its cache first and generated beside PyTorch eager from the same folder,
or with its ONNX file under onnx/, generated from that (the models: fixtures of tests/unit/conftest.py, built from
configs with random weights)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from tokenizers import Tokenizer

from tests import builders
from tests.cli import cli
from tests.lm_models import LanguageModel, byte_tokenizer, copy_model

CHINESE = "你好，汉字。"  # 汉 and 字 are not merged by the test tokenizer: three byte-level tokens each


def test_a_tokenizer_given_apart_takes_a_chinese_prompt_and_says_the_tokens_as_whole_text(
    gpt2_past: LanguageModel, tmp_path: Path
) -> None:
    (tmp_path / "tokenizer").mkdir()
    tokenizer_file = byte_tokenizer(tmp_path / "tokenizer" / "tokenizer.json")
    tokenizer = Tokenizer.from_file(str(tokenizer_file))
    common = ("generate", str(gpt2_past.onnx), "--prompt", CHINESE, "--new", "3", "--runs", "1")
    refused = cli(*common)  # no tokenizer beside the model, none given
    assert refused.returncode == 2 and "tokenizer" in refused.stderr
    result = cli(*common, "--tokenizer", str(tokenizer_file.parent), "--json")  # a folder that holds one
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    prompt = data["prompt_ids"][0]
    assert "\ufffd" in "".join(tokenizer.decode([i]) for i in prompt)  # token by token, a character breaks
    assert data["prompt_text"] == [CHINESE]  # decoded whole, it reads right
    assert data["text"] == [tokenizer.decode(data["tokens"][0], skip_special_tokens=False)]
    shown = cli(*common, "--tokenizer", str(tokenizer_file))  # the file itself
    assert shown.returncode == 0, shown.stderr
    assert f"prompt: {CHINESE}" in shown.stdout and "ONNX Runtime (ALL): " in shown.stdout
    missing = cli(*common, "--tokenizer", str(tmp_path / "nowhere"))
    assert missing.returncode == 2 and "--tokenizer" in missing.stderr and "tokenizer.json" in missing.stderr


@pytest.mark.slow  # an export with its own greedy check, then a generation beside eager: 59 s at load 8
def test_a_folder_without_onnx_is_exported_with_its_cache_and_generated_beside_eager_from_itself(
    gpt2_past: LanguageModel,
) -> None:
    folder = gpt2_past.reference  # config.json and model.safetensors, as save_pretrained wrote them
    result = cli("generate", str(folder), "--new", "4", "--runs", "1", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["exported"].endswith(".onnx") and data["reference"] == str(folder.resolve())
    assert data["eager"] is not None and data["cache"]["layers"] == 2
    assert data["first_divergent_token"] is None and data["tokens"] == data["eager"]["tokens"]


def test_a_folder_with_its_onnx_file_generates_from_it_beside_eager_from_itself(
    gpt2_past: LanguageModel, tmp_path: Path
) -> None:
    folder = tmp_path / "tiny-gpt2"  # the Hub's layout: config.json and weights, the export under onnx/
    shutil.copytree(gpt2_past.reference, folder)
    copy_model(gpt2_past.onnx, folder / "onnx")
    result = cli("generate", str(folder), "--new", "3", "--runs", "1", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["exported"] is None and data["reference"] == str(folder.resolve())  # its own file: nothing exported
    assert data["model"] == "tiny-gpt2/model" and data["tokens"] == data["eager"]["tokens"]


def test_the_command_says_how_it_had_an_onnx_model_of_a_folder() -> None:
    from core.cli.generate import _said, _Source

    record = builders.onnx_record("model", [], [])
    exported = _Source(record=record, folder="/models/tiny", exported="/tmp/work/tiny.onnx")
    assert _said(exported, "/models/tiny") == (
        "exported with a cache to /tmp/work/tiny.onnx; PyTorch eager from the same folder beside it"
    )
    assert _said(exported, "") == "exported with a cache to /tmp/work/tiny.onnx"  # --no-reference
    assert _said(_Source(record=record), "/models/other") == ""  # an ONNX file given: nothing to say
