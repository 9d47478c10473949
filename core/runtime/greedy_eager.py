"""PyTorch eager's greedy loop, the reference beside ONNX Runtime (Generate's, and Export's check of a language model):
a Hugging Face folder (config.json and safetensors weights) loaded with transformers, offline, its own cache
(``use_cache``), the same prompt, the same steps. Weights are read from safetensors only (never a pickle: a folder of
``pytorch_model.bin`` is refused, with the way to convert it), and no code of the folder's runs (``trust_remote_code``
stays off).

transformers and torch are imported here only, when a reference is asked for.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from core.errors import GenerateError, brief
from core.i18n import _
from core.model.causal_lm import pretrained
from core.runtime.greedy import Trace

__all__ = ["eager_generate", "load_reference"]


def load_reference(folder: Path) -> Any:
    """The causal language model of ``folder``, in float32, on the CPU, in eval mode."""
    if not folder.is_dir() or not (folder / "config.json").is_file():
        raise GenerateError(
            _(
                "The reference '{folder}' is no Hugging Face folder: it needs a config.json beside its weights "
                "(model.safetensors), as save_pretrained writes them."
            ).format(folder=brief(folder.name))
        )
    if not any(folder.glob("*.safetensors")):
        raise GenerateError(
            _(
                "The reference '{folder}' holds no .safetensors weights; pickled weights (pytorch_model.bin) are never "
                "loaded here. Save them as safetensors: model.save_pretrained(folder, safe_serialization=True)."
            ).format(folder=brief(folder.name))
        )
    said = _(  # transformers' own words: a config it does not know, code it will not run
        "The reference '{folder}' could not be loaded as a causal language model by transformers ({error}). "
        "Give a folder saved with save_pretrained, whose model type transformers knows."
    )
    return pretrained(folder, GenerateError, said, use_safetensors=True)


def eager_generate(network: Any, prompt: Any, new_tokens: int, forced: Any = None, record: bool = False) -> Trace:
    """Greedy tokens of ``network`` (a transformers causal LM) from ``prompt`` (numpy [batch, length] ids), timed step
    by step, with PyTorch's own cache.
    ``forced``: the tokens to feed after each step instead of the model's own choice (ONNX Runtime's, so that each
    step's logits are compared on the same context); ``record``: each step's last logits kept."""
    import numpy as np
    import torch

    batch = int(prompt.shape[0])
    tokens = np.zeros((batch, new_tokens), dtype=np.int64)
    trace = Trace(tokens=tokens, step_ns=[])
    ids, past, cache = torch.from_numpy(np.asarray(prompt, dtype=np.int64)), 0, None
    last = time.perf_counter_ns()
    with torch.inference_mode():
        for step in range(new_tokens):
            length = int(ids.shape[1])
            mask = torch.ones((batch, past + length), dtype=torch.int64)
            positions = torch.arange(past, past + length, dtype=torch.int64).expand(batch, length)
            out = network(
                input_ids=ids,
                attention_mask=mask,
                position_ids=positions,
                cache=cache,
                use_cache=True,
                logits_to_keep=1,
            )
            cache = out.cache
            logits = out.logits[:, -1, :]
            chosen = logits.argmax(dim=-1)
            tokens[:, step] = chosen.numpy()
            now = time.perf_counter_ns()
            trace.step_ns.append(now - last)
            last = now
            if record:
                trace.logits.append(logits.float().numpy().copy())
            past += length
            ids = chosen.reshape(batch, 1) if forced is None else torch.from_numpy(forced[:, step : step + 1].copy())
    trace.cache_bytes = _cache_bytes(cache)
    return trace


def _cache_bytes(cache: Any) -> int:
    """The bytes of a transformers cache's keys and values."""
    total = 0
    for layer in getattr(cache, "layers", []):
        for tensor in (getattr(layer, "keys", None), getattr(layer, "values", None)):
            if tensor is not None:
                total += tensor.numel() * tensor.element_size()
    return total
