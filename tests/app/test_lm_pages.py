"""A language model (onnxruntime-genai's two-layer Qwen2, uploaded as a .zip of its folder) on the Decode and
Partition pages: Decode lists its decoder layers, one row each, with their GroupQueryAttention; Partition names
ONNX Runtime's own ops (com.microsoft) and the provider that took them, in English and in Chinese."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.app.pages import open_page, texts
from tests.app.test_generate_panel import qwen_zip
from tests.lm_models import LanguageModel


@pytest.fixture(autouse=True)
def _no_start_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_START_SAMPLE", "")


def test_decode_lists_the_decoder_layers(qwen_genai: LanguageModel, tmp_path: Path) -> None:
    at = open_page("decode", model=qwen_zip(qwen_genai, tmp_path), timeout=300)
    assert "The layers." in texts(at) and "in 3 repeated blocks" in texts(at)  # genai names its final norm layers.2
    layers = next(d.value for d in at.dataframe if "block" in d.value.columns)
    assert list(layers["block"]) == ["model.layers.0", "model.layers.1", "model.layers.2"]
    assert layers["contrib ops (com.microsoft)"].iloc[0] == "GroupQueryAttention, SkipSimplifiedLayerNormalization"
    assert "GroupQueryAttention ×1" in layers["op types (the most frequent)"].iloc[0]


def test_partition_names_the_contrib_ops_and_where_they_run(qwen_genai: LanguageModel, tmp_path: Path) -> None:
    at = open_page("partition", model=qwen_zip(qwen_genai, tmp_path), timeout=300)
    said = texts(at).replace("**", "")
    assert (
        "ONNX Runtime's own ops in the model (com.microsoft): com.microsoft:SkipSimplifiedLayerNormalization ×4 on "
        in said
    )
    assert "; com.microsoft:GroupQueryAttention ×2 on CPU." in said
    contrib = next(d.value for d in at.dataframe if "runs on" in d.value.columns)
    assert dict(zip(contrib["op"], contrib["runs on"], strict=True))["com.microsoft:GroupQueryAttention"] == "CPU"


def test_the_layers_and_the_contrib_ops_in_chinese(qwen_genai: LanguageModel, tmp_path: Path) -> None:
    at = open_page("partition", model=qwen_zip(qwen_genai, tmp_path), timeout=300, lang="zh")
    assert "com.microsoft:GroupQueryAttention ×2，运行于 CPU" in texts(at)
    at.switch_page("app_pages/decode.py").run()
    assert not at.exception
    assert any("块" in c for d in at.dataframe for c in d.value.columns)
