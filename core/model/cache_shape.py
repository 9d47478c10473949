"""A recognised cache's sizes and feeds (part of core.model.recognise): its axes from the past and present shapes,
head counts and head size from those shapes, the files beside the model (core.model.cache_config) or the attention
node's attributes, the vocabulary from the logits, and which inputs take the ids, the mask and the positions.
Every size has a source; one that nothing gives makes the layout unknown, said in a clause.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.errors import brief
from core.i18n import N_
from core.model.cache_config import TOKENIZER_FILE, CacheConfig, plain_file
from core.model.generative import CacheLayer, GenerativeLayout
from core.model.records import TensorSpec
from core.notes import Note, note

if TYPE_CHECKING:
    import onnx

__all__ = ["layout_of", "names_said"]

_IDS, _MASK, _POSITIONS, _CACHE_POSITION = "input_ids", "attention_mask", "position_ids", "cache_position"
_ID_TYPES = ("int64", "int32")
_ATTENTION = ("GroupQueryAttention", "MultiHeadAttention", "Attention", "PagedAttention")
# where a size came from, and what could not be told (core.notes; translated where shown)
FROM_SHAPE = N_("the cache's shape")
FROM_ATTRIBUTES = N_("the attributes of its {op} nodes")
FROM_QKV = N_("the width of the attention's packed query, key and value weights")
FROM_LOGITS = N_("the logits' last dim")
FROM_TABLE = N_("the rows of the embedding table")
KV_HEADS_FROM = N_("{count} key/value heads, from {source}")
HEAD_SIZE_FROM = N_("head size {size}, from {source}")
VOCABULARY_FROM = N_("a vocabulary of {count}, from {source}")
STATIC_CACHE = N_("a static cache: its past holds {capacity} positions, fixed in the graph")
NO_IDS = N_("no input takes the token ids (input_ids, int64 or int32)")
NO_LOGITS = N_("no output gives the logits (a 3-d float output beside the cache)")
NO_KV_HEADS = N_(
    "nothing says how many key/value heads there are (the cache's shape leaves it open, and no genai_config.json, "
    "config.json or attention node says it)"
)
NO_HEAD_SIZE = N_(
    "nothing says the head size (the cache's shape leaves it open, and no genai_config.json, config.json or "
    "attention node says it)"
)
NO_VOCABULARY = N_("nothing says the vocabulary (the logits' last dim is open and no config says it)")
NO_SEQUENCE_AXIS = N_("the cache's shape is {shape}, not [batch, heads, positions, head size]")
UNFED_INPUTS = N_("it also takes {names}, which a generator does not know how to feed")


def names_said(names: list[str], most: int = 4) -> str:
    """Names as a note keeps them: the first few, each cut short, and how many more."""
    text = ", ".join(brief(n, 60) for n in names[:most])
    return text + (f" (+{len(names) - most:,})" if len(names) > most else "")


def _int(dim: int | str | None) -> int | None:
    return dim if isinstance(dim, int) and dim > 0 else None


def _last(shape: list[int | str] | None, axis: int = -1) -> int | str | None:
    """``shape[axis]``, or None when the rank is unknown or too small."""
    return shape[axis] if shape and -len(shape) <= axis < len(shape) else None


def _symbol(dim: int | str | None) -> str:
    return dim if isinstance(dim, str) and dim not in ("?", "-1") else ""


def _attributes(node: onnx.NodeProto) -> dict[str, int]:
    return {a.name: int(a.i) for a in node.attribute if a.type == 2}  # AttributeProto.INT


_MATMULS = {"MatMul": 1, "MatMulInteger": 1, "MatMulIntegerToFloat": 1, "DynamicQuantizeMatMul": 1, "QLinearMatMul": 3}
_THROUGH = ("Add", "Mul", "Cast", "DequantizeLinear", "QuantizeLinear")  # a bias, a quantized copy's scale and casts


def _weight_dims(weights: dict[str, list[int]], producers: dict[str, Any], tensor: str) -> list[int] | None:
    """The dims of the weight ``tensor``: an initializer, or one dequantized (a QDQ copy: DequantizeLinear(w))."""
    if tensor in weights:
        return weights[tensor]
    producer = producers.get(tensor)
    if producer is not None and producer.op_type == "DequantizeLinear" and producer.input:
        return weights.get(producer.input[0])
    return None


def _qkv_width(model: onnx.ModelProto, node: onnx.NodeProto) -> int | None:
    """The width of the MatMul (or MatMulNBits, or a quantized copy's MatMulInteger or QDQ MatMul) whose output is
    the attention node's query, through biases, scales and casts: a tuned or quantized variant's graph says its
    head size as its original's does, with no file beside it."""
    producers = {out: n for n in model.graph.node for out in n.output}
    weights = {t.name: list(t.dims) for t in model.graph.initializer}
    tensor = node.input[0] if node.input else ""
    for _hop in range(8):
        producer = producers.get(tensor)
        if producer is None:
            return None
        if producer.op_type == "MatMulNBits":
            return _attributes(producer).get("N")
        at = _MATMULS.get(producer.op_type)
        if at is not None and len(producer.input) > at:
            dims = _weight_dims(weights, producers, producer.input[at])
            return int(dims[-1]) if dims else None
        if producer.op_type not in _THROUGH or not producer.input:
            return None
        tensor = next((i for i in producer.input if i in producers), producer.input[0])  # not the scale or bias
    return None


def _attention(model: onnx.ModelProto) -> tuple[str, dict[str, tuple[int, Note]]]:
    """The attention op, and the sizes its attributes (and its weights' width) give, each with its source."""
    node = next((n for n in model.graph.node if n.op_type in _ATTENTION), None)
    if node is None:
        return "", {}
    attributes = _attributes(node)
    heads = attributes.get("num_heads", 0)
    kv_heads = heads if node.op_type == "MultiHeadAttention" else attributes.get("kv_num_heads", 0)
    said = note(FROM_ATTRIBUTES, op=node.op_type)
    sizes = {"heads": (heads, said), "kv_heads": (kv_heads, said)}
    packed = len(node.input) < 2 or not node.input[1]  # the query, key and value in one tensor
    parts = heads + 2 * kv_heads if packed else heads
    width = _qkv_width(model, node) if heads > 0 and kv_heads > 0 else None
    if width and parts and width % parts == 0:
        sizes["head_size"] = (width // parts, note(FROM_QKV))
    return node.op_type, {k: v for k, v in sizes.items() if v[0] > 0}


def _size(
    name: str, shaped: int | None, config: CacheConfig, attention: dict[str, tuple[int, Note]]
) -> tuple[int | None, Note]:  # (None, …) when nothing says it
    """A size and where it came from: the cache's shape, then the files beside the model, then the attention."""
    if shaped is not None:
        return shaped, note(FROM_SHAPE)
    configured = getattr(config, name)
    if configured is not None:
        return configured, note(config.sources[name])
    return attention.get(name, (None, note(FROM_SHAPE)))


def _quantized(model: onnx.ModelProto) -> dict[str, int]:
    """MatMulNBits' bits, block size and accuracy level, when the weights are so quantized."""
    node = next((n for n in model.graph.node if n.op_type == "MatMulNBits"), None)
    if node is None:
        return {}
    attributes = _attributes(node)
    return {
        "weight_bits": attributes.get("bits", 4),
        "block_size": attributes.get("block_size", 0),
        "accuracy_level": attributes.get("accuracy_level", 0),
    }


def _ids_and_logits(
    inputs: list[TensorSpec], outputs: list[TensorSpec], cache: list[CacheLayer]
) -> tuple[TensorSpec | None, TensorSpec | None]:
    """The token ids' input (``input_ids``, else the one integer input of rank 2 that is no mask or position) and
    the logits' output (``logits``, else the one 3-d float output that is no present)."""
    ids = next((s for s in inputs if s.name == _IDS), None)
    if ids is None:
        named = (_MASK, _POSITIONS, _CACHE_POSITION)
        ranked = [s for s in inputs if s.dtype in _ID_TYPES and len(s.shape or []) == 2 and s.name not in named]
        ids = ranked[0] if len(ranked) == 1 else None
    logits = next((s for s in outputs if s.name == "logits"), None)
    if logits is None:
        presents = {n for layer in cache for n in (layer.present_key, layer.present_value)}
        floats = [
            s
            for s in outputs
            if s.name not in presents and s.dtype.startswith(("float", "bfloat")) and len(s.shape or []) == 3
        ]
        logits = floats[0] if len(floats) == 1 else None
    return ids, logits


def _sequence_axis(past: TensorSpec, present: TensorSpec) -> int | None:
    """The cache's positions axis: the one where the past and the present differ (1 or 2), else 2."""
    if past.shape is None or len(past.shape) != 4:
        return None
    after = present.shape if present.shape is not None and len(present.shape) == 4 else past.shape
    differs = [axis for axis in (1, 2) if past.shape[axis] != after[axis]]
    return differs[0] if len(differs) == 1 else 2


def _feeds(specs: dict[str, TensorSpec], ids: TensorSpec, past: list[int | str], sequence: int) -> dict[str, str]:
    """The mask, positions and cache position inputs, and the names of the dims a step sets."""
    mask, positions = specs.get(_MASK), specs.get(_POSITIONS)
    return {
        "mask": mask.name if mask is not None else "",
        "mask_dtype": mask.dtype if mask is not None else "int64",
        "positions": positions.name if positions is not None else "",
        "positions_dtype": positions.dtype if positions is not None else "int64",
        "cache_position": _CACHE_POSITION if _CACHE_POSITION in specs else "",
        "batch_symbol": _symbol(_last(ids.shape, 0)),
        "new_symbol": _symbol(_last(ids.shape)),
        "past_symbol": _symbol(past[sequence]),
        "total_symbol": _symbol(_last(mask.shape)) if mask is not None else "",
    }


def layout_of(
    model: onnx.ModelProto,
    inputs: list[TensorSpec],
    outputs: list[TensorSpec],
    cache: list[CacheLayer],
    config: CacheConfig,
    folder: Path | None,
) -> GenerativeLayout | Note:
    """The layout of ``cache`` in ``model``, or the clause that says what could not be told."""
    specs = {s.name: s for s in [*inputs, *outputs]}
    past = specs[cache[0].past_key]
    sequence = _sequence_axis(past, specs[cache[0].present_key])
    if sequence is None or past.shape is None:
        return note(NO_SEQUENCE_AXIS, shape=brief(str(past.shape), 120))
    ids, logits = _ids_and_logits(inputs, outputs, cache)
    if ids is None or ids.dtype not in _ID_TYPES:
        return note(NO_IDS)
    if logits is None:
        return note(NO_LOGITS)
    fed = {ids.name, _MASK, _POSITIONS, _CACHE_POSITION, *(n for c in cache for n in (c.past_key, c.past_value))}
    unfed = [s.name for s in inputs if s.name not in fed]
    if unfed:
        return note(UNFED_INPUTS, names=names_said(unfed))
    attention, by_attention = _attention(model)
    kv_heads, kv_from = _size("kv_heads", _int(past.shape[3 - sequence]), config, by_attention)
    if kv_heads is None:
        return note(NO_KV_HEADS)
    head_size, size_from = _size("head_size", _int(past.shape[3]), config, by_attention)
    if head_size is None:
        return note(NO_HEAD_SIZE)
    vocabulary, vocabulary_from = _int(_last(logits.shape)), note(FROM_LOGITS)
    if vocabulary is None:
        vocabulary, vocabulary_from = _size("vocabulary", None, config, {})
    if vocabulary is None and ids.vocabulary:
        vocabulary, vocabulary_from = ids.vocabulary, note(FROM_TABLE)
    if vocabulary is None:
        return note(NO_VOCABULARY)
    capacity = _int(past.shape[sequence])
    found = [
        note(KV_HEADS_FROM, count=kv_heads, source=kv_from),
        note(HEAD_SIZE_FROM, size=head_size, source=size_from),
        note(VOCABULARY_FROM, count=vocabulary, source=vocabulary_from),
        *([note(STATIC_CACHE, capacity=capacity)] if capacity is not None else []),
    ]
    heads = by_attention["heads"][0] if "heads" in by_attention else config.heads
    contrib = sorted({n.op_type for n in model.graph.node if n.domain == "com.microsoft"})[:32]
    fields: dict[str, Any] = {**_feeds(specs, ids, past.shape, sequence), **_quantized(model)}
    return GenerativeLayout(
        ids=ids.name, ids_dtype=ids.dtype, logits=logits.name, layers=cache, kv_dtype=past.dtype,
        kv_shape=list(past.shape), sequence_axis=sequence, kv_heads=kv_heads, head_size=head_size,
        vocabulary=vocabulary, heads=heads, capacity=capacity, context_length=config.context_length,
        eos_token_ids=config.eos_token_ids, bos_token_id=config.bos_token_id, attention=attention,
        contrib_ops=contrib, genai_config=config.genai, found=found,
        tokenizer=TOKENIZER_FILE if plain_file(folder, TOKENIZER_FILE) else "", **fields,
    )  # fmt: skip
