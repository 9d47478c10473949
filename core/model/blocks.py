"""A model's repeated blocks, by the path of a node: the decoder layers of a language model (``/model/layers.3/...``
as onnxruntime-genai and optimum name them, ``/transformer/h.3/...`` GPT-2's), a transformer's encoder layers, a
vision model's ``blocks.3``. Decode groups a graph's nodes by them; Compare says where two language models part,
layer by layer."""

from __future__ import annotations

__all__ = ["BLOCK_WORDS", "block_of"]

BLOCK_WORDS = frozenset({"layers", "layer", "h", "blocks", "block"})  # the word before a block's number


def block_of(path: str) -> tuple[str, int] | None:
    """The block a node's path puts it in, as (its name with the scopes above it, its number): "model.layers.3",
    3 for "/model/layers.3/attn/MatMul" and for "model.layers.3.self_attn"; None outside any block."""
    parts = path.replace("/", ".").split(".")
    for index, part in enumerate(parts[:-1]):
        number = parts[index + 1]
        if part in BLOCK_WORDS and number.isdigit() and len(number) <= 6:
            return ".".join(p for p in parts[: index + 2] if p), int(number)
    return None
