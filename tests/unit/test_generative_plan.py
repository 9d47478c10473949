"""A language model's cache recognised in its graph (core.model.recognise) and its input plan at prefill
(core.model.prefill): a past of 0, the mask of past + new computed from its parts, positions from the past, never a
guessed size and never a picture for the cache; a layout that cannot be told said so with what was found, the model
still run one call at a time. The models are built from configs with random weights (tests/lm_models.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort

from core.model.cache_shape import FROM_QKV, NO_KV_HEADS
from core.model.data import image_layout
from core.model.inputs import BenchInput, make_inputs, plan_inputs, resolve_free_dims
from core.model.intake import IntakeRequest, describe_files
from core.model.prefill import COMPUTED, PARTS, evaluate, parts_of
from core.model.recognise import UNKNOWN_NAMES, UNRECOGNISED
from core.model.records import ModelRecord
from core.model.values import notebook_make_inputs
from core.notes import say
from tests.lm_models import (  # the models gpt2_past and qwen_genai: fixtures of tests/unit/conftest.py
    HEAD_SIZE,
    LAYERS,
    VOCABULARY,
    LanguageModel,
    copy_model,
    hand_decoder,
    hf_offline,  # noqa: F401 - an autouse fixture: transformers never reaches the network
    unrecognised_cache_model,
)


def _record(path: Path) -> ModelRecord:
    return describe_files(IntakeRequest(paths=[str(path)]))


def test_a_genai_qwen_is_recognised_with_its_heads_head_size_vocabulary_and_what_each_step_is_fed(
    qwen_genai: LanguageModel,
) -> None:
    layout = _record(qwen_genai.onnx).generative
    assert layout is not None
    assert [layer.past_key for layer in layout.layers] == ["past_key_values.0.key", "past_key_values.1.key"]
    assert [layer.present_value for layer in layout.layers] == ["present.0.value", "present.1.value"]
    assert (layout.kv_heads, layout.heads, layout.head_size, layout.vocabulary) == (2, 4, HEAD_SIZE, VOCABULARY)
    assert (layout.ids, layout.ids_dtype, layout.mask, layout.positions) == ("input_ids", "int64", "attention_mask", "")
    assert (layout.past_symbol, layout.new_symbol, layout.total_symbol) == (
        "past_sequence_length",
        "sequence_length",
        "total_sequence_length",
    )
    assert layout.attention == "GroupQueryAttention" and "GroupQueryAttention" in layout.contrib_ops
    assert layout.genai_config and layout.tokenizer == "tokenizer.json"
    assert (layout.eos_token_ids, layout.context_length, layout.capacity) == ([0], 256, None)
    assert "head size 16, from genai_config.json" in [n.english() for n in layout.found]


def test_without_genai_config_the_head_size_comes_from_the_width_of_the_attention_weights(
    qwen_genai: LanguageModel, tmp_path: Path
) -> None:
    alone = copy_model(qwen_genai.onnx, tmp_path / "alone")  # model.onnx and its data, no genai_config.json
    layout = _record(alone).generative
    assert layout is not None and (layout.kv_heads, layout.head_size, layout.heads) == (2, HEAD_SIZE, 4)
    size_from = next(n for n in layout.found if n.values.get("size") == HEAD_SIZE)
    assert size_from.values["source"].key == FROM_QKV  # type: ignore[union-attr]
    assert not layout.genai_config and layout.tokenizer == ""


def test_gpt2_exported_with_its_past_is_recognised_by_the_names_optimum_writes(gpt2_past: LanguageModel) -> None:
    layout = _record(gpt2_past.onnx).generative
    assert layout is not None and len(layout.layers) == LAYERS
    assert (layout.kv_heads, layout.head_size, layout.vocabulary) == (4, HEAD_SIZE, VOCABULARY)
    assert layout.positions == "position_ids" and layout.attention == ""
    assert layout.total_symbol == "past_sequence_length + sequence_length"


def test_older_names_and_a_static_cache_are_recognised_and_open_sizes_nothing_says_are_not_guessed(
    tmp_path: Path,
) -> None:
    older = ("past_key_0", "past_value_0", "present_key_0", "present_value_0")
    model = hand_decoder(["batch", 2, "past", 8], ["batch", 2, "total", 8], older)
    onnx.save(model, tmp_path / "older.onnx")
    layout = _record(tmp_path / "older.onnx").generative
    assert layout is not None and layout.layers[0].past_key == "past_key_0"
    assert layout.layers[0].present_value == "present_value_0" and (layout.kv_heads, layout.head_size) == (2, 8)

    onnx.save(hand_decoder([1, 2, 64, 8], [1, 2, 64, 8]), tmp_path / "static.onnx")
    static = _record(tmp_path / "static.onnx").generative
    assert static is not None and static.capacity == 64

    onnx.save(
        hand_decoder(["batch", "heads", "past", "size"], ["batch", "heads", "total", "size"]), tmp_path / "open.onnx"
    )
    record = _record(tmp_path / "open.onnx")
    assert record.generative is None
    said = next(n for n in record.notes if not isinstance(n, str) and n.key == UNRECOGNISED)
    assert said.severity == "warning" and said.values["why"].key == NO_KV_HEADS  # type: ignore[union-attr]


def test_a_cache_of_names_no_exporter_writes_is_said_so_with_what_was_found_and_still_runs_one_call(
    tmp_path: Path,
) -> None:
    onnx.save(unrecognised_cache_model(), tmp_path / "odd.onnx")
    record = _record(tmp_path / "odd.onnx")
    assert record.generative is None
    said = next(n for n in record.notes if not isinstance(n, str) and n.key == UNRECOGNISED)
    assert said.values["why"].key == UNKNOWN_NAMES  # type: ignore[union-attr]
    assert "cache_k" in say(said) and "was not recognised" in said.english()
    plan = plan_inputs(record)  # the single-call plan as for any model: its open dims sized as usual
    cache = next(s for s in plan if s.name == "cache_k")
    assert cache.role == "" and cache.shape[1] > 0
    feeds = make_inputs(plan, 1)
    outputs = ort.InferenceSession(str(tmp_path / "odd.onnx")).run(None, feeds)
    assert outputs[1].shape[1] == cache.shape[1] + plan[0].shape[1]


def test_the_prefill_plan_starts_from_an_empty_past_with_the_mask_of_past_plus_new_and_positions_from_0(
    gpt2_past: LanguageModel,
) -> None:
    plan = plan_inputs(_record(gpt2_past.onnx))
    by_name = {s.name: s for s in plan}
    ids, mask, positions = by_name["input_ids"], by_name["attention_mask"], by_name["position_ids"]
    past = [s for s in plan if s.role == "past"]
    assert len(past) == 2 * LAYERS and all(s.shape == [1, 4, 0, HEAD_SIZE] for s in past)
    assert mask.shape == [1, ids.shape[1]]  # past 0 + new, computed from its parts
    mask_dim = mask.free[-1]
    assert mask_dim.source.key == PARTS and mask_dim.why.key == COMPUTED and not mask_dim.guessed
    assert not any(image_layout(s) for s in past)  # the cache is never offered a picture
    feeds = make_inputs(plan, 1, seed=3)
    assert feeds["past_key_values.0.key"].size == 0 and feeds["past_key_values.0.key"].shape == (1, 4, 0, 16)
    assert feeds["position_ids"].tolist() == [list(range(ids.shape[1]))]
    assert feeds["input_ids"].min() >= 0 and feeds["input_ids"].max() < VOCABULARY
    assert positions.role == "positions" and ids.role == "ids" and mask.role == "mask"
    session = ort.InferenceSession(str(gpt2_past.onnx))
    logits, present = session.run(["logits", "present.0.key"], feeds)
    assert logits.shape == (1, ids.shape[1], VOCABULARY) and present.shape == (1, 4, ids.shape[1], HEAD_SIZE)


def test_a_decode_plan_set_by_hand_computes_the_mask_and_the_positions_from_the_past(gpt2_past: LanguageModel) -> None:
    plan = resolve_free_dims(plan_inputs(_record(gpt2_past.onnx)), {"past_sequence_length": 16, "sequence_length": 1})
    feeds = make_inputs(plan, 2)
    assert feeds["attention_mask"].shape == (2, 17)
    assert feeds["position_ids"].tolist() == [[16], [16]]
    assert feeds["past_key_values.1.value"].shape == (2, 4, 16, HEAD_SIZE)


def test_a_dim_written_as_a_sum_is_computed_from_its_parts_in_every_plan(tmp_path: Path) -> None:
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Concat", ["a", "b"], ["c"], axis=1)],
        "sums",
        [
            helper.make_tensor_value_info("a", TensorProto.FLOAT, [1, "frames"]),
            helper.make_tensor_value_info("b", TensorProto.FLOAT, [1, "extra"]),
            helper.make_tensor_value_info("total", TensorProto.FLOAT, [1, "frames + 2 * extra - 1"]),
        ],
        [helper.make_tensor_value_info("c", TensorProto.FLOAT, [1, "frames + extra"])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, tmp_path / "sums.onnx")
    plan = resolve_free_dims(plan_inputs(_record(tmp_path / "sums.onnx")), {"frames": 10, "extra": 3})
    assert plan[2].shape == [1, 10 + 2 * 3 - 1]
    assert parts_of("a + b") == ["a", "+", "b"] and parts_of("past_sequence_length") is None
    assert evaluate("2 * s0 - 1", {"s0": 4}) == 7 and evaluate("a + b", {"a": 1}) is None
    assert parts_of("__import__('os')") is None and parts_of("a + + b") is None


def test_the_notebook_makes_the_positions_as_the_app_does() -> None:
    spec = BenchInput(name="position_ids", dtype="int64", shape=[1, 5], batch_axis=0, values="positions", low=7, high=8)
    row = {"name": spec.name, "dtype": spec.dtype, "shape": [2, 5], "values": spec.values, "low": 7.0, "high": 8.0}
    space: dict[str, Any] = {"np": np, "PLAN": [row]}
    exec(notebook_make_inputs(), space)  # the notebook's own code, as its cell runs it
    assert space["make_inputs"]()["position_ids"].tolist() == make_inputs([spec], 2)["position_ids"].tolist()
    assert make_inputs([spec], 2)["position_ids"].tolist() == [list(range(7, 12))] * 2
