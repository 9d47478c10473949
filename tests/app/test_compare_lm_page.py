"""Compare for a language model, through AppTest, in Chinese: the two-layer Qwen2 of onnxruntime-genai's builder
(uploaded as a .zip with a byte-level tokenizer) against its int4 variant (MatMulNBits, uploaded as B), at decode
step 2 of a Chinese prompt given as text: both models' top-5 tokens, whether the greedy token is the same, and the
layers, in the reader's language."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.compare import CompareReport
from core.jobs import COMPARE
from tests.app.pages import open_page
from tests.app.test_generate_panel import PROMPT, qwen_zip
from tests.lm_models import LanguageModel


@pytest.fixture(autouse=True)
def _no_start_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_START_SAMPLE", "")


def test_an_int4_variant_at_a_decode_step_of_a_chinese_prompt_on_the_page_in_chinese(
    qwen_genai: LanguageModel, tmp_path: Path
) -> None:
    from core.quantize.lm_records import LMVariantSpec
    from core.quantize.lm_variants import make_int4, model_with_weights

    int4 = tmp_path / "model_q4.onnx"
    make_int4(model_with_weights(qwen_genai.onnx), int4, LMVariantSpec(kind="int4"), False)
    at = open_page("compare", model=qwen_zip(qwen_genai, tmp_path), timeout=300, lang="zh")
    assert at.checkbox(key="compare_at_step").value  # a language model: the step of a prompt is offered
    at.radio(key="compare_against").set_value("upload")
    at.file_uploader(key="compare_upload").set_value(("model_q4.onnx", int4.read_bytes(), "application/octet-stream"))
    at.number_input(key="compare_step").set_value(2)
    at.text_input(key="compare_prompt_text").set_value(PROMPT)
    next(b for b in at.button if b.label == "对比").click()
    at.run()
    assert not at.exception, at.exception
    report: CompareReport = at.session_state[COMPARE.name][1]
    step = report.lm
    assert step is not None and step.step == 2 and step.prompt_text == PROMPT and len(step.tokens) == 2
    assert step.divergence_layer == "model.layers.0"  # the first MatMul made int4
    said = "".join(e.value for e in [*at.markdown, *at.caption, *at.success, *at.warning])
    assert "**在提示的第 2 个解码步**" in said and PROMPT in said
    verdict = f"两个模型在这一步都选择词元 {step.greedy_a}" if step.same_greedy else "两个模型在这里选择不同"
    assert verdict in said
    top = next(d.value for d in at.dataframe if "A 的词元" in d.value.columns)
    assert list(top["A 的词元"]) == [str(t.id) for t in step.top5_a] and "B 的文本" in top.columns
    layers = next(d.value for d in at.dataframe if "层" in d.value.columns)
    assert list(layers["层"])[:2] == ["model.layers.0", "model.layers.1"]
