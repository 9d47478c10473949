"""The model library: models kept by content, opened only with their id and a key; each keeper's own record."""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path

import numpy as np
import pytest
from onnx import numpy_helper

from core.identity import ANONYMOUS, Identity
from core.model import ModelRecord
from core.model.intake import IntakeRequest, describe_files
from core.model.library import LibraryFull, ModelLibrary, NotYourModel, owns
from tests import builders


def test_a_kept_model_opens_with_its_key_only_and_outlives_its_workspace(tmp_path: Path) -> None:
    library = ModelLibrary(tmp_path / "models", max_age_s=3600)
    upload = builders.write(builders.relu_model(), tmp_path / "session" / "upload-1" / "relu.onnx")
    record = describe_files(IntakeRequest(paths=[str(upload)]))
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
    record = describe_files(IntakeRequest(paths=[str(model)]))
    mine = library.keep(dataclasses.replace(record, name="mine"))
    theirs = library.keep(dataclasses.replace(record, name="theirs"))
    assert mine and theirs and mine != theirs
    opened_mine, opened_theirs = library.open(record.id, mine), library.open(record.id, theirs)
    assert opened_mine is not None and opened_theirs is not None
    assert (opened_mine.record.name, opened_theirs.record.name) == ("mine", "theirs")


def test_models_unused_past_the_retention_are_removed(tmp_path: Path) -> None:
    library = ModelLibrary(tmp_path / "models", max_age_s=60)
    record = describe_files(
        IntakeRequest(paths=[str(builders.write(builders.relu_model(), tmp_path / "a" / "relu.onnx"))])
    )
    key = library.keep(record)
    assert key and library.sweep(now=time.time() + 30) == []
    assert len(library.sweep(now=time.time() + 120)) == 1 and library.open(record.id, key) is None


ALICE = Identity("alice@acme.test", "Alice", "acme.test")
BOB = Identity("bob@acme.test", "Bob", "acme.test")
EVE = Identity("eve@other.test", "Eve", "other.test")


def _relu(tmp_path: Path, name: str = "relu.onnx") -> ModelRecord:
    return describe_files(IntakeRequest(paths=[str(builders.write(builders.relu_model(), tmp_path / "upload" / name))]))


def test_a_signed_in_owners_model_opens_for_their_team_only_once_shared(tmp_path: Path) -> None:
    library = ModelLibrary(tmp_path / "models", max_age_s=3600)
    record = _relu(tmp_path)
    key = library.keep(record, who=ALICE)
    assert key
    assert library.open(record.id, key, ALICE) is not None
    assert library.open(record.id, key, BOB) is None  # the key alone is not enough: not shared yet
    library.update(record.id, key, ALICE, shared=True)
    assert library.open(record.id, key, BOB) is not None
    assert library.open(record.id, key, EVE) is None and library.open(record.id, key, ANONYMOUS) is None
    mine, team = library.entries(BOB)
    assert mine == [] and [e.kept.key for e in team] == [key]
    assert library.entries(EVE) == ([], [])


def test_only_the_owner_renames_tags_shares_or_deletes(tmp_path: Path) -> None:
    library = ModelLibrary(tmp_path / "models", max_age_s=3600)
    record = _relu(tmp_path)
    key = library.keep(record, who=ALICE)
    assert key
    kept = library.update(record.id, key, ALICE, title="  detector   v2 ", tags=["prod", " prod ", "", "int8"])
    assert (kept.label, kept.tags) == ("detector v2", ["int8", "prod"])
    for action in (
        lambda: library.update(record.id, key, BOB, title="mine now"),
        lambda: library.delete(record.id, key, BOB),
    ):
        with pytest.raises(NotYourModel, match="Only whoever kept this model"):
            action()
    (mine, _) = library.entries(ALICE)
    assert [e.kept.label for e in mine] == ["detector v2"]
    library.delete(record.id, key, ALICE)
    assert library.open(record.id, key, ALICE) is None and not (tmp_path / "models" / record.id).exists()


def test_the_files_stay_while_another_keeping_holds_them(tmp_path: Path) -> None:
    library = ModelLibrary(tmp_path / "models", max_age_s=3600)
    record = _relu(tmp_path)
    alices, bobs = library.keep(record, who=ALICE), library.keep(record, who=BOB)
    assert alices and bobs
    library.delete(record.id, alices, ALICE)
    opened = library.open(record.id, bobs, BOB)
    assert opened is not None and Path(opened.record.path).is_file()


def _two_models(tmp_path: Path) -> tuple[ModelRecord, ModelRecord]:
    other = describe_files(
        IntakeRequest(paths=[str(builders.write(builders.chain_model(8), tmp_path / "other" / "b.onnx"))])
    )
    return _relu(tmp_path), other


def _used_long_ago(library: ModelLibrary, record: ModelRecord, key: str) -> None:
    link = library._link(library.root / record.id, key)
    os.utime(link, (time.time() - 60, time.time() - 60))


def test_a_signed_in_library_has_a_quota_of_its_own(tmp_path: Path) -> None:
    record, other = _two_models(tmp_path)
    library = ModelLibrary(tmp_path / "models", max_age_s=3600, quota_bytes=record.size_bytes + other.size_bytes - 1)
    assert library.keep(record, who=ALICE)
    with pytest.raises(LibraryFull, match="Your library holds"):
        library.keep(other, who=ALICE)
    assert library.keep(other, who=BOB)  # each person has their own quota
    assert library.keep(other)  # the anonymous keepings have theirs
    assert library.open(record.id, library.entries(ALICE)[0][0].kept.key, ALICE) is not None  # Alice's untouched


def test_on_a_laptop_the_least_recently_used_anonymous_keeping_makes_room(tmp_path: Path) -> None:
    record, other = _two_models(tmp_path)
    library = ModelLibrary(tmp_path / "models", max_age_s=3600, quota_bytes=record.size_bytes + other.size_bytes - 1)
    first = library.keep(record, session=None)  # None: every anonymous keeping is the one user's
    assert first
    _used_long_ago(library, record, first)
    second = library.keep(other, session=None)
    assert second and library.open(record.id, first) is None and library.open(other.id, second) is not None


def test_an_anonymous_session_makes_room_only_among_what_it_kept_itself(tmp_path: Path) -> None:
    record, other = _two_models(tmp_path)
    library = ModelLibrary(tmp_path / "models", max_age_s=3600, quota_bytes=record.size_bytes + other.size_bytes - 1)
    first = library.keep(record, session="my tab's token")
    assert first
    _used_long_ago(library, record, first)
    second = library.keep(other, session="my tab's token")  # its own older keeping makes room
    assert second and library.open(record.id, first) is None and library.open(other.id, second) is not None
    assert library.usage(ANONYMOUS, {second}) == library.usage(ANONYMOUS) > 0


def test_a_full_anonymous_library_refuses_a_new_keeping_and_drops_nobody_elses(tmp_path: Path) -> None:
    record, other = _two_models(tmp_path)
    library = ModelLibrary(tmp_path / "models", max_age_s=3600, quota_bytes=record.size_bytes + other.size_bytes - 1)
    theirs = library.keep(record, session="their tab's token")  # another visitor's session
    assert theirs
    _used_long_ago(library, record, theirs)  # however long unused (within the retention)
    for session in ("", "my tab's token", theirs):  # no token, its own, or their link's key: none is theirs
        with pytest.raises(LibraryFull, match="never anyone else's"):
            library.keep(other, session=session)
    assert library.open(record.id, theirs) is not None  # still there, its permalink still opens
    assert not (tmp_path / "models" / other.id).exists()  # nothing of the refused one left behind


def test_a_session_drops_none_of_its_own_when_that_would_not_make_room(tmp_path: Path) -> None:
    record, other = _two_models(tmp_path)
    library = ModelLibrary(tmp_path / "models", max_age_s=3600, quota_bytes=other.size_bytes + record.size_bytes)
    theirs, mine = library.keep(record, session="their tab's token"), library.keep(other, session="my tab's token")
    assert theirs and mine
    bigger = describe_files(
        IntakeRequest(paths=[str(builders.write(builders.chain_model(12), tmp_path / "third" / "c.onnx"))])
    )
    assert bigger.size_bytes > other.size_bytes
    with pytest.raises(LibraryFull):
        library.keep(bigger, session="my tab's token")  # dropping its own would not be enough: it keeps it
    assert library.open(other.id, mine) is not None and library.open(record.id, theirs) is not None


def test_an_owners_keeping_outlives_an_anonymous_one(tmp_path: Path) -> None:
    library = ModelLibrary(tmp_path / "models", max_age_s=60, owned_max_age_s=3600)
    record = _relu(tmp_path)
    anonymous, owned = library.keep(record), library.keep(record, who=ALICE)
    assert anonymous and owned
    library.sweep(now=time.time() + 120)
    assert library.open(record.id, anonymous) is None and library.open(record.id, owned, ALICE) is not None
    assert library.sweep(now=time.time() + 7200) == [tmp_path / "models" / record.id]


def test_an_anonymous_hosted_visitor_lists_only_their_sessions_keepings(tmp_path: Path) -> None:
    library = ModelLibrary(tmp_path / "models", max_age_s=3600)
    record = _relu(tmp_path)
    mine, someone_elses = library.keep(record, session="my tab's token"), library.keep(record)
    assert mine and someone_elses
    listed, _ = library.entries(ANONYMOUS, keys={mine})
    assert [e.kept.key for e in listed] == [mine]
    shared = library.update(record.id, mine, ANONYMOUS, session="my tab's token", shared=True)
    assert shared.shared is False  # no team to share with


TEACHER, PUPIL = "the teacher's tab's owner token", "a participant's tab's owner token"


def test_a_link_opens_an_anonymous_model_and_only_the_session_that_kept_it_changes_it(tmp_path: Path) -> None:
    """A workshop's room model (or any anonymous permalink sent on): everyone with the link opens it; nobody
    but the browser session that kept it renames, tags or deletes it, whatever they hold."""
    library = ModelLibrary(tmp_path / "models", max_age_s=3600)
    record = _relu(tmp_path)
    key = library.keep(record, session=TEACHER)
    assert key
    kept = library.open(record.id, key)  # the link opens it for anyone
    assert kept is not None and kept.keeper and TEACHER not in kept.keeper  # the token's hash, never the token
    assert not owns(kept, ANONYMOUS, PUPIL) and owns(kept, ANONYMOUS, TEACHER)
    for session in (PUPIL, "", key):  # another session, none, or the link's key itself
        with pytest.raises(NotYourModel, match="its link opens it, nothing more"):
            library.update(record.id, key, ANONYMOUS, session=session, title="mine now")
        with pytest.raises(NotYourModel):
            library.update(record.id, key, ANONYMOUS, session=session, tags=["spam"])
        with pytest.raises(NotYourModel):
            library.delete(record.id, key, ANONYMOUS, session)
    with pytest.raises(NotYourModel):  # a signed-in person does not own a stranger's anonymous keeping either
        library.delete(record.id, key, ALICE, TEACHER)
    assert not library.keep_result(record.id, key, "bench", b"a participant's run", ANONYMOUS, PUPIL)
    assert library.result(record.id, key, "bench") is None  # nothing written into the teacher's keeping
    assert library.keep_result(record.id, key, "bench", b"the teacher's run", ANONYMOUS, TEACHER)
    opened = library.open(record.id, key)
    assert opened is not None and opened.label == "relu"  # still there, as its keeper named it
    assert library.update(record.id, key, ANONYMOUS, session=TEACHER, title="room model").label == "room model"
    library.delete(record.id, key, ANONYMOUS, TEACHER)
    assert library.open(record.id, key) is None


def test_a_laptops_one_user_owns_every_anonymous_keeping(tmp_path: Path) -> None:
    library = ModelLibrary(tmp_path / "models", max_age_s=3600)
    record = _relu(tmp_path)
    key = library.keep(record, session=None)  # kept before a reload; the laptop's next session is the same person
    assert key
    library.update(record.id, key, ANONYMOUS, session=None, title="renamed")
    library.delete(record.id, key, ANONYMOUS, None)
    assert library.open(record.id, key) is None


def _models(tmp_path: Path, count: int) -> list[ModelRecord]:
    """``count`` models of one size: chains of 20 nodes whose first bias differs."""
    records = []
    for n in range(count):
        model = builders.chain_model(20)
        model.graph.initializer[0].CopyFrom(numpy_helper.from_array(np.full((16,), n + 1.0, np.float32), "bias_0"))
        path = builders.write(model, tmp_path / f"m{n}" / "chain.onnx")
        records.append(describe_files(IntakeRequest(paths=[str(path)])))
    return records


def test_one_anonymous_session_takes_only_its_share_of_the_shared_room(tmp_path: Path) -> None:
    first, second, third, alices = _models(tmp_path, 4)
    size = first.size_bytes
    library = ModelLibrary(tmp_path / "models", max_age_s=3600, quota_bytes=4 * size, session_share=0.5)
    oldest, older = library.keep(first, session="mallory's tab"), library.keep(second, session="mallory's tab")
    assert oldest and older  # its share: two models
    _used_long_ago(library, first, oldest)
    assert library.keep(third, session="mallory's tab")  # a third makes room among its own: the oldest goes
    assert library.open(first.id, oldest) is None and library.session_usage("mallory's tab") == 2 * size
    assert library.keep(alices, session="alice's tab")  # so the room keeps space for everyone else
    assert library.open(second.id, older) is not None


def test_a_model_larger_than_a_sessions_share_is_refused_with_the_way_out(tmp_path: Path) -> None:
    (record,) = _models(tmp_path, 1)
    library = ModelLibrary(tmp_path / "models", max_age_s=3600, quota_bytes=2 * record.size_bytes, session_share=0.25)
    with pytest.raises(LibraryFull, match="larger than one browser session's share") as refused:
        library.keep(record, session="mallory's tab")
    assert "WORKBENCH_LIBRARY_SESSION_SHARE" in str(refused.value) and "sign in" in str(refused.value)
    assert not (tmp_path / "models" / record.id).exists()
    assert library.keep(record, session=None)  # a laptop's one user has the whole room
