"""A Hugging Face causal language model in PyTorch, as the app runs and exports it: built by transformers from a
folder (offline, its weights from safetensors or from pickles read with ``weights_only``, none of the folder's code)
and wrapped so that it takes and gives flat tensors named as optimum names them: ``input_ids``, ``attention_mask``
(past + new), ``position_ids`` and each layer's ``past_key_values.N.key``/``.value`` in; ``logits`` and each layer's
``present.N.key``/``.value`` out. Every page that runs a PyTorch model one call at a time runs this wrapper; Export
exports it with the cache's axes dynamic (core.export.causal_lm).

torch and transformers are imported only when a model is loaded.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.errors import IntakeError, brief
from core.i18n import _
from core.model.records import TensorSpec
from core.settings import IntakeLimits

__all__ = [
    "BATCH",
    "PAST",
    "SEQUENCE",
    "TOTAL",
    "CacheSizes",
    "cache_sizes",
    "dynamic_axes",
    "flat_module",
    "input_names",
    "load_causal_lm",
    "output_names",
    "pretrained",
    "signature",
]

# the dims' names, as optimum and onnxruntime-genai write them
BATCH, SEQUENCE, PAST, TOTAL = "batch_size", "sequence_length", "past_sequence_length", "total_sequence_length"
EXAMPLE_PROMPT = 8  # the ids' length in the record's signature (a prefill: the past is empty)


@dataclass(frozen=True, kw_only=True)
class CacheSizes:
    """What a causal language model's cache is made of, from its config.json."""

    layers: int
    kv_heads: int
    head_size: int
    vocabulary: int


def cache_sizes(folder: Path) -> CacheSizes:
    """The cache's sizes as the folder's config.json says them (core.model.cache_config reads it), refused by name
    when one is missing."""
    from core.model.cache_config import read_cache_config

    config = read_cache_config(folder)
    found = {
        "layers": config.layers,
        "kv_heads": config.kv_heads,
        "head_size": config.head_size,
        "vocabulary": config.vocabulary,
    }
    missing = [k for k, v in found.items() if v is None]
    if missing:
        raise IntakeError(
            _(
                "The config.json of '{folder}' does not say the model's {missing} (num_hidden_layers, "
                "num_attention_heads, hidden_size, vocab_size): save the model again with save_pretrained."
            ).format(folder=brief(folder.name), missing=", ".join(missing))
        )
    return CacheSizes(**{k: int(v) for k, v in found.items() if v is not None})


def input_names(layers: int) -> list[str]:
    return ["input_ids", "attention_mask", "position_ids"] + [
        f"past_key_values.{i}.{kind}" for i in range(layers) for kind in ("key", "value")
    ]


def output_names(layers: int) -> list[str]:
    return ["logits"] + [f"present.{i}.{kind}" for i in range(layers) for kind in ("key", "value")]


def dynamic_axes(layers: int) -> dict[str, dict[int, str]]:
    """Each input's and output's dynamic axes by name (the legacy exporter's dynamic_axes)."""
    axes: dict[str, dict[int, str]] = {
        "input_ids": {0: BATCH, 1: SEQUENCE},
        "attention_mask": {0: BATCH, 1: TOTAL},
        "position_ids": {0: BATCH, 1: SEQUENCE},
        "logits": {0: BATCH, 1: SEQUENCE},
    }
    for i in range(layers):
        for kind in ("key", "value"):
            axes[f"past_key_values.{i}.{kind}"] = {0: BATCH, 2: PAST}
            axes[f"present.{i}.{kind}"] = {0: BATCH, 2: TOTAL}
    return axes


def signature(sizes: CacheSizes) -> tuple[list[TensorSpec], list[TensorSpec]]:
    """The wrapper's inputs and outputs at a prefill of EXAMPLE_PROMPT tokens (the past empty), every axis that
    changes named."""
    axes = dynamic_axes(sizes.layers)

    def spec(name: str, dtype: str, shape: list[int | str]) -> TensorSpec:
        vocabulary = sizes.vocabulary if name == "input_ids" else None
        return TensorSpec(
            name=name,
            dtype=dtype,
            shape=shape,
            dynamic_axes={str(a): label for a, label in axes[name].items()},
            vocabulary=vocabulary,
        )

    cache = [sizes.kv_heads, sizes.head_size]
    inputs = [
        spec("input_ids", "int64", [1, EXAMPLE_PROMPT]),
        spec("attention_mask", "int64", [1, EXAMPLE_PROMPT]),
        spec("position_ids", "int64", [1, EXAMPLE_PROMPT]),
    ] + [spec(n, "float32", [1, cache[0], 0, cache[1]]) for n in input_names(sizes.layers)[3:]]
    outputs = [spec("logits", "float32", [1, EXAMPLE_PROMPT, sizes.vocabulary])] + [
        spec(n, "float32", [1, cache[0], EXAMPLE_PROMPT, cache[1]]) for n in output_names(sizes.layers)[1:]
    ]
    return inputs, outputs


def load_causal_lm(folder: Path, limits: IntakeLimits | None = None) -> Any:
    """The folder's causal language model, float32 on the CPU in eval mode, built by transformers offline: its
    pickled weights' opcodes checked again and read with weights_only; trust_remote_code stays off."""
    from core.model.hf_folder import checked_weights, read_config

    config = read_config(folder)
    safetensors, _pickled = checked_weights(folder, limits or IntakeLimits())
    if config.get("auto_map"):
        raise IntakeError(
            _(
                "'{folder}' needs its own code to build its model (auto_map in config.json), which is never run "
                "here: export it where you trust its code, and give the ONNX file."
            ).format(folder=brief(folder.name))
        )
    said = _(  # transformers' own words: a config it does not know, weights that do not fit
        "'{folder}' could not be loaded as a causal language model by transformers ({error}). Give a folder "
        "saved with save_pretrained, whose model type transformers knows."
    )
    return pretrained(folder, IntakeError, said, use_safetensors=bool(safetensors), weights_only=True)


def pretrained(folder: Path, error: type[Exception], said: str, **options: Any) -> Any:
    """transformers' causal language model of ``folder``, float32 on the CPU in eval mode, read offline (nothing is
    fetched: the folder is all there is) and with no code of the folder's run; ``options``: from_pretrained's others
    (which weights it may read). When transformers cannot, an ``error`` that ``said`` its words ({folder}, {error})."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    import torch
    from transformers import AutoModelForCausalLM

    try:
        model = AutoModelForCausalLM.from_pretrained(
            str(folder), local_files_only=True, trust_remote_code=False, dtype=torch.float32, **options
        )
    except Exception as exc:
        raise error(said.format(folder=brief(folder.name), error=brief(f"{type(exc).__name__}: {exc}", 300))) from None
    return model.eval()


def flat_module(hf_model: Any, names: Sequence[str] = (), outputs: Sequence[str] = ()) -> Any:
    """``hf_model`` as a module of flat tensors (input_ids, attention_mask, position_ids, then each layer's past key and
    value; logits, then each layer's present key and value), its cache a transformers DynamicCache made from the
    past it is given. With ``names`` and ``outputs`` (an ONNX export's, in its order) it takes and gives its tensors
    as that export does: onnxruntime-genai's builder writes every layer's key before the values, and no position_ids,
    which are then counted from the mask, as the export counts them."""
    import torch
    from transformers import DynamicCache

    layers = int(hf_model.config.num_hidden_layers)
    by_name = "input_ids" in names and all(f"past_key_values.{i}.key" in names for i in range(layers))
    order = [f"present.{i}.{kind}" for i in range(layers) for kind in ("key", "value")]
    presents = [order.index(o) for o in outputs if o in order] if set(order) <= set(outputs) else []

    def _positions(ids: Any, mask: Any) -> Any:
        if mask is None:
            return None
        return (mask.long().cumsum(-1) - 1).clamp(min=0)[:, -ids.shape[1] :]

    class CausalLMWithCache(torch.nn.Module):
        """A causal language model that takes its past and gives its present as flat tensors."""

        def __init__(self) -> None:
            super().__init__()
            self.model = hf_model

        def forward(self, input_ids: Any, attention_mask: Any, position_ids: Any, *past: Any) -> tuple[Any, ...]:
            cache = DynamicCache(ddp_cache_data=[(past[2 * i], past[2 * i + 1]) for i in range(layers)])
            out = self.model(
                input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids, cache=cache,
                use_cache=True,
            )  # fmt: skip
            present = [t for layer in out.cache.layers for t in (layer.keys, layer.values)]
            return (out.logits, *(present[i] for i in presents or range(len(present))))

    class AsExported(CausalLMWithCache):
        """The same, its tensors taken in the order of the export's inputs (``names``)."""

        def forward(self, *tensors: Any) -> tuple[Any, ...]:  # type: ignore[override]
            given = dict(zip(names, tensors, strict=True))
            ids, mask = given["input_ids"], given.get("attention_mask")
            positions = given["position_ids"] if "position_ids" in given else _positions(ids, mask)
            kv = [given[f"past_key_values.{i}.{kind}"] for i in range(layers) for kind in ("key", "value")]
            return super().forward(ids, mask, positions, *kv)

    if by_name:
        return AsExported().eval()
    return CausalLMWithCache().eval()
