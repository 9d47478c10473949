"""Generate's ONNX Runtime loop (core.runtime.greedy): a GroupQueryAttention model's cache is one buffer of the
generation's length written in place (as onnxruntime-genai runs it), a graph that will not take that runs with a
growing cache instead, and both give the same greedy tokens. The models are built from configs with random weights
(tests/lm_models.py)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from core.quantize.lm_records import LMVariantSpec
from core.quantize.lm_variants import make_fp16, model_with_weights
from core.runtime import greedy
from core.runtime.greedy_prompt import recognised_layout
from tests.lm_models import LanguageModel  # the models gpt2_past and qwen_genai: fixtures of tests/unit/conftest.py


def _session(path: Path) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def test_a_genai_models_cache_is_one_buffer_written_in_place_with_the_growing_caches_tokens(
    qwen_genai: LanguageModel,
) -> None:
    layout = recognised_layout(qwen_genai.onnx)
    session = _session(qwen_genai.onnx)
    prompt = np.random.default_rng(3).integers(0, layout.vocabulary, (2, 9))
    shared = greedy.ort_generate(session, layout, prompt, 12, record=True)
    growing = greedy._generate(session, layout, prompt, 12, True, None, shared=False)
    assert session in greedy._SHARES and session not in greedy._GROWS
    assert (shared.tokens == growing.tokens).all()
    assert max(float(np.abs(a - b).max()) for a, b in zip(shared.logits, growing.logits, strict=True)) < 1e-4
    positions = 9 + 12  # the buffer holds the whole generation; the growing cache stops one short (never fed)
    assert shared.cache_bytes == 2 * 2 * len(layout.layers) * layout.kv_heads * layout.head_size * 4 * positions
    assert growing.cache_bytes == shared.cache_bytes * (positions - 1) // positions


def test_an_fp16_variant_shares_its_cache_through_its_casts_with_the_growing_caches_tokens(
    qwen_genai: LanguageModel, tmp_path: Path
) -> None:
    half = tmp_path / "fp16.onnx"  # float32 in and out: its attention reads a Cast of the buffer and writes through one
    make_fp16(model_with_weights(qwen_genai.onnx), half, LMVariantSpec(kind="fp16"), large=False)
    layout = recognised_layout(qwen_genai.onnx)
    session = _session(half)
    prompt = np.random.default_rng(4).integers(0, layout.vocabulary, (1, 7))
    shared = greedy.ort_generate(session, layout, prompt, 10)
    growing = greedy._generate(session, layout, prompt, 10, False, None, shared=False)
    assert (shared.tokens == growing.tokens).all()


def test_a_graph_that_will_not_write_its_cache_in_place_grows_it_and_keeps_its_tokens(
    gpt2_past: LanguageModel,
) -> None:
    layout = recognised_layout(gpt2_past.onnx)
    plain = _session(gpt2_past.onnx)  # no GroupQueryAttention: the growing cache from the start
    prompt = np.random.default_rng(4).integers(0, layout.vocabulary, (2, 7))
    expected = greedy.ort_generate(plain, layout, prompt, 6)
    assert plain not in greedy._SHARES and plain not in greedy._GROWS
    claimed = dataclasses.replace(layout, attention="GroupQueryAttention")  # its present is past + new: it cannot
    session = _session(gpt2_past.onnx)
    first = greedy.ort_generate(session, claimed, prompt, 6)
    assert session in greedy._GROWS and (first.tokens == expected.tokens).all()
    again = greedy.ort_generate(session, claimed, prompt, 6)  # told once: no second try
    assert (again.tokens == expected.tokens).all() and len(again.step_ns) == 6


def test_a_decode_step_wraps_no_array_whatever_the_number_of_tokens(
    qwen_genai: LanguageModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    wrapped: list[str] = []  # a numpy array bound as an input is wrapped in an OrtValue: ~2 µs of a ~40 µs step
    bind_cpu_input = ort.IOBinding.bind_cpu_input

    def counted(binding: ort.IOBinding, name: str, array: np.ndarray) -> None:
        wrapped.append(name)
        bind_cpu_input(binding, name, array)

    monkeypatch.setattr(ort.IOBinding, "bind_cpu_input", counted)
    layout = recognised_layout(qwen_genai.onnx)
    session = _session(qwen_genai.onnx)
    prompt = np.random.default_rng(5).integers(0, layout.vocabulary, (2, 5))
    short, long = (greedy.ort_generate(session, layout, prompt, new) for new in (4, 16))
    assert sorted(wrapped) == sorted(2 * ["input_ids", "attention_mask"])  # the prefill's, once per generation
    assert (short.tokens == long.tokens[:, :4]).all() and len(long.step_ns) == 16
