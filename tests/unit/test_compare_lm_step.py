"""Compare at a step of a prompt: two language models driven by the same tokens, each fed the past it built itself
(its own dtype), compared at that step tensor by tensor and layer by layer, with both models' top-5 tokens; on the
tests' GPT-2 (a weight planted in one layer, a float16 variant with a float16 cache) and Qwen2 (an int4 variant,
MatMulNBits, beside GroupQueryAttention), and through the command line's JSON."""

from __future__ import annotations

import json
from pathlib import Path

import onnx
import pytest
from onnx import numpy_helper

from core.compare import CompareReport, CompareRequest, CompareSide, StepPlan, compare_models
from core.compare.divergence import INT4_NODE, OTHER_OP
from core.errors import CompareError
from core.notes import note, say
from tests.cli import cli
from tests.graph_models import classic_cnn
from tests.lm_models import LanguageModel  # the models gpt2_past and qwen_genai: fixtures of tests/unit/conftest.py

C_PROJ = "model.transformer.h.{layer}.mlp.c_proj.weight"  # the MLP's output weight: after the layer's attention


def _at_step(a: Path, b: Path, step: int, prompt: list[int], **options: float) -> CompareReport:
    request = CompareRequest(
        a=CompareSide(path=str(a)), b=CompareSide(path=str(b)), inputs=[],
        step=StepPlan(step=step, prompt_ids=prompt), **options,  # type: ignore[arg-type]
    )  # fmt: skip
    return compare_models(request)


def _scaled(model: LanguageModel, layer: int, folder: Path) -> Path:
    """The GPT-2 with layer ``layer``'s MLP output weight scaled by 3."""
    proto = onnx.load_model(str(model.onnx))
    name = C_PROJ.format(layer=layer)
    weight = next(t for t in proto.graph.initializer if t.name == name)
    weight.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(weight) * 3, name))
    path = folder / f"scaled_{layer}.onnx"
    onnx.save_model(proto, str(path))
    return path


def test_a_model_against_itself_at_a_decode_step_agrees_everywhere_and_chooses_the_same(
    gpt2_past: LanguageModel,
) -> None:
    report = _at_step(gpt2_past.onnx, gpt2_past.onnx, 2, [1, 2, 3])
    step = report.lm
    assert step is not None and report.first_divergence is None and not report.proves_nothing
    assert step.step == 2 and step.prompt_ids == [1, 2, 3] and len(step.tokens) == 2
    assert step.past_length == 4  # the prompt and the first token: the second is the step's input
    assert report.inputs["input_ids"] == "int64 [1, 1]" and report.inputs["attention_mask"] == "int64 [1, 5]"
    assert report.inputs["past_key_values.1.value"] == "float32 [1, 4, 4, 16]"
    assert step.same_greedy and [t.id for t in step.top5_a] == [t.id for t in step.top5_b]
    assert len(step.top5_a) == 5 and step.top5_a[0].id == step.greedy_a
    assert [t.logit for t in step.top5_a] == sorted((t.logit for t in step.top5_a), reverse=True)
    assert [la.name for la in step.layers] == ["model.transformer.h.0", "model.transformer.h.1"]
    assert all(la.within and la.max_abs == 0 for la in step.layers) and not step.divergence_layer
    assert len(step.past) == 4 and all(p.max_abs == 0 for p in step.past)


def test_a_weight_changed_in_the_second_layer_parts_the_models_in_that_layer_at_the_step(
    gpt2_past: LanguageModel, tmp_path: Path
) -> None:
    report = _at_step(gpt2_past.onnx, _scaled(gpt2_past, 1, tmp_path), 3, [5, 6, 7, 8])
    step, found = report.lm, report.first_divergence
    assert step is not None and found is not None
    assert found.node == "/model/transformer/h.1/mlp/c_proj/Gemm" and found.cause == "weight"
    assert step.divergence_layer == "model.transformer.h.1"
    first, second = step.layers
    assert first.within and not second.within and second.first_out == found.node
    assert all(p.within for p in step.past)  # layer 1's keys and values come before its MLP: both pasts alike
    assert not next(o for o in report.outputs if o.name == "logits").within


def test_each_model_is_fed_the_past_it_built_so_a_change_in_layer_0_shows_in_layer_1s_past(
    gpt2_past: LanguageModel, tmp_path: Path
) -> None:
    report = _at_step(gpt2_past.onnx, _scaled(gpt2_past, 0, tmp_path), 2, [1, 2, 3])
    assert report.lm is not None and report.lm.divergence_layer == "model.transformer.h.0"
    pasts = {p.name: p for p in report.lm.past}
    assert pasts["past_key_values.0.key"].within and pasts["past_key_values.0.value"].max_abs == 0
    assert not pasts["past_key_values.1.key"].within  # built by B's own layer 0 from the same tokens


def test_a_float16_variant_is_fed_its_own_float16_past(gpt2_past: LanguageModel, tmp_path: Path) -> None:
    from onnxruntime.transformers.float16 import convert_float_to_float16

    half = tmp_path / "model_fp16.onnx"  # the cache, the logits, every input and output in float16
    onnx.save_model(convert_float_to_float16(onnx.load_model(str(gpt2_past.onnx)), keep_io_types=False), str(half))
    report = _at_step(gpt2_past.onnx, half, 2, [1, 2, 3], rtol=0.05)
    step = report.lm
    assert step is not None and (step.kv_dtype_a, step.kv_dtype_b) == ("float32", "float16")
    assert report.b_kind == "fp16" and len(step.past) == 4
    assert all(p.max_abs > 0 and p.relative < 0.05 for p in step.past)  # float16's rounding, and only that
    assert step.top5_a[0].id in [t.id for t in step.top5_b]


def test_an_int4_variant_of_a_grouped_query_attention_model_parts_at_its_first_quantized_matmul(
    qwen_genai: LanguageModel, tmp_path: Path
) -> None:
    from core.quantize.lm_records import LMVariantSpec
    from core.quantize.lm_variants import make_int4, model_with_weights

    int4 = tmp_path / "model_q4.onnx"
    make_int4(model_with_weights(qwen_genai.onnx), int4, LMVariantSpec(kind="int4"), False)
    report = _at_step(qwen_genai.onnx, int4, 3, [9, 8, 7])
    step, found = report.lm, report.first_divergence
    assert step is not None and found is not None and step.past_length == 5
    assert (found.op_type, step.divergence_layer) == ("MatMul", "model.layers.0")
    assert next(n for n in report.nodes if n.node == found.node).b_op_type == "MatMulNBits"
    assert [la.name for la in step.layers][:2] == ["model.layers.0", "model.layers.1"]
    # recognised as quantized: its cause is the int4 rounding of that MatMul's blocks, not "another op", and the node
    # is the one to leave in float (or quantize with smaller blocks)
    assert report.b_kind == "int4" and found.cause == "int4" and report.keep_float32[0] == found.node
    assert found.why[0] == note(INT4_NODE, b_op="MatMulNBits", bits=4, block=32, level=0)
    assert "blocks of 32 values" in say(found.why[0]) and note(OTHER_OP, b_op="MatMulNBits", op="MatMul") in found.why


def test_the_command_line_gives_the_step_the_prompt_the_greedy_tokens_and_the_top_5(
    gpt2_past: LanguageModel, tmp_path: Path
) -> None:
    scaled = _scaled(gpt2_past, 1, tmp_path)
    done = cli("compare", str(gpt2_past.onnx), str(scaled), "--step", "2", "--prompt-ids", "1,2,3", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert (data["step"], data["prompt_ids"], data["past"]) == (2, [1, 2, 3], "own")
    assert set(data["greedy"]) == {"a", "b", "same"} and data["greedy"]["same"] is False
    assert data["top5"]["a"][0]["id"] == data["greedy"]["a"] and len(data["top5"]["b"]) == 5
    assert data["divergence_layer"] == "model.transformer.h.1" and "lm" not in data
    assert data["inputs"]["input_ids"] == "int64 [1, 1]" and len(data["tokens_before"]) == 2
    human = cli("compare", str(gpt2_past.onnx), str(scaled), "--step", "0", "--prompt-len", "4")
    assert "the prefill" in human.stdout and "the models part in layer model.transformer.h.1" in human.stdout


def test_a_prompt_without_a_step_and_a_model_without_a_cache_are_refused_in_words(
    gpt2_past: LanguageModel, tmp_path: Path
) -> None:
    done = cli("compare", str(gpt2_past.onnx), str(gpt2_past.onnx), "--prompt-ids", "1,2")
    assert done.returncode == 2 and "--step K" in done.stderr
    cnn = tmp_path / "cnn.onnx"
    onnx.save_model(classic_cnn((1, 3, 8, 8), width=4), str(cnn))
    with pytest.raises(CompareError, match="compares two language models, and the second model is none"):
        _at_step(gpt2_past.onnx, cnn, 1, [1, 2])


def test_with_a_tokenizer_the_greedy_tokens_before_the_step_are_also_text(
    gpt2_past: LanguageModel, tmp_path: Path
) -> None:
    from tokenizers import Tokenizer

    from tests.lm_models import byte_tokenizer

    tokenizer = byte_tokenizer(tmp_path / "tokenizer.json")
    request = CompareRequest(
        a=CompareSide(path=str(gpt2_past.onnx)), b=CompareSide(path=str(gpt2_past.onnx)), inputs=[],
        step=StepPlan(step=3, prompt_ids=[40, 41, 42], tokenizer=str(tokenizer)),
    )  # fmt: skip
    step = compare_models(request).lm
    assert step is not None and len(step.tokens) == 3
    expected = Tokenizer.from_file(str(tokenizer)).decode(step.tokens, skip_special_tokens=False)
    assert step.tokens_text == expected and step.prompt_text
    from core.cli.compare import step_json

    assert step_json(step)["tokens_before_text"] == expected  # what compare --step --json says of them
