"""ONNX Runtime's greedy loop, with the cache kept in ONNX Runtime's own buffers: each step's ``present`` outputs
are bound to values ONNX Runtime allocates (IO binding) and bound back, as they are, as the next step's past. Only
what changes each step crosses from numpy (the new token, the mask, the positions); the logits are read in place
(DLPack), the last position only.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from core.model.generative import GenerativeLayout

__all__ = ["Trace", "ort_generate"]


@dataclass(kw_only=True)
class Trace:
    """One greedy run: the tokens, each step's time, and (when asked) each step's last logits."""

    tokens: Any  # numpy [batch, new tokens]
    step_ns: list[int]  # step 0: from the start to the first token (the prefill); then each token after it
    cache_bytes: int = 0  # the cache once the last token is generated
    logits: list[Any] = field(default_factory=list)  # per step, [batch, vocabulary] float32 (a recorded run)


def _feeds(layout: GenerativeLayout, past: int, new: int, batch: int) -> dict[str, Any]:
    """The mask (past + new, all on), the positions and the cache position of a step, as numpy arrays."""
    import numpy as np

    feeds: dict[str, Any] = {}
    if layout.mask:
        feeds[layout.mask] = np.ones((batch, past + new), dtype=layout.mask_dtype)
    along = np.arange(past, past + new, dtype=layout.positions_dtype)
    if layout.positions:
        feeds[layout.positions] = np.ascontiguousarray(np.broadcast_to(along, (batch, new)))
    if layout.cache_position:
        feeds[layout.cache_position] = along.astype("int64")
    return feeds


def ort_generate(
    session: Any, layout: GenerativeLayout, prompt: Any, new_tokens: int, record: bool = False, forced: Any = None
) -> Trace:
    """Greedy tokens from ``prompt`` ([batch, length] ids), ``new_tokens`` of them, timed step by step; with
    ``record``, each step's last logits kept (copied) too.
    ``forced``: the tokens to feed after each step ([batch, new tokens]) instead of the model's own choice (another
    model's, so that each step's logits are compared on the same context); the trace's tokens stay its own choice."""
    import numpy as np
    import onnxruntime as ort

    batch = int(prompt.shape[0])
    binding = session.io_binding()
    empty = np.zeros(layout.past_shape(batch, 0), dtype=layout.kv_dtype)  # a past of 0 positions: no memory at all
    for name in layout.past_names:
        binding.bind_ortvalue_input(name, ort.OrtValue.ortvalue_from_numpy(empty))
    tokens = np.zeros((batch, new_tokens), dtype=np.int64)
    trace = Trace(tokens=tokens, step_ns=[])
    ids, past = np.ascontiguousarray(prompt), 0
    outputs: list[Any] = []
    last = time.perf_counter_ns()
    for step in range(new_tokens):
        length = int(ids.shape[1])
        binding.bind_cpu_input(layout.ids, ids)
        for name, array in _feeds(layout, past, length, batch).items():
            binding.bind_cpu_input(name, array)
        binding.bind_output(layout.logits, "cpu")
        for name in layout.present_names:
            binding.bind_output(name, "cpu")
        session.run_with_iobinding(binding)
        outputs = binding.get_outputs()
        logits = np.from_dlpack(outputs[0])[:, -1, :]  # in ONNX Runtime's buffer: no copy
        chosen = logits.argmax(axis=-1)
        tokens[:, step] = chosen
        now = time.perf_counter_ns()
        trace.step_ns.append(now - last)
        last = now
        if record:
            trace.logits.append(np.array(logits, dtype=np.float32))
        for name, value in zip(layout.past_names, outputs[1:], strict=True):
            binding.bind_ortvalue_input(name, value)  # the present, as it is, is the next step's past
        binding.clear_binding_outputs()
        past += length
        fed = chosen if forced is None else forced[:, step]
        ids = np.asarray(fed).astype(layout.ids_dtype).reshape(batch, 1)
    trace.cache_bytes = sum(_bytes(value) for value in outputs[1:])
    return trace


def _bytes(value: Any) -> int:
    """An OrtValue's bytes, from its shape and element type."""
    import numpy as np

    count = int(np.prod(value.shape(), dtype=np.int64))
    kind = value.data_type().removeprefix("tensor(").removesuffix(")")
    sizes = {"float": 4, "float16": 2, "bfloat16": 2, "double": 8}
    return count * sizes.get(kind, 4)
