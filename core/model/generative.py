"""A language model's cache, as a record: which inputs take the past keys and values and which outputs give them
back, how many layers and heads, the head size, the vocabulary, and what each step is fed (the token ids, a mask
of past + new length, positions from the past length). core.model.recognise finds it in the graph as the model is
read (in the worker); it is kept on the model's record, the input plan starts from it (prefill: a past of length
0) and Generate runs the model token by token with it, from a ``GenerativePlan`` (what to generate from).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from core.i18n import N_
from core.notes import Note

__all__ = [
    "CACHE_SOURCE",
    "NEW_TOKENS",
    "PROMPT_LENGTH",
    "ROLES",
    "CacheLayer",
    "GenerativeLayout",
    "GenerativePlan",
    "Recognition",
]

PROMPT_LENGTH = 16  # a prompt's tokens when nothing else is asked (the input plan's prefill, Generate's default)
NEW_TOKENS = 32  # tokens generated after the prompt when nothing else is asked
ROLES = ("ids", "mask", "positions", "cache_position", "past")  # what a language model's input is, in a plan
CACHE_SOURCE = N_("the model's cache")  # where a size the cache's layout fixes came from (a fact, not a guess)
_ITEMSIZE = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "float8e4m3fn": 1, "int8": 1, "uint8": 1}


@dataclass(frozen=True, kw_only=True)
class CacheLayer:
    """One layer's cache: the inputs that take its past keys and values and the outputs that give them back."""

    index: int
    past_key: str
    past_value: str
    present_key: str
    present_value: str


@dataclass(frozen=True, kw_only=True)
class GenerativeLayout:
    """A language model's cache and what each step is fed, as its graph (and the files beside it) say."""

    ids: str  # the token ids' input: [batch, new tokens]
    ids_dtype: str  # int64 or int32
    logits: str  # [batch, new tokens, vocabulary]
    layers: list[CacheLayer]
    kv_dtype: str  # float32, float16...
    kv_shape: list[int | str]  # as the past inputs declare it: [batch, kv heads, past, head size]
    sequence_axis: int  # the axis of the past (and present) that holds the positions: 2, or 1 for [b, s, h, d]
    kv_heads: int
    head_size: int
    vocabulary: int
    mask: str = ""  # attention_mask: [batch, past + new]
    mask_dtype: str = "int64"
    positions: str = ""  # position_ids: [batch, new], from the past length
    positions_dtype: str = "int64"
    cache_position: str = ""  # cache_position: [new], from the past length
    heads: int | None = None  # query heads (GroupQueryAttention's num_heads, a config's), when something says it
    batch_symbol: str = ""  # the batch's dim name ("batch_size")
    new_symbol: str = ""  # the new tokens' dim name ("sequence_length")
    past_symbol: str = ""  # the past's dim name ("past_sequence_length")
    total_symbol: str = ""  # the mask's dim name, past + new ("total_sequence_length", "past_sequence_length + …")
    capacity: int | None = None  # a static cache: the positions its past holds, fixed in the graph
    context_length: int | None = None  # the most positions the model takes, when a config says it
    eos_token_ids: list[int] = field(default_factory=list)
    bos_token_id: int | None = None
    attention: str = ""  # the attention op ("GroupQueryAttention"); "" when attention is built of plain ops
    contrib_ops: list[str] = field(default_factory=list)  # com.microsoft ops the graph uses
    weight_bits: int | None = None  # MatMulNBits' bits (4: int4 weights), when the weights are so quantized
    block_size: int | None = None  # MatMulNBits' block size
    accuracy_level: int | None = None  # MatMulNBits' accuracy level (0: the kernel's default)
    genai_config: bool = False  # a genai_config.json beside the model was read
    tokenizer: str = ""  # the tokenizer.json beside the model ("" when there is none)
    found: list[Note] = field(default_factory=list)  # where the sizes came from, to be said

    @property
    def heads_axis(self) -> int:
        """The axis of the key/value heads in the cache's tensors."""
        return 3 - self.sequence_axis

    @property
    def kv_bytes_per_position(self) -> int:
        """The cache's bytes for one position of one sequence: keys and values of every layer."""
        return 2 * len(self.layers) * self.kv_heads * self.head_size * _ITEMSIZE.get(self.kv_dtype, 4)

    def past_shape(self, batch: int, past: int) -> list[int]:
        """The shape of one past input at ``batch`` with ``past`` positions (0 at prefill)."""
        if self.sequence_axis == 1:  # [batch, past, kv heads, head size]
            return [batch, past, self.kv_heads, self.head_size]
        return [batch, self.kv_heads, past, self.head_size]

    @property
    def past_names(self) -> list[str]:
        """Every past input, layer by layer, key before value."""
        return [name for layer in self.layers for name in (layer.past_key, layer.past_value)]

    @property
    def present_names(self) -> list[str]:
        """Every present output, in the order of ``past_names``."""
        return [name for layer in self.layers for name in (layer.present_key, layer.present_value)]


@dataclass(frozen=True, kw_only=True)
class Recognition:
    """What reading a graph for a cache found: its layout, or why a model with a past has none (both None: no
    cache at all, not a language model with one)."""

    layout: GenerativeLayout | None = None
    note: Note | None = None


@dataclass(frozen=True, kw_only=True)
class GenerativePlan:
    """What to generate from: the prompt (its ids, a text for the tokenizer.json beside the model, or ids drawn
    inside the vocabulary with ``seed``), how many new tokens, and how many sequences at once."""

    prompt_length: int = PROMPT_LENGTH  # the drawn prompt's tokens (ignored when ids or a text are given)
    new_tokens: int = NEW_TOKENS  # tokens generated after the prompt (the first comes from the prefill)
    batch: int = 1  # sequences generated at once (the same prompt in each, or drawn ids per sequence)
    prompt_ids: list[int] = field(default_factory=list)  # the prompt's token ids, the same in every sequence
    prompt_text: str = ""  # a text, tokenised with the tokenizer.json beside the model
    seed: int = 0  # the drawn ids' seed
