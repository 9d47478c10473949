"""In Chromium: a language model (a two-layer Qwen2 of onnxruntime-genai's builder, random weights, with a Qwen-style
byte-level tokenizer) uploaded as a .zip of its folder, generated from a Chinese prompt on the Benchmark page with
PyTorch eager beside ONNX Runtime; the figures, the per-token chart of both engines and the tokens side by side, in
English and in Chinese; screenshots for a person to look at."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.e2e.conftest import go_to, shot, upload, wait_idle
from tests.lm_models import LanguageModel, model_zip, qwen_genai

pytestmark = pytest.mark.e2e
__all__ = ["qwen_genai"]  # the session's model (a fixture of tests/lm_models.py)

PROMPT = "你好，世界。语言模型"


def _zipped(model: LanguageModel, folder: Path) -> Path:
    path = folder / "qwen2-tiny.zip"
    path.write_bytes(model_zip(model, "qwen2-tiny", folder))
    return path


def _fill(page, label: str, value: str) -> None:  # type: ignore[no-untyped-def]
    box = (
        page.get_by_role("spinbutton", name=label, exact=True)
        if value.isdigit()
        else page.get_by_role("textbox", name=label, exact=True)
    )
    box.fill(value)
    box.press("Tab")


def test_a_language_model_generates_token_by_token_beside_pytorch(  # type: ignore[no-untyped-def]
    page, qwen_genai: LanguageModel, tmp_path: Path
) -> None:
    upload(page, _zipped(qwen_genai, tmp_path))
    go_to(page, "Benchmark")
    page.get_by_role("heading", name="Generate, token by token").wait_for(timeout=60_000)
    _fill(page, "PyTorch reference (optional): a Hugging Face folder on this machine", str(qwen_genai.reference))
    wait_idle(page)
    page.get_by_text("text (the model's tokenizer)").click()
    wait_idle(page)
    page.get_by_role("textbox", name="The prompt", exact=True).fill(PROMPT)
    _fill(page, "New tokens", "12")
    _fill(page, "Timed runs", "2")
    _fill(page, "Intra-op threads", "1")
    page.get_by_role("button", name="Generate", exact=True).click()
    page.get_by_text(re.compile(r"ONNX Runtime \(ALL\): [\d.,]+ tokens/s decoding")).wait_for(timeout=180_000)
    wait_idle(page)
    chart = page.locator('[data-testid="stPlotlyChart"]').first
    chart.wait_for(timeout=60_000)
    assert chart.locator(".scatterlayer .trace").count() >= 4  # each engine: its line and its first token
    legend = chart.locator(".legend").text_content() or ""
    assert "ONNX Runtime (ALL)" in legend and "PyTorch eager" in legend
    assert page.get_by_text("The tokens, side by side").is_visible()
    assert page.get_by_text(PROMPT, exact=True).first.is_visible()  # the prompt as written, whole characters
    shot(page, "90-generate-qwen")

    page.goto(page.url + ("&" if "?" in page.url else "?") + "lang=zh")  # the model's link: its result, in Chinese
    page.get_by_role("heading", name="逐词元生成").wait_for(timeout=60_000)
    wait_idle(page)
    page.get_by_text(re.compile(r"词元/秒")).first.wait_for(timeout=60_000)
    shot(page, "91-generate-qwen-zh")
