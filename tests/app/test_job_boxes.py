"""A job's box on a page (ui.jobs): a job done in a moment is drawn finished at once, without the running status
box's pause; a longer job and a failure keep the running box, as before (issue #51)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from streamlit.delta_generator import DeltaGenerator
from streamlit.elements.lib.mutable_status_container import StatusContainer
from streamlit.testing.v1 import AppTest

from core.errors import JobFailed
from tests import builders
from tests.app.pages import open_page


@pytest.fixture(autouse=True)
def no_start_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_START_SAMPLE", "")


@pytest.fixture
def running_boxes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The labels of the running status boxes the pages make (each costs Streamlit's 50 ms pause)."""
    made: list[str] = []
    create = StatusContainer._create

    def counted(parent: Any, label: str, *args: Any, **kwargs: Any) -> StatusContainer:
        made.append(label)
        return create(parent, label, *args, **kwargs)

    monkeypatch.setattr(StatusContainer, "_create", staticmethod(counted))
    return made


class Handle:
    """A job that ends ``after`` seconds from its submission, with ``error`` or the result 42."""

    def __init__(self, after: float, error: Exception | None = None) -> None:
        self.ends, self.error = time.monotonic() + after, error
        self.queue_position = self.progress = None
        self.warnings: tuple[str, ...] = ()

    @property
    def state(self) -> str:
        return "running" if not self.done() else "failed" if self.error else "done"

    def done(self) -> bool:
        return time.monotonic() >= self.ends

    def wait(self, timeout: float | None) -> bool:
        time.sleep(max(0.0, min(self.ends - time.monotonic(), timeout if timeout is not None else 1e9)))
        return self.done()

    def result(self, timeout: float | None = None) -> int:
        if self.error is not None:
            raise self.error
        return 42

    def cancel(self) -> None:
        pass


def _one_job(language: str = "en") -> None:
    import streamlit as st

    from core.decode import DecodeRequest
    from core.errors import WorkbenchError
    from core.i18n import using
    from core.jobs import DECODE
    from ui import jobs

    try:
        with using(language):
            st.session_state["got"] = jobs.run(DECODE, DecodeRequest(path="m.onnx"), "Decoding 'm'")
    except WorkbenchError as exc:
        st.session_state["got"] = str(exc)


def _page_with(monkeypatch: pytest.MonkeyPatch, handle: Handle) -> AppTest:
    import ui.jobs

    monkeypatch.setattr(ui.jobs, "submit", lambda job, request, backend=None: handle)
    at = AppTest.from_function(_one_job, default_timeout=30)
    return at.run()


def test_a_job_done_in_a_moment_is_drawn_finished_with_no_running_box_first(
    monkeypatch: pytest.MonkeyPatch, running_boxes: list[str]
) -> None:
    """Decode's jobs (on a small model, one: the decoding with the graph's layout) end within the short wait: each
    is drawn as its closed box with the check mark, the time and the full bar, and no status box paused the run."""
    import ui.jobs

    monkeypatch.setattr(ui.jobs, "QUICK_S", 600.0)  # the test's workers start cold: "a moment" for them is longer
    monkeypatch.setattr(ui.jobs, "TOAST_AFTER_S", 600.0)
    at = open_page("decode", ("chain.onnx", builders.chain_model(30).SerializeToString()), timeout=120)
    assert not at.exception and running_boxes == []
    done = [e.label for e in at.expander if ": done in " in e.label]
    assert [label.split(": done in ")[0] for label in done] == ["Decoding 'chain'"]
    assert not at.status and all(e.proto.icon == ":material/check:" for e in at.expander if e.label in done)
    assert [h.value for h in at.header][:3] == ["1. The first bytes", "2. The model", "3. The graph"]


def test_a_quick_job_is_drawn_finished_in_the_same_place_with_its_time(
    monkeypatch: pytest.MonkeyPatch, running_boxes: list[str]
) -> None:
    at = _page_with(monkeypatch, Handle(after=0.0))
    assert at.session_state["got"] == 42 and running_boxes == [] and not at.status
    (box,) = at.expander
    assert box.label == "Decoding 'm': done in 0.0 s" and box.proto.icon == ":material/check:"
    assert at.get("progress")[0].proto.value == 100


def test_a_longer_job_keeps_its_running_box(monkeypatch: pytest.MonkeyPatch, running_boxes: list[str]) -> None:
    import ui.jobs

    monkeypatch.setattr(ui.jobs, "QUICK_S", 0.05)
    at = _page_with(monkeypatch, Handle(after=0.4))
    assert at.session_state["got"] == 42 and running_boxes == ["Decoding 'm'"]
    (box,) = at.status
    assert box.state == "complete" and box.label.startswith("Decoding 'm': done in ") and not at.expander


def test_a_job_that_fails_at_once_says_so_in_its_status_box(
    monkeypatch: pytest.MonkeyPatch, running_boxes: list[str]
) -> None:
    at = _page_with(monkeypatch, Handle(after=0.0, error=JobFailed("the worker died")))
    assert at.session_state["got"] == "the worker died" and running_boxes == ["Decoding 'm'"]
    (box,) = at.status
    assert box.state == "error" and box.label == "Decoding 'm': failed"


def test_a_longer_job_s_box_is_open_while_it_runs_and_closed_once_done(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bar saying how far a long job has got (a large model's Partition: minutes) is in view while it runs,
    not inside a closed box, where the toast sent the reader; once done the box is closed, as a quick job's is."""
    import ui.jobs

    opened: list[bool] = []
    create = StatusContainer._create

    def noted(parent: Any, label: str, **kwargs: Any) -> StatusContainer:  # st.status names its arguments
        opened.append(kwargs["expanded"])
        return create(parent, label, **kwargs)

    monkeypatch.setattr(StatusContainer, "_create", staticmethod(noted))
    monkeypatch.setattr(ui.jobs, "QUICK_S", 0.05)
    at = _page_with(monkeypatch, Handle(after=0.4))
    (box,) = at.status
    assert opened == [True] and box.state == "complete" and box.proto.expanded is False
    failed = _page_with(monkeypatch, Handle(after=0.4, error=JobFailed("the worker died")))
    (box,) = failed.status
    assert opened == [True, True] and box.state == "error" and box.proto.expanded is False


def test_a_running_job_s_bar_gives_its_seconds_in_the_reader_s_language(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bar's text is the job's progress (said in the worker, in the reader's language) and the seconds it has
    run: in Chinese "秒", not an English "s" after a Chinese sentence."""
    import ui.jobs
    from core.jobs.process import Progress

    said: list[str] = []
    progress = DeltaGenerator.progress

    def noted(self: DeltaGenerator, value: Any, text: str | None = None, **kwargs: Any) -> Any:
        said.append(text or "")
        return progress(self, value, text=text, **kwargs)

    monkeypatch.setattr(DeltaGenerator, "progress", noted)
    monkeypatch.setattr(ui.jobs, "QUICK_S", 0.05)
    handle = Handle(after=0.4)
    handle.progress = Progress(0.5, "正在模拟 CoreML")  # type: ignore[assignment]
    monkeypatch.setattr(ui.jobs, "submit", lambda job, request, backend=None: handle)
    at = AppTest.from_function(_one_job, default_timeout=30, args=("zh",)).run()
    assert at.session_state["got"] == 42
    assert "正在模拟 CoreML（0 秒）" in said and not [text for text in said if text.endswith(" s)")]
