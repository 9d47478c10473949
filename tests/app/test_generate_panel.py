"""Benchmark for a language model, through AppTest: the generate panel on a two-layer Qwen2 of onnxruntime-genai's
builder (a .zip of its folder: the model, its external data, genai_config.json and a Qwen-style byte-level
tokenizer), a Chinese prompt as text, PyTorch eager beside ONNX Runtime from the Hugging Face folder it came from,
the figures, the chart and the tokens side by side; and the plain single-call benchmark of such a model on its
prefill plan (a past of 0). The models are built from configs with random weights (tests/lm_models.py)."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core.jobs import GENERATE
from tests.app.pages import open_page, texts
from tests.lm_models import LanguageModel, model_zip, word_tokenizer

PROMPT = "你好，世界。"


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_START_SAMPLE", "")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def qwen_zip(model: LanguageModel, tmp_path: Path) -> tuple[str, bytes]:
    """The Qwen2's ONNX folder as a .zip, with a byte-level tokenizer (Chinese characters split over tokens)."""
    return "qwen.zip", model_zip(model, "qwen", tmp_path)


def generate(at: AppTest, reference: Path | None = None, new: int = 4, prompt: str = PROMPT, runs: int = 2) -> None:
    """On the Benchmark page: the text ``prompt``, ``new`` tokens, ``runs`` runs at one thread, eager beside it
    from ``reference`` when given; the run must end without an error."""
    if reference is not None:
        at.text_input(key="generate_reference_path").set_value(str(reference)).run()
    at.radio(key="generate_prompt_kind").set_value("text").run()
    at.text_area(key="generate_prompt_text").set_value(prompt)
    at.number_input(key="generate_new").set_value(new)
    at.number_input(key="generate_runs").set_value(runs)
    at.number_input(key="generate_threads").set_value(1)
    next(b for b in at.button if b.label in ("Generate", "生成")).click()
    at.run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]


def test_generate_panel_measures_both_engines_and_shows_the_tokens_side_by_side(
    qwen_genai: LanguageModel, tmp_path: Path
) -> None:
    at = open_page("benchmark", model=qwen_zip(qwen_genai, tmp_path), timeout=300)
    assert any(h.value == "Generate, token by token" for h in at.header)
    assert "attention by GroupQueryAttention" in texts(at)
    generate(at, qwen_genai.reference)
    report = at.session_state[GENERATE.name][1]
    assert report.eager is not None and report.first_divergent_token is None  # fp32: the same greedy tokens
    assert report.prompt_text == [PROMPT]
    headline = at.subheader[0].value.replace("\\", "")
    assert headline.startswith("ONNX Runtime (ALL): ") and "tokens/s decoding (95 % CI" in headline
    figures = at.dataframe[0].value
    assert list(figures.columns) == ["figure", "ONNX Runtime (ALL)", "PyTorch eager"]
    assert {"time to first token, ms (95 % CI)", "decoding, tokens/s (95 % CI)", "KV cache, MB"} <= set(
        figures["figure"]
    )
    chart = json.loads(at.get("plotly_chart")[0].proto.spec)
    lines = [t["name"] for t in chart["data"] if t["mode"] == "lines+markers"]
    assert lines == ["ONNX Runtime (ALL)", "PyTorch eager"]  # both engines on the one chart
    tokens = at.dataframe[1].value
    assert list(tokens["step"]) == [0, 1, 2, 3] and set(tokens["tokens"]) == {"same"}
    assert list(tokens["ONNX Runtime (ALL)"]) == report.ort.tokens[0] == list(tokens["PyTorch eager"])
    assert "ONNX Runtime (ALL): text" in tokens.columns and "largest logit difference" in tokens.columns
    assert PROMPT in [c.value for c in at.code]  # the prompt reads as written: no U+FFFD, no half characters
    assert any(h.value == "One call at a time" for h in at.header)  # the single-call benchmark below it

    # the panel speaks Chinese: the same run, read again after the reader picks 中文 (no second generation)
    at.sidebar.segmented_control(key="lang_picker").set_value("zh").run()
    assert not at.exception, at.exception
    assert any(h.value == "逐词元生成" for h in at.header) and any(b.label == "生成" for b in at.button)
    assert "词元/秒" in at.subheader[0].value
    assert "首个词元时间，毫秒（95 % 置信区间）" in list(at.dataframe[0].value["指标"])


def test_a_language_models_single_call_benchmark_runs_on_its_prefill_plan(gpt2_past: LanguageModel) -> None:
    at = open_page("benchmark", model=("gpt2.onnx", gpt2_past.onnx.read_bytes()), timeout=300)
    assert not at.error, [e.value for e in at.error]  # the past's shape 1,4,0,16 was refused: "positive numbers"
    assert "past_key_values.0.key 1×4×0×16" in texts(at)  # the plan runs it on an empty past
    at.number_input(key="bench_iters").set_value(10)
    at.number_input(key="bench_warmup").set_value(1)
    at.multiselect(key="bench_threads").set_value([1])
    next(b for b in at.button if b.label == "Run the benchmark").click()
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any(s.value.replace("\\", "").startswith(("ONNX Runtime (", "Noisy run")) for s in at.subheader)


def hf_folder_zip(model: LanguageModel, tmp_path: Path) -> tuple[str, bytes]:
    """A Hugging Face folder as the Hub's ONNX repositories lay it out: config.json and model.safetensors, a
    tokenizer.json, and the model's export under onnx/."""
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w") as archive:
        for path in model.reference.iterdir():
            archive.write(path, f"tiny-gpt2/{path.name}")
        archive.write(model.onnx, "tiny-gpt2/onnx/model.onnx")
        archive.write(word_tokenizer(tmp_path / "tokenizer.json"), "tiny-gpt2/tokenizer.json")
    return "tiny-gpt2.zip", data.getvalue()


def test_a_folders_onnx_file_generates_with_the_folders_pytorch_model_beside_it(
    gpt2_past: LanguageModel, tmp_path: Path
) -> None:
    at = open_page(model=hf_folder_zip(gpt2_past, tmp_path), timeout=300)
    at.button(key="family_generate_model").click().run()  # the Model page's table of the folder's ONNX files
    assert not at.exception, at.exception
    assert at.checkbox(key="generate_eager").value is True  # the folder's PyTorch model, offered as eager
    assert not [t for t in at.text_input if t.key == "generate_reference_path"]
    generate(at, new=3, prompt="hello world 你好", runs=1)
    report = at.session_state[GENERATE.name][1]
    assert report.eager is not None and report.ort.tokens == report.eager.tokens
    assert report.prompt_ids == [[1, 2, 5]] and report.prompt_text == ["hello world 你好"]


def test_markup_a_tokenizer_writes_is_shown_as_text(gpt2_past: LanguageModel, tmp_path: Path) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    words = ["<|endoftext|>", "<img", "src=x", "onerror=alert(1)>", "**bold**", "[link](javascript:x)"]
    tokenizer = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token=words[0]))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer.decoder = decoders.WordPiece()
    tokenizer.save(str(tmp_path / "tokenizer.json"))
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w") as archive:
        archive.write(gpt2_past.onnx, "hostile/model.onnx")
        archive.write(tmp_path / "tokenizer.json", "hostile/tokenizer.json")
    at = open_page("benchmark", model=("hostile.zip", data.getvalue()), timeout=300)
    hostile = " ".join(words[1:])
    generate(at, new=2, prompt=hostile, runs=1)
    assert hostile in [c.value for c in at.code]  # as code: shown as written, never rendered
    rendered = [e.value for e in (*at.markdown, *at.caption, *at.subheader, *at.warning)]
    assert not any(mark in text for text in rendered for mark in ("<img", "**bold**", "](javascript"))
