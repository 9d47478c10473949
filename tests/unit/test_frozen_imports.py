"""The server's heap: what was imported is taken out of the garbage collector's walks, so that Streamlit's full
collection after every page run walks only what the runs made."""

from __future__ import annotations

import gc
import sys
import types

import pytest

from ui import session


def _imported(name: str) -> types.ModuleType:
    sys.modules[name] = module = types.ModuleType(name)
    module.table = {"made": [[] for _ in range(100)]}  # containers: what the collector walks
    return module


def test_imported_modules_are_frozen_once_and_again_only_after_new_imports(monkeypatch: pytest.MonkeyPatch) -> None:
    freezes: list[int] = []
    freeze = gc.freeze
    monkeypatch.setattr(gc, "freeze", lambda: freezes.append(len(sys.modules)) or freeze())
    try:
        _imported("_a_page_opened_first")
        session.freeze_imports()
        assert len(freezes) == 1
        frozen = gc.get_freeze_count()  # a frozen object is still freed when nothing refers to it: no ==
        assert frozen > 10_000  # the app's and its libraries' objects
        assert len(gc.get_objects(generation=2)) < frozen / 5  # what a collection after a run still walks

        session.freeze_imports()  # nothing new imported: nothing collected or frozen
        assert len(freezes) == 1

        made = _imported("_a_page_opened_next").table["made"]
        session.freeze_imports()
        assert len(freezes) == 2
        walked = {id(thing) for thing in gc.get_objects()}  # every generation the collector walks
        assert gc.is_tracked(made) and id(made) not in walked and id(made[0]) not in walked
    finally:
        sys.modules.pop("_a_page_opened_first", None)
        sys.modules.pop("_a_page_opened_next", None)
