"""In Chromium: a language model (a two-layer Qwen2 of onnxruntime-genai's builder, random weights, with a Qwen-style
byte-level tokenizer) uploaded as a .zip of its Hugging Face folder (config.json and weights, onnx/model.onnx and an
int8 variant beside it), generated from a Chinese prompt on the Benchmark page with PyTorch eager beside ONNX Runtime
(the folder's own model); the figures, the per-token chart of both engines and the tokens side by side; the two ONNX
files compared at a step of a prompt; in English and in Chinese; screenshots for a person to look at."""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import Path

import pytest

from tests.e2e.conftest import go_to, shot, upload, wait_idle
from tests.lm_models import LanguageModel, model_zip, qwen_genai

pytestmark = pytest.mark.e2e
__all__ = ["qwen_genai"]  # the session's model (a fixture of tests/lm_models.py)

PROMPT = "你好，世界。语言模型"


def _zipped(model: LanguageModel, folder: Path) -> Path:
    """The folder as the Hub's ONNX repositories lay it out: the Hugging Face model, its tokenizer, and under onnx/
    the export (model.onnx and its data) and an int8 variant of it (quantize_dynamic: a second of work)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    int8 = folder / "model_int8.onnx"
    quantize_dynamic(str(model.onnx), str(int8), weight_type=QuantType.QInt8)
    path = folder / "qwen2-tiny.zip"
    with (
        zipfile.ZipFile(io.BytesIO(model_zip(model, "qwen2-tiny", folder))) as exported,
        zipfile.ZipFile(path, "w") as z,
    ):
        for name in exported.namelist():  # model.onnx, its data and the tokenizer; the model under onnx/
            base = name.split("/", 1)[1]
            z.writestr(
                f"qwen2-tiny/{base}" if base == "tokenizer.json" else f"qwen2-tiny/onnx/{base}", exported.read(name)
            )
        z.write(int8, "qwen2-tiny/onnx/model_int8.onnx")
        for file in model.reference.iterdir():  # config.json and model.safetensors: PyTorch eager's side
            z.write(file, f"qwen2-tiny/{file.name}")
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
    page.locator("button", has_text="Generate").first.click()  # the folder's first ONNX file, on the Benchmark page
    page.get_by_role("heading", name="Generate, token by token").wait_for(timeout=60_000)
    wait_idle(page)
    assert page.get_by_text("PyTorch eager beside it: the Hugging Face folder “qwen2-tiny” it came from").is_visible()
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

    go_to(page, "Compare")  # the int8 file against model.onnx at the second generated step of the same prompt
    page.get_by_text("Another ONNX file of its folder", exact=False).click()
    wait_idle(page)
    page.get_by_role("checkbox", name="A language model: compare both at a step of a prompt").check(force=True)
    _fill(page, "Step", "2")
    page.get_by_role("textbox", name="Or the prompt as text", exact=True).fill(PROMPT)
    page.get_by_role("button", name="Compare", exact=True).click()
    page.get_by_text("At decode step 2 of the prompt").wait_for(timeout=180_000)
    wait_idle(page)
    assert page.get_by_role("heading", name="qwen2-tiny/model against onnx/model_int8.onnx").is_visible()
    assert page.get_by_text(
        re.compile(r"Both models choose token \d+ at this step|The models choose")
    ).first.is_visible()
    assert page.get_by_text("Layer by layer").is_visible()
    shot(page, "92-compare-step-qwen")

    go_to(page, "Benchmark")
    page.goto(page.url + ("&" if "?" in page.url else "?") + "lang=zh")  # the model's link: its result, in Chinese
    page.get_by_role("heading", name="逐词元生成").wait_for(timeout=60_000)
    wait_idle(page)
    page.get_by_text(re.compile(r"词元/秒")).first.wait_for(timeout=60_000)
    shot(page, "91-generate-qwen-zh")
