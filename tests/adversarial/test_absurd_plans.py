"""An input plan that cannot fit is refused before anything runs, naming the input, its shape and its size: a
1×3×60000×60000 image once ran 41 s until the worker was killed for memory, and a dim of 2³¹ raised a raw
OverflowError. Sizes are Python ints (nothing overflows), a batch sweep counts at its largest batch, and dims
that are zero, negative or past what ONNX can write are refused with the way to write them."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from onnx import TensorProto, helper
from streamlit.testing.v1 import AppTest

from core.errors import PlanTooLargeError
from core.jobs.process import ProcessBackend
from core.model.inputs import BenchInput, check_plan_memory, input_bytes
from tests.app.conftest import APP
from tests.cli import cli

WORKER = 6144 << 20  # the local default of worker_memory_mb


def _image_model() -> bytes:
    """Images of any size, at any batch: batch×3×h×w → Relu."""
    image = helper.make_tensor_value_info("image", TensorProto.FLOAT, ["batch", 3, "h", "w"])
    out = helper.make_tensor_value_info("out", TensorProto.FLOAT, ["batch", 3, "h", "w"])
    graph = helper.make_graph([helper.make_node("Relu", ["image"], ["out"], name="relu")], "g", [image], [out])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


def test_a_sixty_thousand_pixel_image_is_refused_with_its_name_shape_and_size() -> None:
    plan = [BenchInput(name="image", dtype="float32", shape=[1, 3, 60000, 60000], batch_axis=0)]
    with pytest.raises(PlanTooLargeError) as refused:
        check_plan_memory(plan, 1, WORKER, " (setting WORKBENCH_WORKER_MEMORY_MB)")
    message = str(refused.value)
    assert "Input 'image' is float32 1×3×60000×60000: 40.2 GB" in message
    assert "at most 6.0 GB (setting WORKBENCH_WORKER_MEMORY_MB)" in message and "Nothing was run" in message


def test_sizes_are_python_ints_and_stop_growing_past_any_machine() -> None:
    huge = BenchInput(name="x", dtype="float32", shape=[2**31, 2**31, 2**31], batch_axis=None)
    assert input_bytes(huge) >= 2**80  # no overflow: a Python int
    started = time.perf_counter()
    assert (
        input_bytes(BenchInput(name="x", dtype="int64", shape=[2] * 100_000)) >= 2**80
    )  # a million-bit number is not made
    assert time.perf_counter() - started < 1.0
    with pytest.raises(PlanTooLargeError, match="more than any machine has"):
        check_plan_memory([huge], 1, WORKER)


def test_a_batch_sweep_counts_at_its_largest_batch() -> None:
    plan = [
        BenchInput(name="image", dtype="float32", shape=[1, 3, 4000, 4000], batch_axis=0),
        BenchInput(name="scale", dtype="float32", shape=[1], batch_axis=None),
    ]
    check_plan_memory(plan, 1, WORKER)  # 192 MB at batch 1
    with pytest.raises(PlanTooLargeError) as refused:
        check_plan_memory(plan, 64, WORKER)
    assert "Input 'image' at batch 64 is float32 64×3×4000×4000: 11.4 GB" in str(refused.value)
    assert "or smaller batches" in str(refused.value)


@pytest.fixture(scope="module")
def image_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("plans") / "images.onnx"
    path.write_bytes(_image_model())
    return path


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["bench", "--input", "image=1,3,60000,60000"], "Input 'image' is float32 1×3×60000×60000: 40.2 GB"),
        (["profile", "--dim", "h=2147483648"], "float32 1×3×2147483648×640: 15.0 TB"),
        (["bench", "--batch", "1,64", "--input", "image=1,3,4000,4000"], "at batch 64 is float32 64×3×4000×4000"),
        (["bench", "--input", "image=1,3,0,5"], "positive whole numbers"),
        (["quantize", "--mode", "dynamic", "-o", "q.onnx", "--input", f"image=1,3,{2**64},5"], "no tensor can have"),
        (["profile", "--dim", "h=0"], "a whole number from 1 to"),
    ],
    ids=["60000-pixels", "dim-2^31", "batch-64", "zero-dim", "dim-2^64", "zero-named-dim"],
)
def test_the_command_line_refuses_them_before_anything_runs_with_exit_2(
    args: list[str], said: str, image_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path)
    started: list[str] = []
    submit = ProcessBackend.submit
    monkeypatch.setattr(ProcessBackend, "submit", lambda self, spec: started.append(spec.name) or submit(self, spec))
    command, *options = args
    done = cli(command, str(image_model), *options, *(["--no-save"] if command == "bench" else []))
    assert done.returncode == 2 and said in done.stderr.replace("\\", ""), done.stderr[-2000:]
    assert "Traceback" not in done.stderr and "OverflowError" not in done.stderr
    # refused before any benchmark, profile or quantization (a shape that is no shape, before the model is read)
    assert started in (["intake.describe_files"], []), started


def _benchmark_page(model: Path, plan: list[BenchInput], monkeypatch: pytest.MonkeyPatch) -> AppTest:
    """The Benchmark page on ``model``, with ``plan`` as the plan table holds it once a person typed it."""
    monkeypatch.setenv("WORKBENCH_START_SAMPLE", "")
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.file_uploader(key="uploads").set_value((model.name, model.read_bytes(), "application/octet-stream")).run()
    at.session_state["input_plans"] = {at.session_state["model"].id: plan}
    at.switch_page("app_pages/benchmark.py").run()
    assert not at.exception
    return at


def test_the_plan_editor_shows_the_refusal_instead_of_the_run(
    image_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    at = _benchmark_page(
        image_model, [BenchInput(name="image", dtype="float32", shape=[1, 3, 60000, 60000], batch_axis=0)], monkeypatch
    )
    errors = [e.value.replace("\\", "") for e in at.error]
    assert any("1×3×60000×60000: 40.2 GB" in e and "WORKBENCH_WORKER_MEMORY_MB" in e for e in errors), errors
    assert not [b for b in at.button if b.label == "Run the benchmark"]  # nothing offered to run


def test_the_benchmark_page_refuses_a_sweep_whose_largest_batch_cannot_fit(
    image_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    at = _benchmark_page(
        image_model, [BenchInput(name="image", dtype="float32", shape=[1, 3, 4000, 4000], batch_axis=0)], monkeypatch
    )
    assert not at.error
    at.multiselect(key="bench_batches").set_value([1, 64])
    next(b for b in at.button if b.label == "Run the benchmark").click()
    at.run()
    errors = [e.value.replace("\\", "") for e in at.error]
    assert any("at batch 64 is float32 64×3×4000×4000: 11.4 GB" in e for e in errors), errors
    assert "bench" not in at.session_state  # no benchmark ran
