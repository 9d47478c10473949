"""ONNX Runtime's greedy loop, with the cache kept in ONNX Runtime's own buffers (IO binding) and nothing allocated
per step that need not be. Generate measures with it; Export and Quantize judge a language model by its tokens with it.

Two ways to keep the cache, chosen by the graph:
- **one buffer** (GroupQueryAttention, as onnxruntime-genai's builder writes it): each layer's keys and values live in
  a buffer of the whole generation's length, bound once as both the past and the present, which the attention writes
  in place (its past_present_share_buffer mode, as genai's own generator runs it); a step binds nothing new but the
  mask. A graph that will not take it (a present computed as the past and the new positions, whatever the past's
  length) fails its first call, quietly, and the loop takes the second way, remembering the session.
- **a growing cache** (any other attention: present = past + the new positions): each step's present outputs are
  bound to values ONNX Runtime allocates and bound back, as they are, as the next step's past.
Either way the new token, the positions and the logits live in buffers made once (the token and positions updated in
place, the logits written by ONNX Runtime into an array of ours: nothing is read back from it), and the mask, all
ones, is a prefix of one array, bound by its address and shape. A decode step of a small model is ~40 µs, so its
Python is kept to what must be done: the token chosen by an argmax written in place, no array wrapped, no list or
dict built, what it touches bound to local names once.
"""

from __future__ import annotations

import functools
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from core.i18n import N_
from core.model.generative import GenerativeLayout
from core.runtime.ort import NUMPY_TYPES

__all__ = ["NOISY_DECODE", "Trace", "ort_generate"]

NOISY_DECODE = N_(
    "Noisy: the 95 % CI of {engine}'s decoding speed is wider than ±{percent} %; run again with more runs, more "
    "tokens or on a quieter machine."
)

# sessions whose attention would not write its cache in place (tried once, then the growing cache), and those that did
_GROWS: weakref.WeakSet[Any] = weakref.WeakSet()
_SHARES: weakref.WeakSet[Any] = weakref.WeakSet()


@dataclass(kw_only=True)
class Trace:
    """One greedy run: the tokens, each step's time, and (when asked) each step's last logits."""

    tokens: Any  # numpy [batch, new tokens]
    step_ns: list[int]  # step 0: from the start to the first token (the prefill); then each token after it
    cache_bytes: int = 0  # the cache once the last token is generated
    logits: list[Any] = field(default_factory=list)  # per step, [batch, vocabulary] float32 (a recorded run)


class _Buffers:
    """What a step is fed and what it gives back, made once per generation: the ids (the prompt, then the chosen
    token, in place), a mask of ones (a prefix of one array), the positions (in place), the logits (ours)."""

    def __init__(self, layout: GenerativeLayout, prompt: Any, new_tokens: int, logits_dtype: Any) -> None:
        import numpy as np
        import onnxruntime as ort

        batch, length = int(prompt.shape[0]), int(prompt.shape[1])
        self.layout, self.batch = layout, batch
        self.prompt = np.ascontiguousarray(prompt, dtype=layout.ids_dtype)
        self.ones = np.ones(batch * (length + new_tokens), dtype=layout.mask_dtype)
        self.token = np.zeros((batch, 1), dtype=layout.ids_dtype)
        self.position = np.zeros((batch, 1), dtype=layout.positions_dtype)
        self.cache_position = np.zeros(1, dtype="int64")
        self.prompt_logits = np.empty((batch, length, layout.vocabulary), dtype=logits_dtype)
        self.step_logits = np.empty((batch, 1, layout.vocabulary), dtype=logits_dtype)
        self._value = ort.OrtValue.ortvalue_from_numpy

    def prefill(self, binding: Any) -> Any:
        """Bind the prompt, its mask and positions, and the prompt's logits; returns the logits' array."""
        import numpy as np

        layout, length = self.layout, int(self.prompt.shape[1])
        binding.bind_cpu_input(layout.ids, self.prompt)
        along = np.arange(length, dtype=layout.positions_dtype)
        if layout.mask:
            binding.bind_cpu_input(layout.mask, self._mask(length))
        if layout.positions:
            binding.bind_cpu_input(layout.positions, np.ascontiguousarray(np.broadcast_to(along, (self.batch, length))))
        if layout.cache_position:
            binding.bind_cpu_input(layout.cache_position, along.astype("int64"))
        return self._bind_logits(binding, self.prompt_logits)

    def first_step(self, binding: Any) -> Any:
        """Bind, once, what every step after the prefill reads in place; returns the logits as [batch, vocabulary]
        (a view of the array ONNX Runtime writes)."""
        layout = self.layout
        binding.bind_ortvalue_input(layout.ids, self._value(self.token))
        if layout.positions:
            binding.bind_ortvalue_input(layout.positions, self._value(self.position))
        if layout.cache_position:
            binding.bind_ortvalue_input(layout.cache_position, self._value(self.cache_position))
        return self._bind_logits(binding, self.step_logits).reshape(self.batch, -1)

    def feeder(self, binding: Any) -> Callable[[Any, int], None]:
        """A step's feed: the token (``fed``, one per sequence) and where it stands (``past``) written in place,
        the mask, one longer, bound. Made once, with what it touches bound to names of its own: a decode step of a
        small model is ~40 µs, and each attribute looked up, view made or array wrapped costs a few percent of it."""
        layout, batch = self.layout, self.batch
        token = self.token.reshape(batch)
        position = self.position if layout.positions else None
        cache_position = self.cache_position if layout.cache_position else None
        bind_mask = self._mask_binder(binding) if layout.mask else None

        def feed(fed: Any, past: int) -> None:
            token[:] = fed
            if position is not None:
                position[:] = past
            if cache_position is not None:
                cache_position[0] = past
            if bind_mask is not None:
                bind_mask(past + 1)

        return feed

    def _mask_binder(self, binding: Any) -> Callable[[int], None]:
        """Bind a mask of ``total`` positions per sequence: ONNX Runtime's own call on a pointer into the array of
        ones where its Python wrapper exposes it (a numpy view wrapped each step costs ~2 µs more), else a view."""
        name, ones, batch = self.layout.mask, self.ones, self.batch
        inner = getattr(binding, "_iobinding", None)
        if inner is None:
            return lambda total: binding.bind_cpu_input(name, self._mask(total))
        from onnxruntime.capi import _pybind_state as pybind

        device = pybind.OrtDevice(pybind.OrtDevice.cpu(), pybind.OrtDevice.default_memory(), 0)
        bind, kind, pointer = inner.bind_input, ones.dtype.type, ones.ctypes.data
        return lambda total: bind(name, device, kind, (batch, total), pointer)

    def _mask(self, total: int) -> Any:
        """The mask of ``total`` positions per sequence: all ones, a view of one array."""
        return self.ones[: self.batch * total].reshape(self.batch, total)

    def _bind_logits(self, binding: Any, logits: Any) -> Any:
        binding.bind_output(
            self.layout.logits, "cpu", element_type=logits.dtype.type, shape=logits.shape, buffer_ptr=logits.ctypes.data
        )
        return logits


class _SharedCache:
    """The cache in one buffer per tensor, of the whole generation's length, bound as past and present."""

    def __init__(self, layout: GenerativeLayout, binding: Any, batch: int, capacity: int) -> None:
        import numpy as np
        import onnxruntime as ort

        self.arrays = [np.zeros(layout.past_shape(batch, capacity), dtype=layout.kv_dtype) for _ in layout.past_names]
        for past, present, array in zip(layout.past_names, layout.present_names, self.arrays, strict=True):
            value = ort.OrtValue.ortvalue_from_numpy(array)
            binding.bind_ortvalue_input(past, value)
            binding.bind_ortvalue_output(present, value)

    def before(self, binding: Any) -> None:
        """Nothing to bind: the attention writes the new positions in place."""

    def after(self, binding: Any) -> None:
        """Nothing to bind back."""

    def bytes(self) -> int:
        return sum(int(a.nbytes) for a in self.arrays)


class _GrowingCache:
    """The cache as ONNX Runtime allocates each step's present, bound back as the next past."""

    def __init__(self, layout: GenerativeLayout, binding: Any, batch: int) -> None:
        import numpy as np
        import onnxruntime as ort

        self.layout = layout
        self.outputs: list[Any] = []
        empty = ort.OrtValue.ortvalue_from_numpy(np.zeros(layout.past_shape(batch, 0), dtype=layout.kv_dtype))
        for name in layout.past_names:
            binding.bind_ortvalue_input(name, empty)  # a past of 0 positions: no memory at all

    def before(self, binding: Any) -> None:
        for name in self.layout.present_names:
            binding.bind_output(name, "cpu")

    def after(self, binding: Any) -> None:
        self.outputs = binding.get_outputs()[1:]  # the logits are bound first
        for name, value in zip(self.layout.past_names, self.outputs, strict=True):
            binding.bind_ortvalue_input(name, value)  # the present, as it is, is the next step's past

    def bytes(self) -> int:
        return sum(_bytes(value) for value in self.outputs)


def ort_generate(
    session: Any, layout: GenerativeLayout, prompt: Any, new_tokens: int, record: bool = False, forced: Any = None
) -> Trace:
    """Greedy tokens from ``prompt`` ([batch, length] ids), ``new_tokens`` of them, timed step by step; with
    ``record``, each step's last logits kept (copied) too.
    ``forced``: the tokens to feed after each step ([batch, new tokens]) instead of the model's own choice (another
    model's, so that each step's logits are compared on the same context); the trace's tokens stay its own choice."""
    shared = layout.attention == "GroupQueryAttention" and session not in _GROWS
    if shared:
        try:
            return _generate(session, layout, prompt, new_tokens, record, forced, shared=True)
        except Exception:  # its attention will not write a cache of the generation's length in place
            _GROWS.add(session)
    return _generate(session, layout, prompt, new_tokens, record, forced, shared=False)


def _generate(
    session: Any, layout: GenerativeLayout, prompt: Any, new_tokens: int, record: bool, forced: Any, *, shared: bool
) -> Trace:
    import numpy as np
    import onnxruntime as ort

    kind = next((o.type for o in session.get_outputs() if o.name == layout.logits), "tensor(float)")
    buffers = _Buffers(layout, prompt, new_tokens, NUMPY_TYPES.get(kind, np.float32))
    batch, length = buffers.batch, int(buffers.prompt.shape[1])
    binding = session.io_binding()
    logits = buffers.prefill(binding)  # bound first: the growing cache's presents follow it
    cache = (
        _SharedCache(layout, binding, batch, length + new_tokens) if shared else _GrowingCache(layout, binding, batch)
    )
    trial = None  # a session not yet known to share its cache tries quietly, once (a RunOptions costs each run
    if shared and session not in _SHARES:  # ~0.1 ms in ONNX Runtime's Python: none is passed otherwise)
        trial = ort.RunOptions()
        trial.log_severity_level = 4
    run = _runner(session, binding)
    chosen = np.zeros((new_tokens, batch), dtype=np.intp)  # a row per step, written by argmax in place
    step_ns = [0] * new_tokens
    recorded: list[Any] = []
    clock = time.perf_counter_ns
    last = clock()
    cache.before(binding)  # the prefill: the first token
    if trial is not None:
        session.run_with_iobinding(binding, trial)
    else:
        run()
    logits[:, -1, :].argmax(axis=-1, out=chosen[0])
    now = clock()
    step_ns[0], last = now - last, now
    if record:
        recorded.append(np.array(logits[:, -1, :], dtype=np.float32))
    cache.after(binding)
    logits = buffers.first_step(binding)  # [batch, vocabulary], each step's
    feed = buffers.feeder(binding)
    before, after = (None, None) if shared else (cache.before, cache.after)  # the shared cache binds nothing
    fed = chosen if forced is None else np.ascontiguousarray(np.asarray(forced).T)
    for step in range(1, new_tokens):  # the decode steps: nothing here that need not be done each step
        feed(fed[step - 1], length + step - 1)
        if before is not None:
            before(binding)
        run()
        logits.argmax(axis=1, out=chosen[step])
        now = clock()
        step_ns[step], last = now - last, now
        if record:
            recorded.append(np.array(logits, dtype=np.float32))
        if after is not None:
            after(binding)
    trace = Trace(tokens=np.ascontiguousarray(chosen.T, dtype=np.int64), step_ns=step_ns, logits=recorded)
    trace.cache_bytes = cache.bytes()
    if shared:
        _SHARES.add(session)
    return trace


def _runner(session: Any, binding: Any) -> Callable[[], None]:
    """A run of ``binding``: ONNX Runtime's own call where its Python wrapper exposes it (the public method's checks for
    WebGPU graph capture, which a CPU session never does, cost ~8 µs a step: a seventh of a small model's decode step),
    else the public method."""
    inner, bound = getattr(session, "_sess", None), getattr(binding, "_iobinding", None)
    direct = getattr(inner, "run_with_iobinding", None)
    capturing = getattr(inner, "is_webgpu_graph_capture_enabled", lambda: True)
    if direct is None or bound is None or capturing():
        return functools.partial(session.run_with_iobinding, binding)
    return functools.partial(direct, bound, None)


def _bytes(value: Any) -> int:
    """An OrtValue's bytes, from its shape and element type."""
    import numpy as np

    count = int(np.prod(value.shape(), dtype=np.int64))
    kind = value.data_type().removeprefix("tensor(").removesuffix(")")
    sizes = {"float": 4, "float16": 2, "bfloat16": 2, "double": 8}
    return count * sizes.get(kind, 4)
