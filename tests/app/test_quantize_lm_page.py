"""The Quantize page for a language model, through AppTest: the genai-built Qwen2 (a .zip of its folder: the model,
its external data, genai_config.json) quantized to int4 and FP16, each judged by its greedy tokens on two prompts;
int4 changes a token and the page says where, by how much, and that it is not recommended; FP16 becomes the
current model with its external data. Built from a config with random weights (tests/lm_models.py)."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from tests.app.pages import open_page, texts
from tests.lm_models import LanguageModel


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_START_SAMPLE", "")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def _zipped(model: LanguageModel) -> tuple[str, bytes]:
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w") as archive:
        for path in model.onnx.parent.iterdir():
            archive.write(path, f"qwen/{path.name}")
    return "qwen.zip", data.getvalue()


def test_a_language_models_variants_are_judged_by_their_tokens_and_one_becomes_current(
    qwen_genai: LanguageModel, tmp_path: Path
) -> None:
    at = open_page("quantize", model=_zipped(qwen_genai), timeout=300)
    assert any("judged by the tokens it generates" in m.value for m in at.markdown)
    at.multiselect(key="quantize_lm_kinds").set_value(["int4", "fp16"])
    at.number_input(key="quantize_lm_prompts").set_value(3)
    at.number_input(key="quantize_lm_new").set_value(8)
    at.number_input(key="quantize_lm_runs").set_value(1)
    next(b for b in at.button if b.label == "Quantize and compare the tokens").click()
    at.run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    table = next(d.value for d in at.dataframe if "greedy tokens" in d.value.columns)
    assert list(table["variant"]) == [
        "FP32 (original)",
        "INT4 weight-only (MatMulNBits, block 32, accuracy level 0)",
        "FP16 (float32 inputs and outputs kept)",
    ]
    assert table["greedy tokens"].iloc[1].startswith("parts on") and table["greedy tokens"].iloc[2] == "the same"
    shown = texts(at)
    assert "changes the greedy tokens" in shown and "Not recommended, whatever its speed" in shown
    assert "Recommended: INT4" not in shown and "Recommended for size: INT4" not in shown
    assert any("⟨" in str(v) for t in at.table for v in t.value.iloc[:, 0])  # the token where it parts, marked

    at.selectbox(key=next(s.key for s in at.selectbox if s.key and s.key.endswith("_variant"))).set_value("fp16").run()
    next(b for b in at.button if b.label == "Make it the current model").click()
    at.run()
    assert not at.exception, at.exception
    current = at.session_state["model"]
    assert current.name.endswith("(FP16 (float32 inputs and outputs kept))") and current.generative is not None
    assert any("this variant of" in i.value for i in at.info)
