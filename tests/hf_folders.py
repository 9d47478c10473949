"""Hugging Face folders as people have them, built by the tests from configs with random weights (nothing is
downloaded): a two-layer GPT-2 and a two-layer Qwen2 saved by transformers (config.json + model.safetensors), and a
folder laid out as the Hub's ONNX repositories are (config.json, weights, tokenizer.json, onnx/model.onnx and its
variants, model_fp16.onnx and model_q4.onnx with its external data). Session fixtures: each is made once.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.lm_models import hand_decoder, word_tokenizer

__all__ = [
    "hf_gpt2",
    "hf_qwen2",
    "onnx_family",
    "save_gpt2",
    "save_qwen2",
    "with_onnx_family",
]

VOCABULARY = 512


def _offline() -> None:
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"


def save_gpt2(folder: Path, safe: bool = True) -> Path:
    """GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=512), random weights drawn wide enough (0.2) that greedy
    tokens vary from step to step (at GPT-2's 0.02 they repeat one token); ``safe=False`` saves pytorch_model.bin."""
    _offline()
    import torch
    import transformers

    torch.manual_seed(0)
    config = transformers.GPT2Config(
        n_layer=2, n_embd=64, n_head=4, vocab_size=VOCABULARY, n_positions=128, initializer_range=0.2,
        bos_token_id=0, eos_token_id=0,
    )  # fmt: skip
    model = transformers.GPT2LMHeadModel(config)
    model.save_pretrained(folder)
    if not safe:  # as older transformers saved it: torch.save of the state_dict
        torch.save(model.state_dict(), folder / "pytorch_model.bin")
        (folder / "model.safetensors").unlink()
    return folder


def save_qwen2(folder: Path) -> Path:
    """A two-layer Qwen2 (4 heads, 2 key/value heads of 16, a vocabulary of 512), random weights."""
    _offline()
    import torch
    import transformers

    torch.manual_seed(0)
    config = transformers.Qwen2Config(
        num_hidden_layers=2, hidden_size=64, num_attention_heads=4, num_key_value_heads=2, intermediate_size=128,
        vocab_size=VOCABULARY, max_position_embeddings=128, bos_token_id=0, eos_token_id=0,
    )  # fmt: skip
    transformers.Qwen2ForCausalLM(config).save_pretrained(folder)
    return folder


def with_onnx_family(folder: Path, variants: tuple[str, ...] = ("", "_fp16", "_q4")) -> Path:
    """``folder`` with small ONNX files under onnx/ (model.onnx, model_fp16.onnx, model_q4.onnx with its weights in
    model_q4.onnx_data) and a tokenizer.json: the layout of the Hub's ONNX repositories. The graphs are small
    decoders' signatures (for listing; core.export.causal_lm's tests generate with a real one)."""
    import onnx

    (folder / "onnx").mkdir(parents=True, exist_ok=True)
    for suffix in variants:
        model = hand_decoder(["batch", 2, "past_sequence_length", 16], ["batch", 2, "total_sequence_length", 16])
        path = folder / "onnx" / f"model{suffix}.onnx"
        if suffix == "_q4":
            onnx.save_model(
                model, str(path), save_as_external_data=True, location=path.name + "_data", size_threshold=0
            )
        else:
            onnx.save_model(model, str(path))
    word_tokenizer(folder / "tokenizer.json")
    return folder


@pytest.fixture(scope="session")
def hf_gpt2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The GPT-2's folder, made once per session (copy it before changing it)."""
    return save_gpt2(tmp_path_factory.mktemp("hf") / "gpt2")


@pytest.fixture(scope="session")
def hf_qwen2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Qwen2's folder, made once per session (copy it before changing it)."""
    return save_qwen2(tmp_path_factory.mktemp("hf") / "qwen2")


@pytest.fixture(scope="session")
def onnx_family(hf_gpt2: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The GPT-2's folder with a tokenizer and three ONNX files under onnx/, made once per session."""
    folder = tmp_path_factory.mktemp("family") / "tiny-gpt2"
    shutil.copytree(hf_gpt2, folder)
    return with_onnx_family(folder)
