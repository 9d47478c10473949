"""What the files beside a language model say of its cache: onnxruntime-genai's ``genai_config.json`` (head counts,
head size, vocabulary, end-of-text ids, the names of its inputs and outputs) and a Hugging Face ``config.json``
(optimum writes one beside its exports). Read in the worker, as the model is; each file is small (capped), a plain
regular file in the model's own folder (never a link), and every value is checked to be what it should be.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.i18n import N_

__all__ = ["CONFIG_FILE", "GENAI_FILE", "TOKENIZER_FILE", "CacheConfig", "plain_file", "read_cache_config"]

GENAI_FILE, CONFIG_FILE, TOKENIZER_FILE = "genai_config.json", "config.json", "tokenizer.json"
MAX_CONFIG_BYTES = 1 << 20  # a config is a few kB; past this the file is not read
MAX_SIZE = 1 << 24  # a head count, a size or a vocabulary past this is not believed
FROM_GENAI = N_("genai_config.json")
FROM_CONFIG = N_("config.json")


@dataclass(frozen=True, kw_only=True)
class CacheConfig:
    """The sizes and names the files beside a model give, each with the file it came from (``sources``)."""

    kv_heads: int | None = None
    heads: int | None = None
    head_size: int | None = None
    layers: int | None = None
    vocabulary: int | None = None
    context_length: int | None = None
    eos_token_ids: list[int] = field(default_factory=list)
    bos_token_id: int | None = None
    past_names: dict[str, str] = field(default_factory=dict)  # "key"/"value" -> "past_key_values.%d.key"
    present_names: dict[str, str] = field(default_factory=dict)
    genai: bool = False  # a genai_config.json was read
    sources: dict[str, str] = field(default_factory=dict)  # field -> FROM_GENAI or FROM_CONFIG


def plain_file(folder: Path | None, name: str) -> Path | None:
    """``folder/name`` when it is a regular file there (not a link), else None."""
    if folder is None:
        return None
    path = folder / name
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return None
    return path if stat.S_ISREG(mode) else None


def _load(folder: Path | None, name: str) -> dict[str, Any]:
    path = plain_file(folder, name)
    if path is None or path.stat().st_size > MAX_CONFIG_BYTES:
        return {}
    try:
        data = json.loads(path.read_bytes())
    except (ValueError, RecursionError, OSError):
        return {}
    return data if isinstance(data, dict) else {}


def _size(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 < value <= MAX_SIZE else None


def _token(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_SIZE else None


def _tokens(value: Any) -> list[int]:
    values = value if isinstance(value, list) else [value]
    return [t for t in (_token(v) for v in values[:64]) if t is not None]


def _names(section: Any, key: str, value: str) -> dict[str, str]:
    if not isinstance(section, dict):
        return {}
    names = {"key": section.get(key), "value": section.get(value)}
    return {k: v for k, v in names.items() if isinstance(v, str) and "%d" in v and len(v) < 200}


def _genai(data: dict[str, Any]) -> dict[str, Any]:
    model = data.get("model") if isinstance(data.get("model"), dict) else {}
    assert isinstance(model, dict)
    decoder = model.get("decoder") if isinstance(model.get("decoder"), dict) else {}
    assert isinstance(decoder, dict)
    found: dict[str, Any] = {
        "kv_heads": _size(decoder.get("num_key_value_heads")),
        "heads": _size(decoder.get("num_attention_heads")),
        "head_size": _size(decoder.get("head_size")),
        "layers": _size(decoder.get("num_hidden_layers")),
        "vocabulary": _size(model.get("vocab_size")),
        "context_length": _size(model.get("context_length")),
        "eos_token_ids": _tokens(model.get("eos_token_id")),
        "bos_token_id": _token(model.get("bos_token_id")),
    }
    found["past_names"] = _names(decoder.get("inputs"), "past_key_names", "past_value_names")
    found["present_names"] = _names(decoder.get("outputs"), "present_key_names", "present_value_names")
    return found


def _hugging_face(data: dict[str, Any]) -> dict[str, Any]:
    text = data.get("text_config")
    if isinstance(text, dict):  # a model of text and images keeps its language model's sizes here
        data = {**data, **text}
    heads = _size(data.get("num_attention_heads", data.get("n_head")))
    hidden = _size(data.get("hidden_size", data.get("n_embd")))
    head_size = _size(data.get("head_dim"))
    if head_size is None and heads and hidden and hidden % heads == 0:
        head_size = hidden // heads
    return {
        "kv_heads": _size(data.get("num_key_value_heads")) or heads,
        "heads": heads,
        "head_size": head_size,
        "layers": _size(data.get("num_hidden_layers", data.get("n_layer"))),
        "vocabulary": _size(data.get("vocab_size")),
        "context_length": _size(data.get("max_position_embeddings", data.get("n_positions"))),
        "eos_token_ids": _tokens(data.get("eos_token_id")),
        "bos_token_id": _token(data.get("bos_token_id")),
    }


def read_cache_config(folder: Path | None) -> CacheConfig:
    """What ``folder``'s genai_config.json says, completed by its config.json (either may be missing)."""
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    genai = _load(folder, GENAI_FILE)
    for found, source in (
        (_genai(genai) if genai else {}, FROM_GENAI),
        (_hugging_face(_load(folder, CONFIG_FILE)), FROM_CONFIG),
    ):
        for key, value in found.items():
            if value not in (None, [], {}) and key not in values:
                values[key], sources[key] = value, source
    return CacheConfig(**values, genai=bool(genai), sources=sources)
