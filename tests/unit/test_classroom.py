"""The classroom's rooms (core.classroom): codes random and unique, rooms that expire and close, results pooled
and cleared, a board that spreads each participant's speedup beside the tutorial's, and a CSV no spreadsheet
runs as a formula; and the tutorial's figures (core.tutorial) with the reasons a user's differ."""

from __future__ import annotations

import csv
import io
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from core.classroom import (
    Entry,
    Rooms,
    RoomSetup,
    bench_entry,
    choices,
    new_code,
    quantize_entry,
    range_sentence,
    spread,
    to_csv,
)
from core.classroom.rooms import ALPHABET, CODE_LENGTH
from core.errors import RoomError
from core.i18n import using
from core.store import Store
from core.tutorial import FIGURES, WRITTEN_PARAMETERS, comparison, parameters_as_written
from tests.postgres import Postgres
from tests.reports import made_report

SETUP = RoomSetup(name="Tuesday", model="sample:tinycnn", pages=("model", "benchmark"), language="zh")
NOON = datetime(2026, 12, 1, 12, 0)


@pytest.fixture
def rooms(tmp_path: Path) -> Rooms:
    return Rooms(Store(f"sqlite:///{tmp_path / 'history.sqlite'}").engine)


def _entry(name: str, who: str, value: float, low: float, high: float) -> Entry:
    return Entry(name=name, participant=who, kind="benchmark", created_at=NOON, machine="box-a", value=value,
                 low=low, high=high)  # fmt: skip


def test_room_codes_are_random_from_an_unambiguous_alphabet_and_never_repeat() -> None:
    codes = {new_code() for _ in range(2000)}
    assert len(codes) == 2000
    assert all(len(c) == CODE_LENGTH and set(c) <= set(ALPHABET) for c in codes)
    assert not set("0O1IL") & set(ALPHABET)


def test_each_opened_room_gets_its_own_code_and_the_setting_is_kept_for_next_week(rooms: Rooms) -> None:
    first = rooms.open(SETUP, hours=2, now=NOON)
    second = rooms.open(SETUP, hours=2, now=NOON)
    assert first.code != second.code
    assert rooms.setups() == [SETUP]  # saved once, reopened with one click
    assert rooms.join(first.code.lower(), "Ada", now=NOON).setup == SETUP  # typed in lower case


def test_a_room_expires_with_its_time_and_when_the_teacher_closes_it(rooms: Rooms) -> None:
    room = rooms.open(SETUP, hours=2, now=NOON)
    assert rooms.room(room.code, now=NOON + timedelta(hours=1)) is not None
    with pytest.raises(RoomError, match="no open room"):
        rooms.join(room.code, "Ada", now=NOON + timedelta(hours=2, seconds=1))
    later = rooms.open(SETUP, hours=2)
    rooms.close(later.code)
    assert rooms.room(later.code) is None
    rooms.add(later.code, _entry("Ada", "p1", 5.0, 4.5, 5.5))  # a closed room takes nothing
    assert rooms.entries(later.code) == []


@pytest.mark.parametrize("name", ["", "   ", "x" * 41, "Ada\u202e", "Bob\x00"])
def test_a_display_name_that_is_empty_too_long_or_invisible_is_refused(rooms: Rooms, name: str) -> None:
    room = rooms.open(SETUP, hours=2)
    with pytest.raises(RoomError):
        rooms.join(room.code, name)


def test_a_name_piled_with_marks_or_the_teachers_is_refused_at_the_door_and_on_the_board(rooms: Rooms) -> None:
    room = rooms.open(SETUP, hours=2)
    zalgo = "Z" + "\u0301" * 39  # 40 characters: within the limit, over the board's labels
    with pytest.raises(RoomError, match="at most 2 accents or other marks on one letter"):
        rooms.join(room.code, zalgo)
    for teacher in ("Teacher", "ｔｅａｃｈｅｒ", "老师"):
        with pytest.raises(RoomError, match="what the pages call the teacher"):
            rooms.join(room.code, teacher)
    for hostile in (zalgo, "Teacher"):
        with pytest.raises(RoomError):
            rooms.add(room.code, _entry(hostile, "p1", 5.0, 4.5, 5.5))
    assert rooms.entries(room.code) == []
    assert rooms.join(room.code, "Nguyễn Thị Ánh").code == room.code  # accents of one's own join as typed


def test_results_pool_into_their_room_only_and_clearing_forgets_them(rooms: Rooms) -> None:
    ours, theirs = rooms.open(SETUP, hours=2), rooms.open(SETUP, hours=2)
    rooms.add(ours.code, _entry("Ada", "p1", 5.0, 4.5, 5.5))
    rooms.add(theirs.code, _entry("Bob", "p2", 3.0, 2.5, 3.5))
    assert [e.name for e in rooms.entries(ours.code)] == ["Ada"]
    assert rooms.clear(ours.code) == 1
    assert rooms.entries(ours.code) == [] and len(rooms.entries(theirs.code)) == 1


def test_the_board_spreads_each_participants_latest_speedup_beside_the_tutorials() -> None:
    entries = [_entry("Ada", "p1", 9.0, 8.0, 10.0), _entry("Bob", "p2", 4.2, 4.0, 4.4), _entry("Ada", "p1", 7.9, 7, 8)]
    rows = spread(entries)
    assert [(r.name, r.median) for r in rows] == [("Bob", 4.2), ("Ada", 7.9)]  # Ada's latest, slowest first
    assert range_sentence(rows) == "The tutorial measured 5.11× on its machine; this room measured 4.2–7.9×."
    with using("zh"):
        assert "5.11" in range_sentence(rows) and "4.2–7.9" in range_sentence(rows)


def test_a_benchmark_pools_its_eager_to_ort_speedup_and_quantize_choices_count() -> None:
    entry = bench_entry(made_report(machine="lab-07"), "Ada", "p1")
    assert entry is not None and entry.value == 4.0 and entry.machine == "lab-07"  # ORT ALL, 4 ms → 1 ms
    assert entry.detail["level"] == "ALL"
    quantized = [Entry(name="Ada", participant=p, kind="quantize", created_at=NOON, detail={"recommended": k})
                 for p, k in (("p1", "int8_dynamic"), ("p2", "int8_dynamic"), ("p3", "fp16"))]  # fmt: skip
    assert choices(quantized) == {"int8_dynamic": 2, "fp16": 1}


def test_the_csv_keeps_a_hostile_name_as_text_that_no_spreadsheet_runs() -> None:
    hostile = '=HYPERLINK("http://evil.test","click")'
    entries = [_entry(hostile, "p1", 5.0, 4.5, 5.5), _entry("+1-2", "p2", 3.0, 2.5, 3.5), _entry("@SUM", "p3", 1, 1, 1)]
    rows = list(csv.reader(io.StringIO(to_csv("ABC234", entries))))
    assert rows[0][:3] == ["room", "name", "kind"]
    assert [r[1] for r in rows[1:]] == ["'" + hostile, "'+1-2", "'@SUM"]
    assert not any(cell.startswith(("=", "+", "-", "@")) for row in rows for cell in row)


def test_the_tutorial_printed_a_parameter_count_its_own_code_does_not_have() -> None:
    assert WRITTEN_PARAMETERS == 256_074 == parameters_as_written(112)  # the sample's count (test_zoo_cli)
    assert FIGURES["parameters"].value == parameters_as_written(64)  # 87,114: a head for 64×64 inputs
    sentence, reasons = comparison("parameters", 256_074)
    assert "87,114" in sentence and "250,890" in reasons[0] and "32·16·16" in reasons[0]
    assert "256,074" not in sentence + "".join(reasons)  # the card above says it, once (browser tests find it)


def test_the_tutorials_speedup_is_put_beside_the_users_with_the_reasons() -> None:
    sentence, reasons = comparison("speedup", 3.2)
    assert "5.11×" in sentence and "3.20×" in sentence
    assert any("Threads" in r for r in reasons)
    with using("zh"):
        zh_sentence, zh_reasons = comparison("graph_optimizations", 12.0)
    assert "17.9" in zh_sentence and "教程" in zh_sentence and all(r.isascii() is False for r in zh_reasons)


def test_a_room_opens_pools_clears_and_closes_on_a_postgresql_team_server(postgres_server: Postgres) -> None:
    team = Rooms(Store(postgres_server.new_database()).engine)
    room = team.open(SETUP, hours=2)
    assert team.join(room.code, "Ada").setup == SETUP
    team.add(room.code, _entry("Ada", "p1", 5.0, 4.5, 5.5))
    assert [e.value for e in team.entries(room.code)] == [5.0]
    assert team.clear(room.code) == 1
    team.close(room.code)
    assert team.room(room.code) is None


def test_a_queued_job_is_told_about_how_long_the_jobs_ahead_of_it_take() -> None:
    from ui.jobs import Durations

    durations = Durations()
    assert durations.wait("bench", 2) is None  # nothing measured yet: no guess
    for seconds in (10.0, 30.0, 20.0):
        durations.record("bench", seconds)
    assert durations.wait("bench", 2) == 40.0  # two jobs of the median 20 s
    assert durations.wait("export", 1) is None  # another kind of job is not this one


def test_a_quantization_pools_the_variant_it_recommended_and_where_it_ran() -> None:
    from core.quantize.records import QuantizeReport, Variant

    report = QuantizeReport(
        model="tinycnn", calibration="", held_out="", threads=1, notes=[], cpu_flags=[], recommended="int8_dynamic",
        variants=[Variant(key="fp32", label="FP32"), Variant(key="int8_dynamic", label="INT8", speedup=1.8,
                                                            speedup_low=1.6, speedup_high=2.0)],
    )  # fmt: skip
    entry = quantize_entry(report, "Ada", "p1", "lab-07")
    assert (entry.kind, entry.value, entry.low, entry.machine) == ("quantize", 1.8, 1.6, "lab-07")
    assert entry.detail == {"recommended": "int8_dynamic", "variants": ["fp32", "int8_dynamic"]}


def _onnx_report(baseline: str = "ORT DISABLE_ALL"):  # type: ignore[no-untyped-def]
    """An ONNX model's benchmark (magika's, say): no PyTorch eager, speedups against DISABLE_ALL (or none)."""
    import dataclasses

    report = made_report(model="magika", machine="lab-07")
    results = [r for r in report.results if r.engine == "ort"]
    for r in results:
        r.speedup = 2.0 / r.median_ms if baseline else None
    return dataclasses.replace(report, results=results, baseline=baseline)


def test_an_onnx_models_benchmarks_pool_their_levels_speedup_and_the_board_is_not_empty() -> None:
    """A room on magika showed "no one in this room has measured yet" after three benchmarks: only speedups
    against PyTorch eager were pooled. A speedup against DISABLE_ALL pools (the best level), and a run with no
    baseline pools its fastest median; the tutorial's 5.11× is said only in a room on the tutorial's model."""
    from core.classroom import LEVELS, empty_sentence, latencies, tutorial_figure
    from core.tutorial import GRAPH_OPTIMIZATIONS, SPEEDUP
    from ui.classroom_view import board_figure

    entry = bench_entry(_onnx_report(), "Ada", "p1")
    assert entry is not None and entry.value == 2.0 and entry.detail["baseline"] == LEVELS
    assert entry.detail["level"] == "ALL" and entry.detail["provider"] == "CPUExecutionProvider"
    bare = bench_entry(_onnx_report(baseline=""), "Bob", "p2")  # one level, or providers side by side
    assert bare is not None and bare.value is None and bare.detail["median_ms"] == 1.0
    entries = [_entry("Cy", "p3", 5.0, 4.5, 5.5), entry, bare]  # Cy measured against eager, on another day
    assert [r.name for r in spread(entries)] == ["Cy"] and [r.name for r in spread(entries, LEVELS)] == ["Ada"]
    assert [(r.name, r.configuration, r.median_ms) for r in latencies(entries)] == [("Bob", "ORT ALL", 1.0)]

    magika = "library:abc:key"
    levels = range_sentence(spread([entry], LEVELS), LEVELS, magika)
    assert levels == "ONNX Runtime's best level against DISABLE_ALL: this room measured 2.0–2.0×."
    eager = range_sentence(spread(entries), model=magika)
    assert eager == "PyTorch eager → ONNX Runtime: this room measured 5.0–5.0×." and "5.11" not in eager
    assert empty_sentence([bare], magika) == (
        "1 participant measured; no speedup against a baseline yet: their runs are below."
    )
    assert empty_sentence([], magika) == "No one in this room has measured yet."
    assert "5.11" in empty_sentence([], "sample:tinycnn")
    tutorial = range_sentence(spread([entry], LEVELS), LEVELS, "sample:tinycnn")
    assert tutorial.startswith("With graph optimizations the tutorial measured 17.9×")
    assert tutorial_figure(LEVELS, "sample:tinycnn") is GRAPH_OPTIMIZATIONS and tutorial_figure(LEVELS, magika) is None
    assert tutorial_figure("PyTorch eager", "sample:tinycnn") is SPEEDUP
    assert not board_figure(spread(entries), model=magika).layout.shapes  # no tutorial's line beside magika
    assert len(board_figure(spread(entries), model="sample:tinycnn").layout.shapes) == 1
    with using("zh"):
        assert "2.0–2.0" in range_sentence(spread([entry], LEVELS), LEVELS, magika)
        assert "DISABLE_ALL" in str(board_figure(spread([entry], LEVELS), LEVELS, magika).layout.title.text)
