"""The samples' committed model cards are what the samples build, so the first page and `sample:NAME` commands
need no worker (core/model/cards.py)."""

from __future__ import annotations

import json

import msgspec

from core.model import cards
from core.model.zoo import SAMPLES, describe_sample


def test_the_committed_cards_are_what_every_sample_builds_with_this_zoo_and_torch() -> None:
    stored = json.loads(cards.CARDS.read_text())
    assert stored["fingerprint"] == cards.fingerprint(), "a sample or torch changed: run `make sample-cards`"
    assert set(stored["cards"]) == set(SAMPLES)
    for name in SAMPLES:
        card = cards.known(name)
        assert card is not None and msgspec.to_builtins(card) == msgspec.to_builtins(describe_sample(name)), name


def test_a_card_of_another_zoo_is_not_used(monkeypatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    stale = tmp_path / "sample_cards.json"
    stale.write_text(json.dumps({**json.loads(cards.CARDS.read_text()), "fingerprint": "0" * 16}))
    monkeypatch.setattr(cards, "CARDS", stale)
    cards._cards.cache_clear()
    try:
        assert cards.known("tinycnn") is None  # callers compute it in a worker, as before
    finally:
        monkeypatch.undo()
        cards._cards.cache_clear()
    assert cards.known("tinycnn") is not None
