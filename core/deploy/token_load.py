"""The load test of a language model's server, in tokens: at each concurrency, that many workers (asyncio tasks on one
aiohttp client) open ``POST /generate`` streams back to back for the duration, each the same prompt (ids drawn with
the seed inside the vocabulary) and the same number of new tokens (``stop_at_eos`` false, so every stream is as
long), after a warm-up stream of two tokens each. Each token's arrival is timed on the client as its NDJSON line is
read: the time to the first token (from the request), the time between tokens, and each stream's tokens per second
from its first token to its last. Every stream's tokens are compared with the same greedy loop run in-process on the
same session options (the shipped generation.py's, so what differs is the server, not the loop).
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from core.deploy.records import LoadtestRequest, TokenLoadResult
from core.errors import LoadtestError
from core.i18n import N_, _
from core.notes import Note, note, warning

__all__ = [
    "MISMATCHED", "STREAM_ERRORS", "TOKENS_HEADLINE", "Streamed", "greedy_reference", "token_load", "token_result",
    "tokens_headline", "mismatch_note",
]  # fmt: skip

STREAM_READ_S = 60.0  # a stream silent this long between two lines failed
STOP_RUN = 20  # failed streams in a row that stop the load
MISMATCHED = N_(
    "{count} of {checked} streams at concurrency {concurrency} gave other tokens than the same greedy loop "
    "in-process: the server does not run the model as it runs here."
)
STREAM_ERRORS = N_("{count} of {total} streams at concurrency {concurrency} failed, e.g. {example}")
TOKENS_HEADLINE = N_(
    "Streamed over HTTP: first token after {ttft} ms (p50) and a token every {itl} ms at concurrency {concurrency}; "
    "at most {total} tokens/s in all, at concurrency {best}."
)


@dataclass(kw_only=True)
class Streams:
    """What one concurrency's load saw."""

    ttft_ms: list[float] = field(default_factory=list)
    itl_ms: list[float] = field(default_factory=list)
    stream_tok_s: list[float] = field(default_factory=list)
    tokens: int = 0
    errors: int = 0
    in_a_row: int = 0
    examples: list[str] = field(default_factory=list)
    made: list[list[int]] = field(default_factory=list)  # each finished stream's tokens
    elapsed_s: float = 0.0


def greedy_reference(session: Any, spec: dict[str, Any], prompt: list[int], new: int) -> list[int]:
    """The tokens the server's own greedy loop (core/deploy/served_generation.py) gives in-process."""
    from core.deploy.served_generation import Generation

    generation = Generation(session, spec, prompt, new)
    return [generation.step() for _step in range(new)]


async def token_load(url: str, prompt: list[int], new: int, concurrency: int, duration_s: float) -> Streams:
    """``concurrency`` workers streaming /generate back to back for ``duration_s`` (see the module's docstring)."""
    import aiohttp

    seen = Streams()
    timeout = aiohttp.ClientTimeout(total=None, sock_read=STREAM_READ_S)
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout, trust_env=False) as client:

        async def stream(tokens: int) -> tuple[list[float], list[int], str]:
            """The arrival of each token (s after the request), the tokens, and why it failed ("" when it did not)."""
            body = {"prompt_ids": prompt, "max_new_tokens": tokens, "stop_at_eos": False}
            start = time.perf_counter()
            times: list[float] = []
            made: list[int] = []
            try:
                async with client.post(url, json=body) as response:
                    if response.status != 200:
                        said = (await response.content.read(160)).decode("utf-8", "replace")
                        return times, made, f"HTTP {response.status}: {said}"
                    async for line in response.content:
                        item = json.loads(line)
                        if "token" in item:
                            times.append(time.perf_counter() - start)
                            made.append(int(item["token"]))
                        elif "error" in item:
                            return times, made, str(item["error"])[:200]
            except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
                return times, made, f"{type(exc).__name__}: {exc}"[:200]
            return times, made, "" if len(made) == tokens else f"the stream ended after {len(made)} of {tokens} tokens"

        await asyncio.gather(*(stream(2) for _warm in range(concurrency)))
        began = time.perf_counter()
        deadline = began + duration_s

        async def worker() -> None:
            while time.perf_counter() < deadline and seen.in_a_row < STOP_RUN:
                times, made, error = await stream(new)
                seen.tokens += len(made)
                if error:
                    seen.errors += 1
                    seen.in_a_row += 1
                    if len(seen.examples) < 3:
                        seen.examples.append(error)
                    continue
                seen.in_a_row = 0
                seen.made.append(made)
                seen.ttft_ms.append(times[0] * 1e3)
                seen.itl_ms.extend(float(d) * 1e3 for d in np.diff(times))
                if len(times) > 1 and times[-1] > times[0]:
                    seen.stream_tok_s.append((len(times) - 1) / (times[-1] - times[0]))

        await asyncio.gather(*(worker() for _w in range(concurrency)))
        seen.elapsed_s = time.perf_counter() - began
    return seen


def _percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


def token_result(concurrency: int, seen: Streams, reference: list[int]) -> TokenLoadResult:
    """``seen`` as a result, each finished stream's tokens checked against ``reference``."""
    return TokenLoadResult(
        concurrency=concurrency, streams=len(seen.made), tokens=seen.tokens, errors=seen.errors,
        ttft_p50_ms=_percentile(seen.ttft_ms, 50), ttft_p95_ms=_percentile(seen.ttft_ms, 95),
        itl_p50_ms=_percentile(seen.itl_ms, 50), itl_p95_ms=_percentile(seen.itl_ms, 95),
        stream_tok_s=float(np.median(seen.stream_tok_s)) if seen.stream_tok_s else float("nan"),
        total_tok_s=seen.tokens / seen.elapsed_s if seen.elapsed_s > 0 else 0.0,
        checked=len(seen.made), mismatched=sum(made != reference for made in seen.made),
        error_examples=list(seen.examples),
    )  # fmt: skip


def mismatch_note(result: TokenLoadResult) -> Note | None:
    """The warning that streams gave other tokens than in-process, or None."""
    if not result.mismatched:
        return None
    return warning(MISMATCHED, count=result.mismatched, checked=result.checked, concurrency=result.concurrency)


def tokens_headline(results: list[TokenLoadResult]) -> Note | None:
    """The served time to first token and inter-token latency at the lowest concurrency that finished a stream, and
    the best total tokens per second; None when no stream finished."""
    finished = [r for r in results if r.streams]
    if not finished:
        return None
    first = min(finished, key=lambda r: r.concurrency)
    best = max(finished, key=lambda r: r.total_tok_s)
    return note(
        TOKENS_HEADLINE, ttft=first.ttft_p50_ms, itl=first.itl_p50_ms, concurrency=first.concurrency,
        total=round(best.total_tok_s), best=best.concurrency,
    )  # fmt: skip


@dataclass(kw_only=True)
class Streamed:
    """A language model's load in tokens: the prompt every stream sends, the tokens the same loop gives in-process,
    and the results so far."""

    prompt: list[int]
    new: int
    expected: list[int]
    results: list[TokenLoadResult] = field(default_factory=list)

    @classmethod
    def of(cls, request: LoadtestRequest, session: Any) -> Streamed | None:
        """The load of ``request``'s model in tokens, its expected tokens generated on ``session``; None for a model
        with no cache that grows token by token."""
        from core.deploy.served_spec import MAX_NEW_TOKENS, MAX_PROMPT_TOKENS, generate_spec

        path = Path(request.model.path)
        spec, _tokenizer = generate_spec(path, path.parent)
        if spec is None:
            return None
        if not 1 <= request.new_tokens <= MAX_NEW_TOKENS or not 1 <= request.prompt_tokens <= MAX_PROMPT_TOKENS:
            raise LoadtestError(
                _("A stream's new tokens must be 1 to {new} and its prompt 1 to {prompt} tokens.").format(
                    new=MAX_NEW_TOKENS, prompt=MAX_PROMPT_TOKENS
                )
            )
        rng = np.random.default_rng(request.seed)
        prompt = [int(i) for i in rng.integers(0, spec["vocabulary"], request.prompt_tokens)]
        expected = greedy_reference(session, spec, prompt, request.new_tokens)
        return cls(prompt=prompt, new=request.new_tokens, expected=expected)

    def load(self, base: str, served: dict[str, Any], concurrency: int, duration_s: float, notes: list[Note]) -> bool:
        """Load ``base``'s /generate at ``concurrency``; False when a run of failed streams stopped it."""
        from core.deploy.loadtest import run_client

        new = min(self.new, int(served.get("max_new_tokens", self.new)))
        seen = run_client(token_load(f"{base}/generate", self.prompt, new, concurrency, duration_s))
        result = token_result(concurrency, seen, self.expected[:new])
        self.results.append(result)
        if seen.errors:
            total = seen.errors + len(seen.made)
            notes.append(
                warning(
                    STREAM_ERRORS, count=seen.errors, total=total, concurrency=concurrency, example=seen.examples[0]
                )
            )
        if found := mismatch_note(result):
            notes.append(found)
        return seen.in_a_row < STOP_RUN

    def report(self) -> dict[str, Any]:
        """The report's fields for the load in tokens."""
        return {"tokens": self.results, "new_tokens": self.new, "prompt_tokens": len(self.prompt)}
