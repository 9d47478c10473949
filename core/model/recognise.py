"""Recognise a language model's cache in its graph (core.model.generative's record): the names of the past inputs
and present outputs as optimum, transformers and onnxruntime-genai write them (``past_key_values.N.key`` ->
``present.N.key``), older ones (``past_key_N`` -> ``present_key_N``), or as a ``genai_config.json`` beside the
model names them; then the sizes (core.model.cache_shape). Nothing is guessed: a model with a past whose layout
cannot be told is said to be so, with what was found.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from core.i18n import N_
from core.model.cache_config import read_cache_config
from core.model.cache_shape import layout_of, names_said
from core.model.generative import CacheLayer, Recognition
from core.model.records import TensorSpec
from core.notes import Note, note, warning

if TYPE_CHECKING:
    import onnx

__all__ = ["UNRECOGNISED", "recognise"]

MAX_LAYERS = 1024
Patterns = tuple[tuple[re.Pattern[str], tuple[str, str]], ...]  # (pattern, the order of its groups)
_PAST: Patterns = (
    (re.compile(r"^past_key_values[._](\d+)[._](key|value)$"), ("layer", "kind")),
    (re.compile(r"^past[._](\d+)[._](key|value)$"), ("layer", "kind")),
    (re.compile(r"^past_(key|value)s?[._](\d+)$"), ("kind", "layer")),
)
_PRESENT: Patterns = (
    (re.compile(r"^present[._](\d+)[._](key|value)$"), ("layer", "kind")),
    (re.compile(r"^present_key_values[._](\d+)[._](key|value)$"), ("layer", "kind")),
    (re.compile(r"^present_(key|value)s?[._](\d+)$"), ("kind", "layer")),
)
_CACHE_LIKE = re.compile(r"past|cache|^kv_|_kv$", re.I)  # an input named so looks like a cache's
# why a model with a past is not run token by token (core.notes; translated where shown)
UNRECOGNISED = N_(
    "This looks like a language model with a cache ({found}), but its layout was not recognised: {why}. Generate "
    "cannot run it token by token; the pages that run one call run it with the plan you set."
)
NO_PRESENT = N_("no output gives back the cache of '{name}' (present.N.key, present_key_N)")
UNKNOWN_NAMES = N_(
    "the cache's inputs are named {names}, neither past_key_values.N.key/value nor past_key_N/past_value_N"
)
HALF_LAYERS = N_("layers {layers} have a key and no value, or a value and no key")


def _by_template(names: list[str], templates: dict[str, str]) -> dict[tuple[int, str], str]:
    """(layer, "key"/"value") -> name, for names made from genai_config.json's ``%d`` templates."""
    found: dict[tuple[int, str], str] = {}
    for kind, template in templates.items():
        head, _sep, tail = template.partition("%d")
        pattern = re.compile(f"^{re.escape(head)}(\\d+){re.escape(tail)}$")
        for name in names:
            matched = pattern.match(name)
            if matched and int(matched.group(1)) < MAX_LAYERS:
                found[(int(matched.group(1)), kind)] = name
    return found


def _by_name(names: list[str], patterns: Patterns) -> dict[tuple[int, str], str]:
    """(layer, "key"/"value") -> name, for the names the exporters write."""
    found: dict[tuple[int, str], str] = {}
    for name in names:
        for pattern, order in patterns:
            matched = pattern.match(name)
            if matched:
                groups = dict(zip(order, matched.groups(), strict=True))
                if int(groups["layer"]) < MAX_LAYERS:
                    found[(int(groups["layer"]), groups["kind"])] = name
                break
    return found


def recognise(
    model: onnx.ModelProto, inputs: list[TensorSpec], outputs: list[TensorSpec], folder: Path | None
) -> Recognition:
    """The cache of ``model`` (its graph's ``inputs`` and ``outputs`` as the record has them; ``folder``: where
    a genai_config.json, config.json and tokenizer.json may lie beside it). A model with no input named like a
    cache gets an empty Recognition (it is no language model with a cache)."""
    cache_like = [s.name for s in inputs if _CACHE_LIKE.search(s.name)]
    if not cache_like:
        return Recognition()
    found = names_said(cache_like)
    config = read_cache_config(folder)
    input_names, output_names = [s.name for s in inputs], [s.name for s in outputs]
    past = _by_template(input_names, config.past_names) or _by_name(input_names, _PAST)
    present = _by_template(output_names, config.present_names) or _by_name(output_names, _PRESENT)
    if not past:
        return _unrecognised(found, note(UNKNOWN_NAMES, names=found))
    layers = sorted({layer for layer, _kind in past})
    half = [str(i) for i in layers if (i, "key") not in past or (i, "value") not in past]
    if half:
        return _unrecognised(found, note(HALF_LAYERS, layers=names_said(half, 8)))
    missing = [name for key, name in past.items() if key not in present]
    if missing:
        return _unrecognised(found, note(NO_PRESENT, name=missing[0]))
    cache = [
        CacheLayer(
            index=i,
            past_key=past[(i, "key")],
            past_value=past[(i, "value")],
            present_key=present[(i, "key")],
            present_value=present[(i, "value")],
        )
        for i in layers
    ]
    made = layout_of(model, inputs, outputs, cache, config, folder)
    if isinstance(made, Note):
        return _unrecognised(found, made)
    return Recognition(layout=made)


def _unrecognised(found: str, why: Note) -> Recognition:
    return Recognition(note=warning(UNRECOGNISED, found=found, why=why))
