"""Two language models at one step of one prompt: both driven by the same tokens, each fed the past it built itself.

One call of a language model on a random cache means nothing; a step of a generation does. The first model (A)
chooses greedily from the prompt through the ``step`` tokens before the step (its prefill, then ``step`` − 1
decode steps); both models are then walked through the same context, A's tokens forced on the second (B), each
keeping the keys and values it computes (in its own dtype: a float16 cache stays float16). The step's inputs are
the same ids, mask and positions for both and each model's own past, so the comparison is of the step itself, not
of the drift accumulated before it (which each past's own error, against A's, says apart). Each walk is one plain
``session.run`` per token on the side's optimized graph (the graph Compare reads its tensors from): Generate's loop
keeps the cache in ONNX Runtime's buffers and hands none back, and a comparison times nothing.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.compare.measures import Graph, measure
from core.compare.records import (
    CompareRequest,
    Divergence,
    LayerError,
    NodeError,
    StepPlan,
    StepReport,
    TensorError,
    TopToken,
)
from core.compare.runs import Prepared
from core.errors import CompareError, WorkbenchError
from core.i18n import N_, _, number
from core.model.blocks import block_of
from core.model.generative import GenerativeLayout, GenerativePlan
from core.notes import note

__all__ = ["PAST_PARTED", "Stepped", "at_step", "divergence_layer", "layer_errors", "past_divergence"]

TOP = 5  # the likeliest tokens shown for each model
_ROLES = ("ids", "mask", "positions", "cache_position")
PAST_PARTED = N_(
    "It reads the past '{name}', which the second model built otherwise from the same tokens (by up to {diff}): "
    "the two models parted at an earlier step."
)


@dataclass(kw_only=True)
class Stepped:
    """Each side's inputs at the step (the same tokens, its own past) and what the step's walk found."""

    feeds_a: dict[str, Any]
    feeds_b: dict[str, Any]
    report: StepReport  # its layers and divergence_layer filled once the tensors are compared


def _layout(path: str, which: str) -> GenerativeLayout:
    from core.runtime.greedy_prompt import recognised_layout

    try:
        return recognised_layout(Path(path))
    except WorkbenchError as exc:
        raise CompareError(
            _("A step of a prompt compares two language models, and {which} is none: {reason}").format(
                which=which, reason=str(exc)
            )
        ) from None


def _check(la: GenerativeLayout, lb: GenerativeLayout) -> None:
    """Refuse two language models that cannot be fed the same tokens."""
    differ = [role for role in _ROLES if getattr(la, role) != getattr(lb, role)]
    if la.vocabulary != lb.vocabulary:
        differ.append(_("vocabulary ({a} and {b})").format(a=number(la.vocabulary), b=number(lb.vocabulary)))
    if len(la.layers) != len(lb.layers):
        differ.append(_("layers ({a} and {b})").format(a=len(la.layers), b=len(lb.layers)))
    if differ:
        raise CompareError(
            _(
                "The two language models are not fed alike ({what} differ), so they cannot be driven by the same "
                "tokens. Compare two variants of one model (model.onnx and model_fp16.onnx of one folder)."
            ).format(what=", ".join(differ))
        )


def _feeds(layout: GenerativeLayout, ids: Any, past: list[Any], length: int) -> dict[str, Any]:
    """One call's inputs: ``ids`` ([1, n]) after ``length`` positions of ``past`` (each past input's array)."""
    import numpy as np

    new = int(ids.shape[1])
    along = np.arange(length, length + new)
    feeds = {layout.ids: np.asarray(ids, dtype=layout.ids_dtype)}
    if layout.mask:
        feeds[layout.mask] = np.ones((1, length + new), dtype=layout.mask_dtype)
    if layout.positions:
        feeds[layout.positions] = along[None, :].astype(layout.positions_dtype)
    if layout.cache_position:
        feeds[layout.cache_position] = along.astype("int64")
    feeds.update(zip(layout.past_names, past, strict=True))
    return feeds


class _Walker:
    """A side's optimized graph, run one call at a time with a past it keeps."""

    def __init__(self, side: Prepared, layout: GenerativeLayout) -> None:
        import numpy as np
        import onnxruntime as ort

        from core.runtime.ort import explain_session_error, session_options

        self.layout = layout
        try:
            self.session = ort.InferenceSession(
                str(side.folder / "optimized.onnx"), session_options("disable"), providers=[side.provider]
            )
        except Exception as exc:
            raise explain_session_error(exc, _("open the model")) from None
        self.past = [np.zeros(layout.past_shape(1, 0), dtype=layout.kv_dtype) for _ in layout.past_names]
        self.length = 0
        self._explain = explain_session_error

    def call(self, ids: Any) -> tuple[dict[str, Any], Any]:
        """Feed ``ids`` after the past; keep the presents as the next past. The feeds and the last logits."""
        feeds = _feeds(self.layout, ids, self.past, self.length)
        try:
            logits, *presents = self.session.run([self.layout.logits, *self.layout.present_names], feeds)
        except Exception as exc:
            raise self._explain(exc, _("run the model")) from None
        self.past, self.length = presents, self.length + int(ids.shape[1])
        return feeds, logits[0, -1]


def _prompt(request: CompareRequest, plan: StepPlan, layout: GenerativeLayout) -> Any:
    from core.runtime.greedy_prompt import check_plan, make_prompt

    if not 0 <= plan.step < 1 << 16:
        raise CompareError(
            _("The step must be 0 (the prefill) or a decode step after it (1, 2, …); {step} was asked.").format(
                step=plan.step
            )
        )
    wanted = GenerativePlan(
        prompt_length=plan.prompt_length, new_tokens=plan.step + 1, prompt_ids=list(plan.prompt_ids),
        prompt_text=plan.prompt_text, seed=plan.seed,
    )  # fmt: skip
    check_plan(wanted, layout, 1)
    return make_prompt(Path(request.a.path), wanted, layout, Path(plan.tokenizer) if plan.tokenizer else None)


def _top(logits: Any, prompt: Any) -> list[TopToken]:
    import numpy as np

    values = np.asarray(logits, dtype=np.float64)
    best = np.argsort(-values, kind="stable")[:TOP]
    return [TopToken(id=int(i), logit=float(values[i]), text=prompt.text([int(i)])) for i in best]


def at_step(request: CompareRequest, pa: Prepared, pb: Prepared) -> Stepped:
    """The step's inputs for each side, and the tokens, pasts and choices around it (see the module's docstring)."""
    import numpy as np

    plan = request.step
    assert plan is not None
    la, lb = _layout(request.a.path, _("the first model")), _layout(request.b.path, _("the second model"))
    _check(la, lb)
    prompt = _prompt(request, plan, la)
    walk_a, walk_b = _Walker(pa, la), _Walker(pb, lb)
    tokens: list[int] = []
    ids = prompt.ids
    for _token in range(plan.step):  # the prefill and step − 1 decode steps: A chooses, B is fed A's choice
        _fed, logits = walk_a.call(ids)
        walk_b.call(ids)
        tokens.append(int(np.argmax(logits)))
        ids = np.asarray([[tokens[-1]]])
    past = [
        found
        for name, a, b in zip(la.past_names, walk_a.past, walk_b.past, strict=True)
        if plan.step and (found := measure(name, a, b, request.rtol, request.atol)) is not None
    ]
    length = walk_a.length
    feeds_a, logits_a = walk_a.call(ids)
    feeds_b, logits_b = walk_b.call(ids)
    top_a, top_b = _top(logits_a, prompt), _top(logits_b, prompt)
    report = StepReport(
        step=plan.step, prompt_ids=[int(i) for i in prompt.ids[0]], prompt_text=prompt.text(prompt.ids[0].tolist()),
        tokens=tokens, tokens_text=prompt.text(tokens), past_length=length, kv_dtype_a=la.kv_dtype,
        kv_dtype_b=lb.kv_dtype,
        greedy_a=top_a[0].id, greedy_b=top_b[0].id, top5_a=top_a, top5_b=top_b, past=past, layers=[],
    )  # fmt: skip
    return Stepped(feeds_a=feeds_a, feeds_b=feeds_b, report=report)


def _block(graph: Graph, index: int) -> tuple[str, int] | None:
    name = graph.names[index]
    return block_of(name if "/" in name else graph.modules[index])


def layer_errors(graph: Graph, nodes: list[NodeError]) -> list[LayerError]:
    """The layers of the first model in order, each by its worst compared node."""
    found: dict[str, list[NodeError]] = {}
    numbers: dict[str, int] = {}
    for node in nodes:
        block = _block(graph, node.index)
        if block is not None:
            found.setdefault(block[0], []).append(node)
            numbers[block[0]] = block[1]
    layers = []
    for name, members in found.items():
        worst = max(members, key=lambda n: (not n.within, n.relative))
        first = next((n.node for n in members if not n.within), "")
        layers.append(
            LayerError(
                name=name, index=numbers[name], nodes=len(members), max_abs=max(n.max_abs for n in members),
                relative=worst.relative, within=all(n.within for n in members), first_out=first,
            )
        )  # fmt: skip
    return layers


def divergence_layer(graph: Graph, divergence: Divergence | None) -> str:
    """The layer the first divergence lies in ("" outside any, or none)."""
    block = _block(graph, divergence.index) if divergence is not None else None
    return block[0] if block else ""


def past_divergence(graph: Graph, divergence: Divergence | None, past: list[TensorError]) -> Divergence | None:
    """The first divergence, its causes led by the past it reads when the second model built that past otherwise
    from the same tokens (out of tolerance against the first's): then the models parted before this step."""
    if divergence is None:
        return None
    reads = set(graph.inputs[divergence.index])
    parted = [p for p in past if p.name in reads and not p.within]
    if not parted:
        return divergence
    worst = max(parted, key=lambda p: p.relative)
    why = note(PAST_PARTED, name=worst.name, diff=float(worst.max_abs))
    return dataclasses.replace(divergence, cause="past", why=[why, *divergence.why])
