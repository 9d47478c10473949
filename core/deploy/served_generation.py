"""``POST /generate`` for a language model, shipped beside the generated server's app.py as ``generation.py`` when
Deploy serves a model with a cache (what it serves is signature.json's ``generate``: the cache's inputs and outputs,
the vocabulary, the limits). Standalone: it imports numpy, onnxruntime and FastAPI (``tokenizers`` when a
tokenizer.json is packaged), never core.

The body is a JSON object: ``{"prompt_ids": [ids...]}`` or ``{"prompt": "text"}`` (with a packaged tokenizer.json),
``"max_new_tokens": N`` (default 32), ``"stop_at_eos": true`` (the default: stop at an end-of-sequence token). The
answer streams NDJSON (``application/x-ndjson``), a line per token as it is made, ``{"token": id, "text": "..."}``
(``text`` with a tokenizer: the text the token adds, empty while a character's bytes are incomplete), and a last line
``{"done": true, "tokens": N, "prompt_tokens": P, "stopped": "length" | "eos"}`` (or ``{"error": "..."}`` when the
model fails midway). Greedy: each token is the logits' argmax, as ``python -m core generate`` chooses it.

The cache stays in ONNX Runtime's buffers (IO binding: each step's present outputs, allocated by ONNX Runtime, are
bound as they are as the next step's past; nothing is copied back but the last logits). Each step runs in a worker
thread of the generations' own pool, handed over step by step, so streams interleave, the event loop stays free and
/health and /predict are answered during a generation. Limits: ``max_new_tokens`` and ``max_prompt_tokens`` capped
(and the model's context), the body at most ``max_body_bytes`` (1 MiB), a text prompt at most ``max_prompt_chars``,
at most ``max_streams`` generations at once (503 past it, with Retry-After); unknown keys, ids outside the vocabulary
and a body that is not strict JSON are refused (422, 400), another Content-Type 415.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import onnxruntime as ort
from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import StreamingResponse

__all__ = ["Generate", "Generation"]

NDJSON = "application/x-ndjson"
KEYS = ("prompt_ids", "prompt", "max_new_tokens", "stop_at_eos")
DEFAULT_NEW = 32
_CONTEXT = 4  # tokens decoded before a new one, so that its text keeps a word's leading space


class Generation:
    """One greedy generation from ``prompt``: ``step()`` runs the model once (the prompt first, then each token)
    and returns the token it chose."""

    def __init__(self, session: ort.InferenceSession, spec: dict[str, Any], prompt: list[int], new: int) -> None:
        self.session, self.spec = session, spec
        self.binding = session.io_binding()
        self.past = 0
        self.next = np.asarray([prompt], dtype=spec["ids_dtype"])
        self.ones = np.ones((1, len(prompt) + new), dtype=spec.get("mask_dtype", "int64"))
        empty = ort.OrtValue.ortvalue_from_numpy(np.zeros(self._past_shape(0), dtype=spec["kv_dtype"]))
        for name in spec["past"]:
            self.binding.bind_ortvalue_input(name, empty)  # a past of 0 positions at the prefill

    def _past_shape(self, length: int) -> list[int]:
        spec = self.spec
        if spec["sequence_axis"] == 1:  # [batch, past, kv heads, head size]
            return [1, length, spec["kv_heads"], spec["head_size"]]
        return [1, spec["kv_heads"], length, spec["head_size"]]

    def step(self) -> int:
        spec, binding = self.spec, self.binding
        total = self.past + int(self.next.shape[1])
        binding.bind_cpu_input(spec["ids"], self.next)
        if spec.get("mask"):
            binding.bind_cpu_input(spec["mask"], np.ascontiguousarray(self.ones[:, :total]))
        along = np.arange(self.past, total)
        if spec.get("positions"):
            binding.bind_cpu_input(spec["positions"], along.astype(spec.get("positions_dtype", "int64"))[None])
        if spec.get("cache_position"):
            binding.bind_cpu_input(spec["cache_position"], along.astype("int64"))
        binding.bind_output(spec["logits"], "cpu")
        for name in spec["present"]:
            binding.bind_output(name, "cpu")
        self.session.run_with_iobinding(binding)
        outputs = binding.get_outputs()
        token = int(np.asarray(outputs[0].numpy())[0, -1].argmax())
        for name, value in zip(spec["past"], outputs[1:], strict=True):
            binding.bind_ortvalue_input(name, value)  # the present, as it is, is the next step's past
        self.past = total
        self.next = np.asarray([[token]], dtype=spec["ids_dtype"])
        return token


def step_workers(intra_op_threads: int, max_streams: int, cores: int | None = None) -> int:
    """How many steps run at once: as many as the cores hold at the session's intra-op threads each (0, ONNX
    Runtime's default, is a thread per core: one step at a time). The rest wait their turn in the pool's queue, first
    come first served, so streams interleave. Two steps of two threads on two cores had four threads spinning on two
    cores (ONNX Runtime's threads spin while a step runs): each step waited for a thread the other's had pushed off,
    and the total fell as streams were added (docs/deploy.md has the figures)."""
    if cores is None:  # the cores this process may run on (a container's or taskset's), not the machine's
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    threads = intra_op_threads if intra_op_threads > 0 else cores
    return max(1, min(max_streams, cores // threads))


class _Admitted(StreamingResponse):
    """A stream counted from the moment it was accepted: ``release`` is called once when the response ends, however
    it ends (every line sent, the client gone before the first, the server stopping), never left counted."""

    def __init__(self, lines: AsyncIterator[bytes], release: Any) -> None:
        super().__init__(lines, media_type=NDJSON)
        self._release = release

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            release, self._release = self._release, None
            if release is not None:
                release()


class Generate:
    """The /generate route on ``app``, running the session in ``state`` with signature.json's ``generate``."""

    def __init__(
        self, app: FastAPI, state: dict[str, Any], spec: dict[str, Any], here: Path, intra_op_threads: int = 0
    ) -> None:
        self.state, self.spec = state, spec
        self.max_new = int(spec.get("max_new_tokens", 1024))
        self.max_prompt = int(spec.get("max_prompt_tokens", 4096))
        self.max_chars = int(spec.get("max_prompt_chars", 65536))
        self.max_body = int(spec.get("max_body_bytes", 1 << 20))
        self.max_streams = int(spec.get("max_streams", 16))
        self.streams = 0
        self.tokenizer = None
        if spec.get("tokenizer"):
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
            from tokenizers import Tokenizer

            self.tokenizer = Tokenizer.from_file(str(here / spec["tokenizer"]))
        self.pool = ThreadPoolExecutor(step_workers(intra_op_threads, self.max_streams), thread_name_prefix="generate")
        app.post("/generate", response_class=StreamingResponse)(self.generate)

    def health(self) -> dict[str, Any]:
        """What /health says of /generate."""
        return {
            "vocabulary": self.spec["vocabulary"], "max_new_tokens": self.max_new, "max_prompt_tokens": self.max_prompt,
            "context_length": self.spec.get("context_length"), "tokenizer": self.tokenizer is not None,
            "streams": self.streams, "max_streams": self.max_streams,
        }  # fmt: skip

    async def _body(self, request: Request) -> dict[str, Any]:
        kind = request.headers.get("content-type", "application/json").split(";")[0].strip().lower()
        if kind != "application/json":
            raise HTTPException(415, f"Content-Type {kind[:60]!r} is not served: send application/json")
        declared = request.headers.get("content-length", "")
        over = HTTPException(413, f"the body is over {self.max_body:,} bytes")
        if declared.isdigit() and int(declared) > self.max_body:
            raise over
        chunks, size = [], 0
        async for chunk in request.stream():  # never more than the limit, even of a body sent without a length
            size += len(chunk)
            if size > self.max_body:
                raise over
            chunks.append(chunk)
        try:
            body = msgspec.json.decode(b"".join(chunks))  # strict JSON: no NaN or Infinity
        except (msgspec.DecodeError, RecursionError) as exc:
            raise HTTPException(400, f"the body is not JSON: {str(exc)[:200]}") from None
        if not isinstance(body, dict):
            raise HTTPException(422, 'the body must be a JSON object {"prompt_ids": [...], "max_new_tokens": N}')
        unknown = [str(k)[:40] for k in body if k not in KEYS]
        if unknown:
            raise HTTPException(422, f"unknown keys {unknown[:5]}: /generate takes {list(KEYS)}")
        return body

    def _prompt(self, body: dict[str, Any]) -> list[int]:
        if ("prompt" in body) == ("prompt_ids" in body):
            raise HTTPException(422, 'send either "prompt_ids" (a list of token ids) or "prompt" (text), one of them')
        if "prompt" in body:
            text = body["prompt"]
            if self.tokenizer is None:
                raise HTTPException(422, 'this server has no tokenizer.json: send the prompt as "prompt_ids"')
            if not isinstance(text, str) or not text or len(text) > self.max_chars:
                raise HTTPException(422, f'"prompt" must be a text of 1 to {self.max_chars:,} characters')
            ids = list(self.tokenizer.encode(text).ids)
        else:
            ids = body["prompt_ids"]
            vocabulary = int(self.spec["vocabulary"])
            if isinstance(ids, list) and len(ids) > self.max_prompt:  # said before 200,000 ids are looked at
                raise self._too_long(len(ids))
            if not isinstance(ids, list) or not all(type(i) is int and 0 <= i < vocabulary for i in ids):
                raise HTTPException(422, f'"prompt_ids" must be a list of token ids from 0 to {vocabulary - 1}')
        if not 1 <= len(ids) <= self.max_prompt:
            raise self._too_long(len(ids))
        return ids

    def _too_long(self, count: int) -> HTTPException:
        return HTTPException(422, f"the prompt is {count:,} tokens; this server takes 1 to {self.max_prompt:,}")

    def _new(self, body: dict[str, Any], prompt: int) -> int:
        new = body.get("max_new_tokens", DEFAULT_NEW)
        if type(new) is not int or not 1 <= new <= self.max_new:
            raise HTTPException(422, f'"max_new_tokens" must be a whole number from 1 to {self.max_new:,}')
        context = self.spec.get("context_length")
        if context is not None and prompt + new > int(context):
            said = f"the prompt ({prompt:,} tokens) and max_new_tokens ({new:,}) pass the model's context"
            raise HTTPException(422, f"{said} of {int(context):,} positions: ask for fewer")
        return new

    async def generate(self, request: Request) -> StreamingResponse:
        """Greedy tokens from the prompt, streamed as NDJSON as they are made (see the module's docstring)."""
        body = await self._body(request)
        # a text is tokenised in the generations' pool: 65,536 characters would hold the event loop for milliseconds
        loop = asyncio.get_running_loop()
        prompt = await loop.run_in_executor(self.pool, self._prompt, body) if "prompt" in body else self._prompt(body)
        new = self._new(body, len(prompt))
        stop = body.get("stop_at_eos", True)
        if not isinstance(stop, bool):
            raise HTTPException(422, '"stop_at_eos" must be true or false')
        if self.streams >= self.max_streams:
            raise HTTPException(
                503, f"{self.max_streams} generations are running: try again shortly", headers={"Retry-After": "1"}
            )
        # counted as it is accepted (no await between the check and the count), not when its first line is sent: the
        # requests read in between were all admitted past the cap
        self.streams += 1
        return _Admitted(self._stream(prompt, new, stop), self._release)

    def _release(self) -> None:
        self.streams -= 1

    async def _stream(self, prompt: list[int], new: int, stop: bool) -> AsyncIterator[bytes]:
        loop = asyncio.get_running_loop()
        eos = set(self.spec.get("eos_token_ids", [])) if stop else set()
        made: list[int] = []
        stopped = "length"
        generation = Generation(self.state["session"], self.spec, prompt, new)
        words = self._words(prompt) if self.tokenizer is not None else None
        for _step in range(new):
            try:
                token = await loop.run_in_executor(self.pool, generation.step)
            except Exception as exc:  # ONNX Runtime's own words: the model failed midway
                yield msgspec.json.encode({"error": f"the model failed: {str(exc)[:500]}"}) + b"\n"
                return
            line: dict[str, Any] = {"token": token}
            if words is not None:
                line["text"] = words(token)
            made.append(token)
            yield msgspec.json.encode(line) + b"\n"
            if token in eos:
                stopped = "eos"
                break
        done = {"done": True, "tokens": len(made), "prompt_tokens": len(prompt), "stopped": stopped}
        yield msgspec.json.encode(done) + b"\n"

    def _words(self, prompt: list[int]) -> Any:
        """A function of each new token to the text it adds: decoded with the token before it (a word's leading space
        is kept); empty while it holds part of a character (Qwen's byte-level tokens split a Chinese character in
        two or three), whose last token then says the whole character. Linear: each call decodes a few tokens."""
        tokenizer: Any = self.tokenizer
        tokens = prompt[-_CONTEXT:]
        done = len(tokens)

        def text(token: int) -> str:
            nonlocal done
            tokens.append(token)
            start = max(0, done - 1)
            said = str(tokenizer.decode(tokens[start:done])) if done > start else ""
            whole = str(tokenizer.decode(tokens[start:]))
            if whole.endswith("\ufffd") and len(tokens) - done < _CONTEXT:  # waits for the rest of its character
                return ""
            done = len(tokens)
            return whole[len(said) :] if whole.startswith(said) else whole

        return text
