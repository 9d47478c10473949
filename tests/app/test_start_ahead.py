"""The next step's job started while a page is read (settings.start_ahead): the Model page starts Decode's job,
Decode starts Partition's with its levels, and each page takes the job started for it instead of starting its own."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from core.jobs import DECODE, DECODE_GRAPH, GRAPH, OPTIMIZE, PARTITION
from tests import builders
from tests.app.pages import open_page, upload


@pytest.fixture
def submitted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the jobs the pages submit, in order, but the upload's own; the next step's job may start."""
    import ui.jobs
    from core.jobs.process import submit

    monkeypatch.setenv("WORKBENCH_START_AHEAD", "true")
    monkeypatch.setenv("WORKBENCH_START_SAMPLE", "")
    names: list[str] = []

    def recorded(job, request, backend=None):  # type: ignore[no-untyped-def]
        if not job.name.startswith("intake."):
            names.append(job.name)
        return submit(job, request, backend)

    monkeypatch.setattr(ui.jobs, "submit", recorded)
    return names


def _slots_back() -> None:
    """Wait until every job started ahead has ended and given its session's slot back."""
    from ui.jobs import _session_jobs

    deadline = time.monotonic() + 60
    while _session_jobs().running:
        assert time.monotonic() < deadline, _session_jobs().running
        time.sleep(0.05)


def test_each_page_of_the_walk_through_takes_the_job_the_page_before_started(
    submitted: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The slot of a job started ahead comes back as soon as the page that took it has its result, so the page can
    start the next one: here the thread that would also give it back when the job ends does so a second late (as
    on a busy machine), and Partition's job still starts on Decode. A job's box says its own time, not the page's
    wait on it (nothing) nor the time since it started (the person read the page before)."""
    import threading

    import ui.jobs

    give_back = ui.jobs._give_back

    def late(entry, session_id):  # type: ignore[no-untyped-def]
        if threading.current_thread().name == "started job":
            time.sleep(1)
        give_back(entry, session_id)

    monkeypatch.setattr(ui.jobs, "_give_back", late)
    model = builders.mlp_model()
    began = time.monotonic()
    at = open_page(None, ("m.onnx", model.SerializeToString()))
    assert submitted == [DECODE_GRAPH.name]  # the Model page offers Decode: its job started
    _slots_back()  # it has ended (a second before its slot came back)
    at.switch_page("app_pages/decode.py").run()
    assert not at.exception and at.session_state[DECODE.name][1].node_count == len(model.graph.node)
    (box,) = [e.label for e in at.expander if e.label.startswith("Decoding 'm': done in ")]
    seconds = float(box.removeprefix("Decoding 'm': done in ").removesuffix(" s"))
    assert 0.0 < seconds < time.monotonic() - began - 0.9, box
    assert submitted == [DECODE_GRAPH.name, PARTITION.name]  # Decode took it, and offers Partition
    at.switch_page("app_pages/partition.py").run()
    assert not at.exception and not at.error
    assert submitted == [DECODE_GRAPH.name, PARTITION.name]  # Partition took it: nothing more ran
    levels = at.session_state[OPTIMIZE.name][1]
    assert [level.key for level in levels.levels] == ["disable", "basic", "extended", "layout", "all"]
    folders = {Path(level.path).parent for level in levels.levels}
    assert len(folders) == 1 and all(Path(level.path).is_file() for level in levels.levels)
    (folder,) = folders
    assert [p for p in folder.parent.iterdir() if p.name.startswith("optimized")] == [folder]  # none left empty
    assert at.session_state[PARTITION.name][1].reports[0].providers
    _slots_back()


def test_nothing_starts_ahead_where_a_session_runs_one_job_at_a_time(
    submitted: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORKBENCH_MAX_JOBS_PER_SESSION", "1")
    at = open_page(None, ("m.onnx", builders.chain_model(5).SerializeToString()))
    assert submitted == []
    at.switch_page("app_pages/decode.py").run()
    assert not at.exception and submitted == [DECODE_GRAPH.name]
    _slots_back()


def test_a_large_model_and_a_pytorch_one_start_nothing_ahead(
    submitted: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import ui.decode_view
    import ui.partition_view

    monkeypatch.setattr(ui.decode_view, "TOGETHER_MAX_NODES", 3)
    monkeypatch.setattr(ui.decode_view, "LAYOUT_AHEAD_MAX_NODES", 3)  # the chain of 5 has 4 nodes
    monkeypatch.setattr(ui.partition_view, "AHEAD_MAX_BYTES", 100)  # the chain of 5 is a few hundred bytes
    at = open_page(None, ("m.onnx", builders.chain_model(5).SerializeToString()))
    assert submitted == []
    at.switch_page("app_pages/decode.py").run()
    assert not at.exception and sorted(submitted) == sorted([DECODE.name, "graph.view"])  # its own two, none ahead
    _slots_back()
    submitted.clear()
    monkeypatch.setenv("WORKBENCH_START_SAMPLE", "tinycnn")
    at = open_page(None)  # the start sample, in PyTorch: the Model page offers Export, which has no job to start
    assert not at.exception and submitted == []
    upload(at, "m.onnx", builders.chain_model(5).SerializeToString())
    assert submitted == [], "a model past the sizes: its pages run their own jobs"


def test_a_larger_models_graph_is_laid_out_while_its_card_is_read_and_decode_takes_it(
    submitted: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the size decoded and laid out by one job, Decode (and Partition) still wait on the graph's layout (1.8
    CPU-seconds at 30,003 nodes): the Model page starts it, and Decode runs only its decoding."""
    import ui.decode_view

    monkeypatch.setattr(ui.decode_view, "TOGETHER_MAX_NODES", 3)
    at = open_page(None, ("m.onnx", builders.chain_model(5).SerializeToString()))
    assert not at.exception and submitted == [GRAPH.name]
    at.switch_page("app_pages/decode.py").run()
    assert not at.exception and submitted[:2] == [GRAPH.name, DECODE.name]  # (then Partition's, ahead)
    assert submitted.count(GRAPH.name) == 1  # the layout taken, not laid out again
    assert at.session_state["_graph_canvas_payloads"]  # the graph drawn from the layout started ahead
    _slots_back()


def test_a_model_whose_functions_make_it_larger_than_its_main_graph_starts_nothing_ahead(
    submitted: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sizes are counted as ONNX Runtime runs the model: a local function's body inlined at every call (a 1 kB
    file can hold 10⁵ nodes), not the main graph's nodes as written."""
    import ui.decode_view
    import ui.partition_view

    monkeypatch.setattr(ui.decode_view, "TOGETHER_MAX_NODES", 2)  # the main graph's one call is within it
    monkeypatch.setattr(ui.partition_view, "LEVELS_BEFORE_GRAPH", 2)
    at = open_page(None, ("f.onnx", builders.function_model().SerializeToString()))
    record = at.session_state["model"]
    assert (record.node_count, record.runtime_nodes) == (1, 3)  # one call; the main graph's and the body's nodes
    assert submitted == []


def test_what_a_page_started_ahead_is_not_started_again_on_its_reruns_nor_taken_once_its_files_are_gone(
    submitted: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    import ui.jobs

    monkeypatch.setattr(ui.jobs, "AHEAD_KEPT_S", 0.0)  # its result dropped as soon as it has ended
    at = open_page(None, ("m.onnx", builders.mlp_model().SerializeToString()))
    assert submitted == [DECODE_GRAPH.name]
    _slots_back()
    time.sleep(0.2)
    at.run()  # the Model page again (a widget, a rerun): the same job for the same model is not started again
    assert not at.exception and submitted == [DECODE_GRAPH.name]
    # a job started ahead whose folder another run of the session pruned before the page took it: the page runs its
    # own, rather than showing a result whose files are gone
    monkeypatch.setattr(ui.jobs, "AHEAD_KEPT_S", 60.0)
    at = open_page(None, ("m.onnx", builders.mlp_model().SerializeToString()))
    _lock, started = ui.jobs._started()
    (entry,) = [e for e in started.values() if e.folders]
    _slots_back()
    for folder in entry.folders:
        shutil.rmtree(folder)
    at.switch_page("app_pages/decode.py").run()
    assert not at.exception and not at.error
    assert submitted.count(DECODE_GRAPH.name) == 3 and at.session_state[DECODE.name][1].node_count > 0


def test_a_step_a_workshops_room_keeps_shut_starts_nothing_ahead(
    submitted: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import ui.pages

    shown = ui.pages._shown
    monkeypatch.setattr(ui.pages, "_shown", lambda: shown() - {"partition"})  # the teacher opened Decode, not Partition
    at = open_page(None, ("m.onnx", builders.mlp_model().SerializeToString()))
    at.switch_page("app_pages/decode.py").run()
    assert not at.exception and submitted == [DECODE_GRAPH.name]  # Decode's own, started ahead; none for Partition
    _slots_back()
