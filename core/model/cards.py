"""The built-in samples' model cards, written once (`make sample-cards`) and read without a worker.

A sample's card is what ``zoo.describe_sample`` computes in a worker: it imports torch (3-4 CPU-seconds), builds
the seeded model and runs it once, so the first page of every fresh server and every `sample:NAME` command would
wait for it. The cards are the same every time for one version of the sample zoo and of torch, so they are
committed beside this module with the fingerprint of what made them; when the fingerprint no longer matches (a
sample changed, torch was upgraded), ``known`` answers None and callers compute the card in a worker as before,
and `tests/unit/test_zoo_cards.py` fails until `make sample-cards` writes them again."""

from __future__ import annotations

import hashlib
import json
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import msgspec

from core.model.records import ModelRecord

__all__ = ["CARDS", "fingerprint", "known", "write"]

CARDS = Path(__file__).with_name("sample_cards.json")
_SOURCES = ("zoo.py", "records.py")  # what a card is computed by and made of


def fingerprint() -> str:
    """The zoo's and the record's source, and torch's version: what the cards depend on."""
    digest = hashlib.sha256()
    for name in _SOURCES:
        digest.update(Path(__file__).with_name(name).read_bytes())
    try:
        digest.update(version("torch").encode())
    except PackageNotFoundError:
        digest.update(b"no torch")
    return digest.hexdigest()[:16]


@cache
def _cards() -> dict[str, ModelRecord]:
    try:
        stored = json.loads(CARDS.read_text())
    except (OSError, ValueError):
        return {}
    if stored.get("fingerprint") != fingerprint():
        return {}
    return {name: msgspec.convert(card, ModelRecord) for name, card in stored.get("cards", {}).items()}


def known(name: str) -> ModelRecord | None:
    """The committed card of sample ``name`` (a copy), or None when there is none for this zoo and torch."""
    card = _cards().get(name)
    return msgspec.convert(msgspec.to_builtins(card), ModelRecord) if card is not None else None


def write() -> Path:
    """Compute every sample's card (in this process: it imports torch) and write them with their fingerprint."""
    from core.model.zoo import SAMPLES, describe_sample

    cards = {name: msgspec.to_builtins(describe_sample(name)) for name in SAMPLES}
    CARDS.write_text(json.dumps({"fingerprint": fingerprint(), "cards": cards}, indent=1, ensure_ascii=False) + "\n")
    _cards.cache_clear()
    return CARDS


if __name__ == "__main__":
    print(f"wrote {write()}")
