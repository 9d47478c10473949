"""A language model's two phases, profiled apart: one prefill of the plan's prompt and one decode step after it
(one new token, the cache holding the prompt). Prefill runs every weight over the whole prompt (MatMul bound);
a decode step runs them over one token and reads the whole cache (attention on the past).

The decode step is fed from the prefill's own outputs, as a greedy loop would feed it: its token the prefill's
choice, its past the prefill's present, its mask one longer, its position the past's length. The cache comes from
the model's record (core.model.recognise); a model whose cache is not recognised is profiled one call at a time,
with a note that says why.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.model.generative import GenerativeLayout
from core.notes import Note, note
from core.profile.records import EagerProfile, PhaseProfile
from core.profile.words import NO_SPLIT

if TYPE_CHECKING:
    import onnx

    from core.model.inputs import BenchInput
    from core.profile.ort_profile import OrtProfile

__all__ = ["TOP_NODES", "decode_feeds", "eager_decode", "phases_of", "recognised_cache"]

TOP_NODES = 30  # a phase's slowest nodes kept in the report


def recognised_cache(model: onnx.ModelProto, path: str) -> tuple[GenerativeLayout | None, Note | None]:
    """The cache of ``model`` (read from ``path``; None for a model without one), or why a model that has one cannot
    be split into its phases (a note)."""
    from core.model.proto import value_specs
    from core.model.recognise import recognise

    initializers = {t.name for t in model.graph.initializer}
    inputs, outputs = value_specs(model.graph.input, skip=initializers), value_specs(model.graph.output)
    recognition = recognise(model, inputs, outputs, Path(path).parent)
    if recognition.layout is None and recognition.note is not None:
        return None, note(NO_SPLIT, why=recognition.note)
    return recognition.layout, None


def _past_length(layout: GenerativeLayout, feeds: dict[str, Any]) -> int:
    """The positions in the cache after the call ``feeds`` make: the past it was given (none in a cache of fixed
    capacity, whose length is not its fill) and the new tokens."""
    first = layout.past_names[0] if layout.past_names else ""
    given = 0
    if layout.capacity is None and first in feeds:
        given = int(feeds[first].shape[layout.sequence_axis])
    return given + int(feeds[layout.ids].shape[1])


def decode_feeds(layout: GenerativeLayout, feeds: dict[str, Any], outputs: dict[str, Any]) -> dict[str, Any]:
    """What one decode step after the call ``feeds`` made is fed, from that call's ``outputs`` (by name): the
    token it chose, its present as the past, a mask one longer, the position after the past."""
    import numpy as np

    past = _past_length(layout, feeds)
    batch = int(feeds[layout.ids].shape[0])
    chosen = np.asarray(outputs[layout.logits])[:, -1, :].argmax(axis=-1).reshape(batch, 1)
    step = dict(feeds)
    step[layout.ids] = chosen.astype(layout.ids_dtype)
    for name, present in zip(layout.past_names, layout.present_names, strict=True):
        step[name] = outputs[present]
    if layout.mask and layout.mask in feeds:
        step[layout.mask] = np.ones((batch, int(feeds[layout.mask].shape[1]) + 1), dtype=layout.mask_dtype)
    if layout.positions and layout.positions in feeds:
        step[layout.positions] = np.full((batch, 1), past, dtype=layout.positions_dtype)
    if layout.cache_position and layout.cache_position in feeds:
        step[layout.cache_position] = np.array([past], dtype="int64")
    return step


def phases_of(
    layout: GenerativeLayout, feeds: dict[str, Any], prefill: OrtProfile, decode: OrtProfile
) -> dict[str, PhaseProfile]:
    """The prefill (the call ``feeds`` make) and the decode step after it, as the report keeps them."""
    tokens = int(feeds[layout.ids].shape[1])
    after = _past_length(layout, feeds)
    return {"prefill": _phase(prefill, tokens, after - tokens), "decode": _phase(decode, 1, after)}


def _phase(profile: OrtProfile, new_tokens: int, past: int) -> PhaseProfile:
    """One phase's profile as the report keeps it: per op type, and its slowest nodes."""
    return PhaseProfile(
        new_tokens=new_tokens,
        past=past,
        call_ms=profile.call_ms,
        run_ms=profile.run_ms,
        kernel_ms=profile.kernel_ms,
        overhead_ms=max(0.0, profile.call_ms - profile.kernel_ms),
        op_types=profile.op_types(),
        nodes=profile.nodes[:TOP_NODES],
    )


def eager_decode(
    module: Any,
    inputs: list[BenchInput],
    outputs: list[str],
    layout: GenerativeLayout,
    feeds: dict[str, Any],
    timing: tuple[int, int, int],
) -> EagerProfile:
    """PyTorch eager's decode step after its own prefill: ``module`` (a language model taking and giving its tensors
    as the export does, ``outputs`` its outputs' names) runs the prefill ``feeds`` make once, and the step is fed
    from those outputs as ONNX Runtime's is (decode_feeds: its token, its present as the past), then profiled as the
    prefill was (``timing``: threads, iterations, warm-up)."""
    import numpy as np
    import torch

    from core.profile.eager import profile_eager

    with torch.inference_mode():
        given = module(*(torch.from_numpy(np.ascontiguousarray(feeds[s.name])) for s in inputs))
    made = {name: value.numpy() for name, value in zip(outputs, given, strict=True)}
    step = decode_feeds(layout, feeds, made)
    threads, iterations, warmup = timing
    tensors = [torch.from_numpy(np.ascontiguousarray(step[s.name])) for s in inputs]
    return profile_eager(module, tensors, threads, iterations, warmup)
