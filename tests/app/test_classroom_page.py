"""The classroom through AppTest: the teacher's page refuses a wrong key, opens a room and shows its pooled
results; a participant joins from the sidebar, starts where the teacher said, and their benchmark lands on the
board beside the tutorial's figure."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core.classroom import Entry, Rooms, RoomSetup, browser_entry
from core.identity import ANONYMOUS
from core.model.library import NotYourModel
from core.settings import load_settings
from core.store import open_history
from tests import builders
from tests.app.pages import open_page, run_benchmark, texts
from tests.unit.test_classroom_devices import browser_run
from ui import classroom_view, session

KEY = "correct horse battery staple"
HOSTILE = "<img src=x onerror=alert(1)>**Eve**"


@pytest.fixture(autouse=True)
def workshop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_WORKSHOP", "true")
    monkeypatch.setenv("WORKBENCH_FACILITATOR_KEY", KEY)


def _rooms() -> Rooms:
    return Rooms(open_history(load_settings()).engine)


def _teacher_opens_a_room(at: AppTest, pages: list[str], model: str = "") -> str:
    at.switch_page("app_pages/classroom.py").run()
    at.text_input(key="facilitator_key").set_value("wrong")
    at.button(key="facilitator_button").click().run()
    assert any("not the facilitator key" in e.value for e in at.error)
    assert not [b for b in at.button if b.key == "room_open"]  # nothing of the room behind a wrong key
    at.text_input(key="facilitator_key").set_value(KEY)
    at.button(key="facilitator_button").click().run()
    at.multiselect(key="room_pages").set_value(pages)
    if model:
        at.selectbox(key="room_model").set_value(model)
    at.radio(key="room_language").set_value("zh")
    at.button(key="room_open").click().run()
    assert not at.exception, at.exception
    code: str = at.session_state["teacher_room"]
    assert any(code in m.value for m in at.markdown)
    return code


def test_the_teacher_needs_the_key_opens_a_room_and_projects_its_pooled_results() -> None:
    teacher = open_page()
    code = _teacher_opens_a_room(teacher, ["model", "benchmark"])
    when = datetime(2026, 12, 1, 10)
    for name, who, value in ((HOSTILE, "p1", 4.2), ("Bob", "p2", 7.9)):
        entry = Entry(name=name, participant=who, kind="benchmark", created_at=when, value=value, low=value - 0.3,
                      high=value + 0.3, machine="lab-07")  # fmt: skip
        _rooms().add(code, entry)
    hostile_device = browser_run([5.0, 5.1, 4.9], browser="<b>=cmd</b>", os="Linux")
    for name, who, run in ((HOSTILE, "p3", hostile_device), ("Bob", "p2", browser_run([7.0, 7.2, 6.9]))):
        _rooms().add(code, browser_entry(run, name, who))  # type: ignore[arg-type]
    teacher.run()
    assert "this room measured 4.2–7.9×" in texts(teacher)
    chart = teacher.get("plotly_chart")[0].proto.spec
    assert "&lt;img src=x" in chart and "<img" not in chart  # the hostile name is text on the board
    devices = json.loads(teacher.get("plotly_chart")[1].proto.spec)  # the browsers, by device, with the count
    assert set(devices["data"][1]["y"]) == {
        "Chrome 156 · Linux · 8 cores · WASM (1 participant)",
        "&lt;b&gt;=cmd&lt;/b&gt; 156 · Linux · 8 cores · WASM (1 participant)",  # text, never markup
    }
    table = next(t.value for t in teacher.table if "device" in t.value.columns)
    assert table["participants"].tolist() == [1, 1]
    assert r"\<b\>=cmd\</b\> 156 · Linux · 8 cores · WASM" in table["device"].tolist()  # as text, never markup
    assert not [m for m in teacher.markdown if "<b>" in m.value]
    csv = next(b for b in teacher.get("download_button")).proto
    assert csv is not None
    teacher.button(key="room_clear").click().run()
    assert "no one in this room has measured yet" in texts(teacher)
    teacher.button(key="room_close").click().run()
    assert _rooms().room(code) is None


def test_a_participant_joins_starts_where_the_teacher_said_and_their_benchmark_lands_on_the_board(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    teacher = open_page()
    code = _teacher_opens_a_room(teacher, ["model", "export", "benchmark"])

    pupil = open_page()
    pupil.text_input(key="room_code").set_value(code.lower())
    pupil.text_input(key="room_name").set_value(HOSTILE)
    pupil.button(key="room_join_button").click().run()
    assert not pupil.exception, pupil.exception
    assert pupil.session_state["lang"] == "zh"  # the room's language
    assert pupil.session_state["model"].name == "tinycnn"
    run_benchmark_in_chinese(pupil)
    assert "5.11" in texts(pupil)  # the tutorial's figure beside theirs
    # Profile, Quantize and History are shut to this room: of the page's four links (its saved run, the next
    # steps), none is drawn
    assert pupil.session_state["bench_saved"] and not list(pupil.get("page_link"))

    entries = _rooms().entries(code)
    assert [(e.name, e.kind) for e in entries] == [(HOSTILE, "benchmark")] and entries[0].value
    teacher.run()
    assert "5.11" in texts(teacher) and "this room measured" in texts(teacher)
    pupil.switch_page("app_pages/profile.py").run()  # a shut page, its address typed in: not shown
    assert [i.value for i in pupil.info] == ["您的老师尚未在本课堂开放此页面。"]
    assert not [w for w in pupil.selectbox if w.key == "profile_level"]  # nothing of the page below
    pupil.switch_page("app_pages/classroom.py").run()  # the participant sees the board, never the controls
    assert not [b for b in pupil.button if b.key in ("room_clear", "room_close")]
    assert not [t for t in pupil.text_input if t.key == "facilitator_key"]

    # participants' pages read the room as any of them read it lately (a shared cache); the teacher's close
    # reaches the next one at once, however long that cache is kept
    monkeypatch.setattr(classroom_view, "_SEEN_S", 3600.0)
    pupil.run()
    teacher.button(key="room_close").click().run()
    pupil.run()
    assert any(code in w.value and "已关闭" in w.value for w in pupil.warning), [w.value for w in pupil.warning]


def _join(code: str, name: str) -> AppTest:
    pupil = open_page()
    pupil.text_input(key="room_code").set_value(code)
    pupil.text_input(key="room_name").set_value(name)
    pupil.button(key="room_join_button").click().run()
    assert not pupil.exception, pupil.exception
    return pupil


def test_the_rooms_model_opens_for_every_participant_and_none_of_them_can_delete_it(tmp_path: Path) -> None:
    """The teacher's model reaches each participant by its link: they open it, and find in their library no
    rename, tag or delete (and the library refuses them if asked directly); so the next one still joins."""
    teacher = open_page("model", ("relu.onnx", builders.write(builders.relu_model(), tmp_path / "r.onnx").read_bytes()))
    link = teacher.session_state["link"]
    code = _teacher_opens_a_room(teacher, ["model", "benchmark"], f"library:{link['model']}:{link['key']}")

    pupil = _join(code, "Ada")
    assert pupil.session_state["model"].name == "relu"
    pupil.switch_page("app_pages/model.py").run()
    pupil.selectbox(key="library_mine").select_index(0).run()  # listed (in Chinese): this session opened it
    assert not pupil.exception, pupil.exception
    assert [b.key for b in pupil.button if (b.key or "").startswith("lib_")] == [f"lib_open_{link['key']}"]  # Open only
    assert not [t for t in pupil.text_input if (t.key or "").startswith("lib_")]  # no name or tags to change
    with pytest.raises(NotYourModel):  # the page bypassed: the library itself refuses
        session.library().delete(link["model"], link["key"], ANONYMOUS, pupil.session_state["owner_token"])

    assert _join(code, "Bob").session_state["model"].name == "relu"  # the next participant still gets it
    teacher.switch_page("app_pages/model.py").run()
    teacher.selectbox(key="library_mine").set_value(link["key"]).run()  # the teacher's session kept it: theirs
    assert [b for b in teacher.button if b.key == f"lib_delete_{link['key']}"]


def run_benchmark_in_chinese(at: AppTest) -> None:
    """The Benchmark page's button is found by its key-less label, which a translated page changes: press the
    form's submit button whatever it says."""
    try:
        run_benchmark(at)
    except StopIteration:
        submit = next(b for b in at.button if b.proto.is_form_submitter and b.proto.form_id == "bench_form")
        submit.click()
        at.run()
    assert not at.exception, at.exception


def _browser_result_arrives() -> None:
    """The Benchmark page's "In this browser" section as the browser's result comes back, and a rerun after it."""
    import streamlit as st

    from ui import browser_bench

    for _run in range(2):
        browser_bench._save(st.session_state["browser_result"], "tok")


def test_a_participants_run_in_this_browser_pools_once_into_their_room_with_its_device() -> None:
    code = _rooms().open(RoomSetup(name="Browsers", model="sample:tinycnn", pages=(), language=""), hours=1).code
    result = {"format": "onnx-workbench-browser-result", "token": "tok", "model": "tinycnn", "backend": "webgpu",
              "calls_ms": [3.0, 3.2, 2.9], "environment": {"browser": "Edge", "browser_version": "150.2",
              "os": "Windows", "cores": 12, "gpu_adapter": "<i>Intel</i>"}}  # fmt: skip
    at = AppTest.from_function(_browser_result_arrives, default_timeout=60)
    at.session_state["classroom"] = {"code": code, "name": "Ada", "participant": "p1"}
    at.session_state["browser_result"] = json.dumps(result)
    at.run()
    assert not at.exception, at.exception
    [entry] = _rooms().entries(code)
    assert (entry.name, entry.kind, entry.machine) == ("Ada", "browser", "Edge 150 · Windows · 12 cores · WebGPU")
    assert entry.value == 3.0 and entry.detail["adapter"] == "<i>Intel</i>"  # kept as given; shown only as text


def test_a_room_on_another_model_pools_onnx_runtimes_levels_and_shows_no_tutorial_figure() -> None:
    """A room on an ONNX model (magika) stayed "no one in this room has measured yet" after three benchmarks, and
    the tutorial's 5.11× line stood beside a model that is not the tutorial's."""
    from core.classroom import bench_entry
    from tests.unit.test_classroom import _onnx_report

    teacher = open_page()
    code = _teacher_opens_a_room(teacher, ["model", "benchmark"], model="sample:classifier")
    assert "No one in this room has measured yet." in texts(teacher) and "5.11" not in texts(teacher)
    for who, report in (("p1", _onnx_report()), ("p2", _onnx_report(baseline=""))):
        entry = bench_entry(report, "Ada" if who == "p1" else "Bob", who)
        assert entry is not None
        _rooms().add(code, entry)
    teacher.run()
    assert not teacher.exception, teacher.exception
    said = texts(teacher)
    assert "ONNX Runtime's best level against DISABLE_ALL: this room measured 2.0–2.0×." in said
    assert "5.11" not in said and "17.9" not in said and "no one" not in said.lower()
    chart = json.loads(teacher.get("plotly_chart")[0].proto.spec)
    assert not chart["layout"].get("shapes") and "DISABLE_ALL" in chart["layout"]["title"]["text"]
    table = next(t.value for t in teacher.table if "configuration" in t.value.columns)
    assert table["participant"].tolist() == ["Bob"] and table["configuration"].tolist() == ["ORT ALL"]
