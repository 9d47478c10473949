"""A tuning run against the worker's time limit: the longest budget a job can search in, and what the search writes
down as it goes (after each stage, into its job's folder), so that a job ended early keeps what it measured."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from core.tune.records import Candidate

__all__ = ["BUDGET_SHARE", "PARTIAL", "TunePartial", "longest_budget", "read_partial", "write_partial"]

# of the worker's time limit, the most a search may take: the rest is the worker's start, the model's first session,
# and the answer after the final round (a budget of the whole limit was killed at the limit and lost everything)
BUDGET_SHARE = 0.8
PARTIAL = "partial.msgpack"  # in the job's folder (TuneRequest.out_dir); MessagePack, typed when read back


def longest_budget(worker_timeout_s: float) -> int:
    """The longest budget in seconds a tuning job searches in before the worker's limit stops it (at least 1)."""
    return max(1, int(worker_timeout_s * BUDGET_SHARE))


@dataclass(kw_only=True)
class TunePartial:
    """What a search had measured when it last wrote it down: every candidate so far, each timed beside the best
    before it in its stage, and the best so far (not yet timed beside the defaults in a final round)."""

    budget_s: float
    seconds: float  # into the search when written
    stages_done: list[str] = field(default_factory=list)  # keys of core.tune.search.STAGES, in order
    best: Candidate
    candidates: list[Candidate] = field(default_factory=list)


def _plain(value: object) -> object:
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    raise NotImplementedError(type(value).__name__)


def write_partial(folder: str, partial: TunePartial) -> None:
    """``partial`` into ``folder`` (written aside, then renamed: a job stopped while writing leaves the last one)."""
    if not folder:
        return
    target = Path(folder) / PARTIAL
    target.parent.mkdir(parents=True, exist_ok=True)
    aside = target.with_suffix(".part")
    aside.write_bytes(msgspec.msgpack.encode(partial, enc_hook=_plain))
    aside.replace(target)


def read_partial(folder: str) -> TunePartial | None:
    """What a search in ``folder`` last wrote down, or None (nothing written, or not a partial result: the file is
    the worker's, so it is decoded into its type, never trusted)."""
    path = Path(folder) / PARTIAL
    if not folder or not path.is_file():
        return None
    try:
        return msgspec.msgpack.decode(path.read_bytes(), type=TunePartial)
    except (msgspec.DecodeError, msgspec.ValidationError, OSError):
        return None
