"""The model library: models kept by content, opened only with their id and a key; each keeper's own record."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

from core.model.intake import describe_files
from core.model.library import ModelLibrary
from tests import builders


def test_a_kept_model_opens_with_its_key_only_and_outlives_its_workspace(tmp_path: Path) -> None:
    library = ModelLibrary(tmp_path / "models", max_age_s=3600)
    upload = builders.write(builders.relu_model(), tmp_path / "session" / "upload-1" / "relu.onnx")
    record = describe_files([str(upload)])
    key = library.keep(record)
    assert key
    upload.unlink()  # the session's workspace is gone (a reload is a new session)
    kept = library.open(record.id, key)
    assert kept is not None and kept.record.id == record.id and Path(kept.record.path).is_file()
    assert library.open(record.id, "guessed") is None and library.open(record.id, "") is None
    assert library.open("../../etc", key) is None  # an id from an address is never a path


def test_two_people_share_the_bytes_not_the_name(tmp_path: Path) -> None:
    library = ModelLibrary(tmp_path / "models", max_age_s=3600)
    model = builders.write(builders.relu_model(), tmp_path / "a" / "relu.onnx")
    record = describe_files([str(model)])
    mine = library.keep(dataclasses.replace(record, name="mine"))
    theirs = library.keep(dataclasses.replace(record, name="theirs"))
    assert mine and theirs and mine != theirs
    opened_mine, opened_theirs = library.open(record.id, mine), library.open(record.id, theirs)
    assert opened_mine is not None and opened_theirs is not None
    assert (opened_mine.record.name, opened_theirs.record.name) == ("mine", "theirs")


def test_models_unused_past_the_retention_are_removed(tmp_path: Path) -> None:
    library = ModelLibrary(tmp_path / "models", max_age_s=60)
    record = describe_files([str(builders.write(builders.relu_model(), tmp_path / "a" / "relu.onnx"))])
    key = library.keep(record)
    assert key and library.sweep(now=time.time() + 30) == []
    assert len(library.sweep(now=time.time() + 120)) == 1 and library.open(record.id, key) is None
