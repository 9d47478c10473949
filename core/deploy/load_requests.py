"""What each request of a load test sends and how its answer is read: the body (JSON, or .npy/.npz when JSON would
be large: the generated server refuses JSON past 16 MiB), the timeout a request gets (sized by what one call of the
model takes), a failure in words (a timeout says the timeout and the call's time), and an answer's outputs."""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import dataclass
from typing import Any

import numpy as np

from core.deploy.server import MAX_BODY, MAX_JSON
from core.errors import LoadtestError
from core.i18n import N_, _, number
from core.notes import Note, note

__all__ = [
    "AUTO_JSON_BYTES",
    "BODIES",
    "REQUEST_TIMEOUT_S",
    "TIMED_OUT",
    "TIMED_OUT_BEHIND",
    "TIMEOUT_CALLS",
    "RequestBody",
    "answer",
    "check_body",
    "failure",
    "max_diff",
    "request_body",
    "timed_out",
    "timeout_s",
]

REQUEST_TIMEOUT_S = 30.0  # a request unanswered this long failed (longer for a slow model: TIMEOUT_CALLS)
TIMEOUT_CALLS = 4  # ... or this many calls' time for each request that can be ahead of it, if that is longer
AUTO_JSON_BYTES = 1 << 20  # a JSON body past this is sent as .npy/.npz instead when the body is "auto"
BODIES = ("auto", "json", "npy", "npz")
# why a request failed when the server said nothing: it was not answered in time
TIMED_OUT = N_("TimeoutError: no answer within {timeout} s, while one call of the model takes {call} ms in-process")
TIMED_OUT_BEHIND = N_(
    "TimeoutError: no answer within {timeout} s, while one call of the model takes {call} ms in-process and at "
    "concurrency {concurrency} a request can wait for {others} others"
)


def check_body(kind: str) -> None:
    """Refuse a request body that is none of BODIES."""
    if kind not in BODIES:
        said = _("The request body is one of {bodies}, not '{body}'.")
        raise LoadtestError(said.format(bodies=", ".join(BODIES), body=kind[:40]))


@dataclass(frozen=True, kw_only=True)
class RequestBody:
    """What every request of the load sends, and what one call of the model takes in-process (sizes the timeout)."""

    content: bytes
    kind: str  # its content type
    binary: bool  # .npy/.npz: the answers are asked for as .npz too
    call_ms: float


def timeout_s(call_ms: float, concurrency: int) -> float:
    """How long a request may go unanswered: REQUEST_TIMEOUT_S, or TIMEOUT_CALLS calls of the model for each request
    that can be ahead of it, if that is longer (16 concurrent requests of a model of a second a call timed out)."""
    return max(REQUEST_TIMEOUT_S, TIMEOUT_CALLS * concurrency * call_ms / 1000)


def timed_out(timeout: float, call_ms: float, concurrency: int) -> Note:
    """Why a request the server never answered failed: the timeout, and what one call takes."""
    if concurrency == 1:
        return note(TIMED_OUT, timeout=timeout, call=call_ms)
    return note(TIMED_OUT_BEHIND, timeout=timeout, call=call_ms, concurrency=concurrency, others=concurrency - 1)


def failure(exc: BaseException) -> str:
    """A client error in words: its type and message (its type alone said nothing: "TimeoutError: ")."""
    said = str(exc).strip() or repr(exc)
    return f"{type(exc).__name__}: {said}"[:200]


def request_body(feeds: dict[str, np.ndarray], kind: str) -> tuple[bytes, str, str]:
    """The request body, its content type and what it is ("json", "npy" or "npz"). "auto" is JSON unless its text
    would pass AUTO_JSON_BYTES (a 1×1024×1024 float input is ~44 MB of it, refused by the generated server past
    16 MiB) or an input has an empty dim before its last (a language model's past at prefill: a JSON list cannot
    carry its shape), then .npy for one input and .npz for several."""
    count = sum(int(v.size) for v in feeds.values())
    text = b""
    empty = any(0 in v.shape[:-1] for v in feeds.values())  # as JSON, [1, 2, 0, 16] is [[[], []]]: its shape lost
    if kind == "json" or (
        kind == "auto" and not empty and count <= AUTO_JSON_BYTES // 2
    ):  # a number is 2 characters or more
        text = json.dumps({"inputs": {k: v.tolist() for k, v in feeds.items()}}).encode()
    if kind == "json" or (kind == "auto" and text and len(text) <= AUTO_JSON_BYTES):
        if len(text) > MAX_JSON:
            raise LoadtestError(
                _(
                    "The inputs as JSON take {size} MB, more than the generated server takes ({limit} MB): send them "
                    "as .npy or .npz (--body auto, npy or npz; the request body on the Deploy page)."
                ).format(size=number(len(text) / 2**20, 1), limit=number(MAX_JSON >> 20))
            )
        return text, "application/json", "json"
    if kind == "npy" and len(feeds) != 1:
        raise LoadtestError(
            _(".npy bodies are for a model with one input; this one has {count}: send .npz.").format(count=len(feeds))
        )
    buffer = io.BytesIO()
    if kind == "npy" or (kind == "auto" and len(feeds) == 1):
        np.save(buffer, next(iter(feeds.values())), allow_pickle=False)
        body, content, said = buffer.getvalue(), "application/x-npy", "npy"
    else:  # entry by entry, as the server writes its answers: np.savez(**feeds) fails on an input named "file"
        with zipfile.ZipFile(buffer, "w") as archive:
            for name, value in feeds.items():
                with archive.open(f"{name}.npy", "w") as entry:
                    np.lib.format.write_array(entry, np.asarray(value), allow_pickle=False)
        body, content, said = buffer.getvalue(), "application/x-npz", "npz"
    if len(body) > MAX_BODY:
        raise LoadtestError(
            _("The inputs take {size} MB, more than the generated server reads of a request ({limit} MB).").format(
                size=number(len(body) / 2**20, 1), limit=number(MAX_BODY >> 20)
            )
        )
    return body, content, said


def answer(content: bytes, npz: bool) -> dict[str, Any]:
    """A response's outputs by name: from its .npz, or its JSON's "outputs"."""
    if npz:
        with np.load(io.BytesIO(content), allow_pickle=False) as arrays:
            return {name: arrays[name] for name in arrays.files}
    found = json.loads(content).get("outputs", {})
    return found if isinstance(found, dict) else {}


def max_diff(sampled: list[bytes], reference: dict[str, np.ndarray], npz: bool = False) -> float | None:
    worst: float | None = None
    for content in sampled:
        outputs = answer(content, npz)
        for name, expected in reference.items():
            got = np.asarray(outputs.get(name), dtype=np.float64)
            want = np.asarray(expected, dtype=np.float64)
            diff = float(np.max(np.abs(got - want))) if got.shape == want.shape and want.size else float("inf")
            worst = diff if worst is None else max(worst, diff)
    return worst
