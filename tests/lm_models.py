"""Language models built by the tests from configs with random weights (nothing is downloaded): a two-layer Qwen2
made by onnxruntime-genai's own model builder (GroupQueryAttention, genai_config.json), a two-layer GPT-2 exported
by torch.onnx.export with its past as optimum names it (past_key_values.N.key -> present.N.key, a mask declared
``past_sequence_length + sequence_length``), each beside the Hugging Face folder it came from; and small graphs
written by hand for the layouts a recogniser must tell apart. The built models are made once per test session
(the fixtures ``qwen_genai`` and ``gpt2_past``: import them into a test module).
"""

from __future__ import annotations

import io
import os
import shutil
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

__all__ = [
    "LanguageModel",
    "build_gpt2",
    "build_qwen",
    "byte_tokenizer",
    "gpt2_past",
    "hand_decoder",
    "hf_offline",
    "model_zip",
    "qwen_genai",
    "unrecognised_cache_model",
    "word_tokenizer",
]

VOCABULARY, LAYERS, HEAD_SIZE = 512, 2, 16
WORDS = ["<|endoftext|>", "hello", "world", "the", "model", "你好", "世界", "模型", "。", "a", "b", "c"]


@dataclass(frozen=True)
class LanguageModel:
    """An ONNX language model and the Hugging Face folder (config.json + model.safetensors) it was made from."""

    onnx: Path
    reference: Path


def _offline() -> None:
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"


@pytest.fixture(autouse=True)
def hf_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """In a test module that imports it: transformers and the Hub never reach the network (as in the worker)."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")


def build_qwen(folder: Path) -> LanguageModel:
    """A two-layer Qwen2 (4 heads, 2 key/value heads of 16), exported by onnxruntime-genai's builder in fp32."""
    _offline()
    import torch
    import transformers
    from onnxruntime_genai.models import builder

    torch.manual_seed(0)
    config = transformers.Qwen2Config(
        num_hidden_layers=LAYERS, hidden_size=64, num_attention_heads=4, num_key_value_heads=2,
        intermediate_size=128, vocab_size=VOCABULARY, max_position_embeddings=256,
    )  # fmt: skip
    reference = folder / "hf"
    transformers.Qwen2ForCausalLM(config).save_pretrained(reference)
    out = folder / "onnx"
    where = ("Qwen/Qwen2-0.5B", str(reference), str(out), "fp32", "cpu", str(folder / "cache"))
    builder.create_model(*where, **builder.parse_extra_options(*where, []))  # as its command line does
    return LanguageModel(onnx=out / "model.onnx", reference=reference)


def _with_past(model: Any) -> Any:
    """GPT-2 taking its past as flat tensors and giving back its present: what torch.onnx.export traces."""
    import torch
    from transformers import DynamicCache

    class WithPast(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any, position_ids: Any, *past: Any) -> Any:
            cache = DynamicCache(config=model.config)
            for layer in range(LAYERS):
                cache.update(past[2 * layer], past[2 * layer + 1], layer)
            out = self.model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids, cache=cache)
            return (out.logits, *(t for layer in out.cache.layers for t in (layer.keys, layer.values)))

    return WithPast().eval()


def build_gpt2(folder: Path) -> LanguageModel:
    """A two-layer GPT-2 (4 heads of 16), exported with its past as optimum names it, in fp32."""
    _offline()
    import torch
    import transformers

    torch.manual_seed(0)
    config = transformers.GPT2Config(
        n_layer=LAYERS, n_embd=64, n_head=4, vocab_size=VOCABULARY, n_positions=256, bos_token_id=0, eos_token_id=0
    )
    model = transformers.GPT2LMHeadModel(config).eval()
    reference = folder / "hf"
    model.save_pretrained(reference)
    names = [f"past_key_values.{i}.{kind}" for i in range(LAYERS) for kind in ("key", "value")]
    presents = [n.replace("past_key_values", "present") for n in names]
    dims = {n: {0: "batch_size", 2: "past_sequence_length"} for n in names}
    dims |= {n: {0: "batch_size", 2: "past_sequence_length + sequence_length"} for n in presents}
    dims |= {
        "input_ids": {0: "batch_size", 1: "sequence_length"},
        "position_ids": {0: "batch_size", 1: "sequence_length"},
        "attention_mask": {0: "batch_size", 1: "past_sequence_length + sequence_length"},
        "logits": {0: "batch_size", 1: "sequence_length"},
    }
    past, new = 3, 2  # traced with a past, so that every shape stays open
    example = (
        torch.randint(0, VOCABULARY, (1, new)),
        torch.ones(1, past + new, dtype=torch.int64),
        torch.arange(past, past + new).unsqueeze(0),
        *(torch.randn(1, 4, past, HEAD_SIZE) for _ in names),
    )
    out = folder / "onnx"
    out.mkdir()
    inputs = ["input_ids", "attention_mask", "position_ids", *names]
    torch.onnx.export(
        _with_past(model), example, str(out / "model.onnx"), input_names=inputs, output_names=["logits", *presents],
        dynamic_axes=dims, opset_version=17, dynamo=False,
    )  # fmt: skip
    return LanguageModel(onnx=out / "model.onnx", reference=reference)


def word_tokenizer(path: Path) -> Path:
    """A tokenizer.json of a few words, English and Chinese, split on spaces (the ``tokenizers`` library)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    tokenizer = Tokenizer(models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="<|endoftext|>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.decoder = decoders.WordPiece()  # joins the words with spaces
    tokenizer.save(str(path))
    return path


CHINESE = ["你好，世界。", "语言模型一个一个地生成词元。", "模型说中文，也说英文。", "hello world, the model speaks."]


def byte_tokenizer(path: Path) -> Path:
    """A byte-level BPE tokenizer.json as Qwen's is (every UTF-8 byte a symbol, merges learnt from a few Chinese and
    English sentences, 300 ids): a Chinese character it has not merged is two or three tokens, each of which alone
    decodes to U+FFFD (the ``tokenizers`` library, trained here, offline)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=[WORDS[0]],
        show_progress=False,
    )
    tokenizer.train_from_iterator(CHINESE * 4, trainer)
    tokenizer.save(str(path))
    return path


def model_zip(model: LanguageModel, folder: str, work: Path) -> bytes:
    """``model``'s ONNX folder zipped as ``folder``/, with a byte-level tokenizer (byte_tokenizer, written in ``work``):
    what a person uploads."""
    byte_tokenizer(work / "tokenizer.json")
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w") as archive:
        for path in model.onnx.parent.iterdir():
            if path.name != "tokenizer.json":
                archive.write(path, f"{folder}/{path.name}")
        archive.write(work / "tokenizer.json", f"{folder}/tokenizer.json")
    return data.getvalue()


def copy_model(model: Path, folder: Path, *extra: str) -> Path:
    """``model`` and its external data (and the files named in ``extra`` beside it) copied into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    for path in model.parent.iterdir():
        if path.name.startswith(model.name) or path.name in extra:
            shutil.copy(path, folder / path.name)
    return folder / model.name


def _value(name: str, elem: int, shape: list[int | str]) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, shape)


def hand_decoder(
    past: list[int | str],
    present: list[int | str],
    names: tuple[str, str, str, str] = (
        "past_key_values.0.key",
        "past_key_values.0.value",
        "present.0.key",
        "present.0.value",
    ),
) -> onnx.ModelProto:
    """A one-layer decoder's signature with its cache shaped ``past`` -> ``present`` and named ``names`` (past key,
    past value, present key, present value); its nodes only pass values through: for recognition, not generation."""
    inputs = [_value("input_ids", TensorProto.INT64, ["batch", "sequence"])]
    outputs = [_value("logits", TensorProto.FLOAT, ["batch", "sequence", VOCABULARY])]
    nodes = []
    for before, after in ((names[0], names[2]), (names[1], names[3])):
        inputs.append(_value(before, TensorProto.FLOAT, past))
        outputs.append(_value(after, TensorProto.FLOAT, present))
        nodes.append(helper.make_node("Identity", [before], [after]))
    table = numpy_helper.from_array(np.zeros((VOCABULARY, VOCABULARY), np.float32), "table")
    nodes.append(helper.make_node("Gather", ["table", "input_ids"], ["logits"]))
    graph = helper.make_graph(nodes, "decoder", inputs, outputs, [table])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def unrecognised_cache_model() -> onnx.ModelProto:
    """A small model whose cache goes by names no exporter writes (``cache_k`` in, ``cache_k_out`` out): it runs,
    one call at a time, on any plan."""
    rng = np.random.default_rng(0)
    table = numpy_helper.from_array(rng.standard_normal((VOCABULARY, 8)).astype(np.float32), "table")
    head = numpy_helper.from_array(rng.standard_normal((8, VOCABULARY)).astype(np.float32), "head")
    nodes = [
        helper.make_node("Gather", ["table", "input_ids"], ["embedded"]),
        helper.make_node("MatMul", ["embedded", "head"], ["logits"]),
        helper.make_node("Concat", ["cache_k", "embedded"], ["cache_k_out"], axis=1),
    ]
    graph = helper.make_graph(
        nodes,
        "odd_cache",
        [
            _value("input_ids", TensorProto.INT64, ["batch", "seq_len"]),
            _value("cache_k", TensorProto.FLOAT, ["batch", "cache_len", 8]),
        ],
        [
            _value("logits", TensorProto.FLOAT, ["batch", "seq_len", VOCABULARY]),
            _value("cache_k_out", TensorProto.FLOAT, ["batch", "cache_len + seq_len", 8]),
        ],
        [table, head],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


@pytest.fixture(scope="session")
def qwen_genai(tmp_path_factory: pytest.TempPathFactory) -> LanguageModel:
    """The Qwen2 of onnxruntime-genai's builder, made once per session."""
    return build_qwen(tmp_path_factory.mktemp("qwen_genai"))


@pytest.fixture(scope="session")
def gpt2_past(tmp_path_factory: pytest.TempPathFactory) -> LanguageModel:
    """The GPT-2 exported with its past, made once per session."""
    return build_gpt2(tmp_path_factory.mktemp("gpt2_past"))
