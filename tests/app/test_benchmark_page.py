"""The Benchmark and History pages through AppTest: a default run on TinyCNN, saved, listed and compared."""

from __future__ import annotations

import pytest

from core.jobs import BENCH
from tests import builders
from tests.app.pages import open_page, run_benchmark, texts


def test_default_benchmark_of_the_start_sample_is_shown_and_saved() -> None:
    at = open_page(timeout=300)
    run_benchmark(at)
    headline = at.subheader[0].value.replace("\\", "")  # as the reader sees it: Markdown escapes taken out
    # a settled number, or on a busy machine the interval and the word that the run was noisy
    assert headline.startswith(("ONNX Runtime (", "Noisy run: ONNX Runtime (")) and "PyTorch eager" in headline
    assert "95 % CI" in headline
    table = next(d.value for d in at.dataframe if "configuration" in d.value.columns)
    assert list(table["configuration"]) == ["PyTorch eager", "ORT DISABLE_ALL", "ORT ALL"]
    assert at.session_state["bench_saved"] == at.session_state[BENCH.name][1].id
    assert any(h.value == "The machine" for h in at.header)
    assert "The tutorial measured 5.11×" in texts(at)  # the tutorial's CNN: its figure beside this run's

    at.switch_page("app_pages/history.py").run()
    assert not at.exception
    runs = at.dataframe[0].value
    assert list(runs["model"]) == ["tinycnn"] and runs["configurations"].tolist() == [3]
    assert at.multiselect(key="history_compare").value == [runs["run"].tolist()[0]]


def test_history_compares_two_runs_and_filters_them(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("WORKBENCH_START_SAMPLE", "")
    at = open_page(model=("tinycnn.onnx", builders.exported_sample("tinycnn", tmp_path).read_bytes()), timeout=300)
    run_benchmark(at)  # no PyTorch original: ORT levels only, against DISABLE_ALL
    assert "ORT DISABLE_ALL" in at.subheader[0].value.replace("\\", "")
    assert at.checkbox(key="bench_eager").value is False and at.checkbox(key="bench_eager").disabled
    assert at.checkbox(key="bench_eager").help == "This ONNX model has no PyTorch original in this session."
    run_benchmark(at)
    at.switch_page("app_pages/history.py").run()
    assert len(at.dataframe[0].value) == 2
    assert len(at.multiselect(key="history_compare").value) == 2
    measured_on = at.dataframe[1].value["inputs"].tolist()
    assert measured_on == ["input 1×3×112×112 (random normal (mean 0, sd 1))"] * 2  # what each run measured on
    pivot = at.dataframe[2].value
    assert pivot.shape == (2, 2)  # two configurations × two runs
    at.multiselect(key="history_models").set_value(["tinycnn"]).run()
    assert len(at.dataframe[0].value) == 2 and not at.exception
    machine = at.dataframe[0].value["machine"].tolist()[0]
    at.multiselect(key="history_machines").set_value([machine]).run()
    assert len(at.dataframe[0].value) == 2


def test_history_without_runs_points_to_the_benchmark() -> None:
    at = open_page("history", timeout=120)
    assert any("No benchmark runs yet" in i.value for i in at.info)


def test_a_detector_is_benchmarked_on_a_real_image_at_its_plans_size(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    import numpy as np
    from PIL import Image

    from tests import wild

    monkeypatch.setenv("WORKBENCH_START_SAMPLE", "")
    at = open_page("benchmark", ("det.onnx", wild.detector_model().SerializeToString()), timeout=300)
    assert any("x 1×3×640×640, random normal" in c.value.replace("\\", "") for c in at.caption)  # never 1×1
    assert not any("TinyCNN" in c.value for c in at.caption)  # no sample's timing on another model's page
    buffer = io.BytesIO()
    Image.fromarray(np.full((100, 150, 3), 200, np.uint8)).save(buffer, format="PNG")
    record = at.session_state["model"]
    at.file_uploader(key=f"bench_plan_image_{record.id[:12]}").set_value(("photo.png", buffer.getvalue(), "image/png"))
    at.run()
    at.button(key="bench_plan_use_image").click().run()
    assert not at.exception
    assert any("real data: photo.png, 150×100 resized to 640×640" in c.value.replace("\\", "") for c in at.caption)
    at.number_input(key="bench_iters").set_value(10)
    at.number_input(key="bench_warmup").set_value(1)
    next(b for b in at.button if b.label == "Run the benchmark").click()
    at.run()
    assert not at.exception
    used = at.session_state[BENCH.name][1].settings["inputs"]["x"]
    assert used["shape"] == [1, 3, 640, 640] and used["values"].startswith("real data: photo.png")
    assert "The tutorial measured" not in texts(at)  # the small CNN's figures say nothing of a detector


def test_real_inputs_from_an_npz_replace_the_generated_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    import numpy as np

    from tests import wild

    monkeypatch.setenv("WORKBENCH_START_SAMPLE", "")
    at = open_page("benchmark", ("vad.onnx", wild.vad_model().SerializeToString()), timeout=300)
    buffer = io.BytesIO()
    np.savez(buffer, input=np.zeros((1, 1024), np.float32))
    record = at.session_state["model"]
    at.file_uploader(key=f"bench_plan_npz_{record.id[:12]}").set_value(("real.npz", buffer.getvalue(), "x"))
    at.run()
    at.button(key="bench_plan_use_npz").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    shown = " ".join(c.value.replace("\\", "") for c in at.caption)
    assert "input 1×1024, real data: array 'input' of real.npz" in shown and "sr scalar, all 16000" in shown


def test_a_run_on_a_busy_machine_says_so_and_runs_again_on_a_click() -> None:
    """Another process keeps a core busy while TinyCNN is measured: the headline says the machine was busy,
    the page says what else ran, and "Run it again" measures again with the same settings."""
    import subprocess
    import sys

    spin = "import time\nend = time.monotonic() + 120\nwhile time.monotonic() < end: pass"
    hog = subprocess.Popen([sys.executable, "-c", spin])
    try:
        at = open_page(timeout=300)
        at.switch_page("app_pages/benchmark.py").run()
        at.button(key="export_defaults").click().run()
        at.number_input(key="bench_iters").set_value(250)  # long enough (about a second) to judge the machine
        at.number_input(key="bench_warmup").set_value(2)
        at.multiselect(key="bench_threads").set_value([1])
        next(b for b in at.button if b.label == "Run the benchmark").click()
        at.run()
        first = at.session_state[BENCH.name][1]
        assert first.activity.busy and "the machine was busy" in at.subheader[0].value.replace("\\", "")
        assert any("Other processes kept" in w.value for w in at.warning)
        again = next(b for b in at.button if b.label == "Run it again")
        again.click().run()
        assert not at.exception and at.session_state[BENCH.name][1].id != first.id
    finally:
        hog.kill()
        hog.wait()


def test_a_dim_nothing_explains_is_asked_for_and_nothing_runs_until_it_is_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The plan says which size is missing and the Run button stays off; once the size is given, the plan (shared
    by Profile and Quantize) runs at it."""
    from tests import wild

    monkeypatch.setenv("WORKBENCH_START_SAMPLE", "")
    at = open_page("benchmark", ("groups.onnx", wild.unhinted_model().SerializeToString()), timeout=300)
    asked = " ".join(w.value.replace("\\", "") for w in at.warning)
    assert "Nothing in the model says how large 'group' (input 'features', axis 2) should be" in asked
    run = next(b for b in at.button if b.label == "Run the benchmark")
    assert run.disabled and any("features 1×16×?" in c.value.replace("\\", "") for c in at.caption)
    record = at.session_state["model"]
    at.number_input(key=f"bench_plan_{record.id[:12]}_size_features_2").set_value(6).run()
    assert not at.exception and not at.warning
    assert not next(b for b in at.button if b.label == "Run the benchmark").disabled
    at.switch_page("app_pages/profile.py").run()
    assert not next(b for b in at.button if b.label == "Profile").disabled
    assert any("features 1×16×6" in c.value.replace("\\", "") for c in at.caption)
