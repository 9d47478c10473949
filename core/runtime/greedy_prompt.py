"""What a greedy generation starts from, made in the worker (Generate's, Quantize's judging of a language model):
the cache recognised in the graph, and the prompt: the ids given (checked inside the vocabulary), a text
tokenised with the tokenizer.json beside the model (through ``tokenizers``), or ids drawn inside the vocabulary
with a seed; and the length checks a model would otherwise fail on with a raw error."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.errors import GenerateError, brief
from core.i18n import _, number
from core.model.cache_config import plain_file
from core.model.generative import GenerativeLayout, GenerativePlan
from core.notes import say

__all__ = ["MAX_BATCH", "MAX_TOKENS", "Prompt", "check_plan", "make_prompt", "recognised_layout"]

MAX_TOKENS = 1 << 16  # a prompt's tokens, or the new tokens, at most
MAX_BATCH = 256
MAX_TOKENIZER_BYTES = 64 << 20  # Qwen's tokenizer.json is 7 MB
_PIECE_CONTEXT = 4  # a character takes at most four byte-level tokens (UTF-8)


def recognised_layout(path: Path) -> GenerativeLayout:
    """The cache of the ONNX model at ``path``, or GenerateError saying why there is none (in words, with what
    was found)."""
    import onnx

    from core.model.proto import value_specs
    from core.model.recognise import recognise

    model = onnx.load_model(str(path), load_external_data=False)
    initializers = {t.name for t in model.graph.initializer}
    inputs, outputs = value_specs(model.graph.input, skip=initializers), value_specs(model.graph.output)
    recognition = recognise(model, inputs, outputs, path.parent)
    if recognition.layout is not None:
        return recognition.layout
    if recognition.note is not None:
        raise GenerateError(say(recognition.note))
    raise GenerateError(
        _(
            "'{name}' takes no cache (no past_key_values inputs, no present outputs): it is no language model that "
            "generates token by token. Benchmark measures it one call at a time."
        ).format(name=path.name)
    )


@dataclass(kw_only=True)
class Prompt:
    """The prompt's ids per sequence, as an array the model takes, and the tokenizer that made it (if any)."""

    ids: Any  # numpy [batch, prompt length], the model's id dtype
    tokenizer: Any = None  # a tokenizers.Tokenizer, to say the generated tokens as text

    def text(self, ids: list[int]) -> str:
        """``ids`` as text (empty without a tokenizer)."""
        return str(self.tokenizer.decode(ids, skip_special_tokens=False)) if self.tokenizer is not None else ""

    def pieces(self, ids: list[int], before: list[int] | None = None) -> list[str]:
        """Each of ``ids`` as the text it adds (empty without a tokenizer), after ``before`` (the prompt). A token
        that holds only part of a character (Qwen's byte-level tokens split a Chinese character in two or three)
        adds nothing until the one that completes it, which adds the whole character; a token is decoded with
        the one before it, so a word's leading space is kept. Each step decodes a few tokens: linear in ``ids``."""
        if self.tokenizer is None:
            return []
        context = list(before or [])[-_PIECE_CONTEXT:]
        tokens, done, pieces = context + list(ids), len(context), []
        for end in range(len(context) + 1, len(tokens) + 1):
            start = max(0, done - 1)
            said = self.text(tokens[start:done]) if done > start else ""
            text = self.text(tokens[start:end])
            if text.endswith("\ufffd") and end - done < _PIECE_CONTEXT:  # waits for the rest of its character
                pieces.append("")
                continue
            pieces.append(text[len(said) :] if text.startswith(said) else text)
            done = end
        return pieces


def check_plan(plan: GenerativePlan, layout: GenerativeLayout, runs: int) -> None:
    """Refuse, before anything is loaded, a plan that cannot run: sizes out of range, a model with a static cache."""
    if not 1 <= plan.new_tokens <= MAX_TOKENS or not 1 <= plan.prompt_length <= MAX_TOKENS:
        raise GenerateError(
            _("The prompt and the new tokens must each be 1 to {most} tokens; nothing was run.").format(
                most=number(MAX_TOKENS)
            )
        )
    if not 1 <= plan.batch <= MAX_BATCH or not 1 <= runs <= 1000:
        raise GenerateError(
            _("The batch must be 1 to {batch} sequences and the runs 1 to 1,000; nothing was run.").format(
                batch=MAX_BATCH
            )
        )
    if layout.capacity is not None:
        raise GenerateError(
            _(
                "This model keeps a static cache of {capacity} positions fixed in its graph; Generate runs models "
                "whose cache grows with each token (past_key_values in, present out). Export it with a dynamic past "
                "axis; the single-call pages run it with its fixed shapes."
            ).format(capacity=number(layout.capacity))
        )


def _tokenizer(model: Path, layout: GenerativeLayout, given: Path | None = None) -> Any:
    if given is not None:  # a tokenizer.json elsewhere (a Hugging Face folder's top, the model under onnx/)
        path = plain_file(given.parent, given.name)
    else:
        path = plain_file(model.parent, layout.tokenizer) if layout.tokenizer else None
    if path is None or path.stat().st_size > MAX_TOKENIZER_BYTES:
        return None
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # the worker's threads are the measurement's
    from tokenizers import Tokenizer

    try:
        return Tokenizer.from_file(str(path))
    except Exception as exc:  # the library's own words: a file it cannot read
        raise GenerateError(
            _("The tokenizer.json beside the model could not be read ({error}); give the prompt as ids.").format(
                error=brief(str(exc), 200)
            )
        ) from None


def _ids(plan: GenerativePlan, layout: GenerativeLayout, tokenizer: Any) -> list[list[int]]:
    if plan.prompt_text:
        if tokenizer is None:
            raise GenerateError(
                _(
                    "A prompt given as text needs the model's tokenizer.json beside it, and there is none; give the "
                    "prompt as ids (--prompt-ids) or as a length of drawn ids (--prompt-len)."
                )
            )
        ids = list(tokenizer.encode(plan.prompt_text).ids)
        if not ids:
            raise GenerateError(_("The prompt's text makes no token; give a text with words in it."))
        outside = [i for i in ids if not 0 <= i < layout.vocabulary]
        if outside:  # another model's tokenizer (given apart from the model): its ids would index past the table
            raise GenerateError(
                _(
                    "The tokenizer made token id {id}, outside the model's vocabulary of {count}: it is not this "
                    "model's tokenizer. Give the one the model was trained with."
                ).format(id=outside[0], count=number(layout.vocabulary))
            )
        return [ids] * plan.batch
    if plan.prompt_ids:
        outside = [i for i in plan.prompt_ids if not 0 <= i < layout.vocabulary]
        if outside:
            raise GenerateError(
                _("Token id {id} is outside the model's vocabulary of {count} (ids 0 to {last}).").format(
                    id=outside[0], count=number(layout.vocabulary), last=number(layout.vocabulary - 1)
                )
            )
        return [list(plan.prompt_ids)] * plan.batch
    import numpy as np

    rng = np.random.default_rng(plan.seed)
    return rng.integers(0, layout.vocabulary, (plan.batch, plan.prompt_length)).tolist()


def make_prompt(
    model: Path, plan: GenerativePlan, layout: GenerativeLayout, tokenizer_file: Path | None = None
) -> Prompt:
    """The prompt of ``plan`` for the model at ``model``, refused when it and the new tokens pass its context.
    ``tokenizer_file``: the tokenizer.json to use when it is not beside the model."""
    import numpy as np

    tokenizer = _tokenizer(model, layout, tokenizer_file)
    ids = _ids(plan, layout, tokenizer)
    length = len(ids[0])
    if length > MAX_TOKENS:
        raise GenerateError(
            _("The prompt is {count} tokens; at most {most} are taken.").format(
                count=number(length), most=number(MAX_TOKENS)
            )
        )
    context = layout.context_length
    if context is not None and length + plan.new_tokens > context:
        raise GenerateError(
            _(
                "The prompt ({prompt} tokens) and the new tokens ({new}) pass the model's context of {context} "
                "positions; ask for fewer."
            ).format(prompt=number(length), new=number(plan.new_tokens), context=number(context))
        )
    return Prompt(ids=np.asarray(ids, dtype=layout.ids_dtype), tokenizer=tokenizer)
