"""An input plan that cannot fit is refused before anything runs, naming the input, its shape and its size: a
1×3×60000×60000 image once ran 41 s until the worker was killed for memory, and a dim of 2³¹ raised a raw
OverflowError. Sizes are Python ints (nothing overflows), a batch sweep counts at its largest batch, and dims
that are zero, negative or past what ONNX can write are refused with the way to write them. The same holds where a
picture is made into an image-shaped input (the plan's form, --image): the image job decoded and resized for 21 s
before the worker was killed for memory, and a 2³¹ dim reached Pillow as a raw OverflowError."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper
from PIL import Image
from streamlit.testing.v1 import AppTest

from core.errors import PlanTooLargeError
from core.jobs import IMAGE_INPUT, run
from core.jobs.process import JobSpec, submit_spec
from core.model.data import ImageRequest, check_image_fits, image_bytes, image_input
from core.model.inputs import BenchInput, check_plan_memory, input_bytes
from tests.app.conftest import APP
from tests.cli import cli

WORKER = 6144 << 20  # the local default of worker_memory_mb
SETTING = " (setting WORKBENCH_WORKER_MEMORY_MB)"


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


def _picture(path: Path) -> Path:
    Image.new("RGB", (64, 48), (255, 0, 0)).save(path)
    return path


def _folder(tmp_path: Path) -> str:
    """A folder of the job's own (the sandbox never hands a job the one that holds the app's data folder)."""
    (tmp_path / "out").mkdir(exist_ok=True)
    return str(tmp_path / "out")


def _image(*shape: int) -> BenchInput:
    return BenchInput(name="image", dtype="float32", shape=list(shape), batch_axis=0)


def test_the_image_job_refuses_a_sixty_thousand_pixel_plan_before_it_reads_the_picture(tmp_path: Path) -> None:
    not_a_picture = tmp_path / "p.png"
    not_a_picture.write_bytes(b"\x89PNG\r\n\x1a\n not really")  # read, it would be refused as no image
    request = ImageRequest(
        image=str(not_a_picture), spec=_image(1, 3, 60000, 60000), out_dir=str(tmp_path), memory_bytes=WORKER,
        where=SETTING,
    )  # fmt: skip
    with pytest.raises(PlanTooLargeError) as refused:
        image_input(request)
    message = str(refused.value)
    assert "Input 'image' is float32 1×3×60000×60000: 40.2 GB, and making it from a picture takes 60.4 GB" in message
    assert "at most 6.0 GB (setting WORKBENCH_WORKER_MEMORY_MB)" in message and "No picture was read" in message


def test_in_the_worker_the_refusal_comes_back_by_name_at_once(tmp_path: Path) -> None:
    started = time.perf_counter()
    request = ImageRequest(
        image=str(_picture(tmp_path / "p.png")), spec=_image(1, 3, 60000, 60000), out_dir=_folder(tmp_path),
        memory_bytes=WORKER,
    )  # fmt: skip
    with pytest.raises(PlanTooLargeError, match=r"1×3×60000×60000: 40\.2 GB"):
        run(IMAGE_INPUT, request)
    assert time.perf_counter() - started < 15  # a worker's start, not 21 s of resizing


def test_a_dim_of_two_to_the_31_is_a_named_refusal_never_an_overflow(tmp_path: Path) -> None:
    picture, out = str(_picture(tmp_path / "p.png")), str(tmp_path)
    with pytest.raises(PlanTooLargeError, match=r"float32 1×3×2147483648×640: 15\.0 TB, and making it"):
        image_input(ImageRequest(image=picture, spec=_image(1, 3, 2**31, 640), out_dir=out, memory_bytes=WORKER))
    thin = _image(1, 1, 2**31, 1)  # 8 GB: a machine could hold it, but Pillow sizes a picture in C ints
    for memory in (1 << 50, None):
        with pytest.raises(PlanTooLargeError, match="no image is made more than 2,147,483,647 pixels high or wide"):
            image_input(ImageRequest(image=picture, spec=thin, out_dir=out, memory_bytes=memory))


def test_making_an_input_from_a_picture_counts_more_than_the_input() -> None:
    fits = _image(1, 3, 20000, 20000)
    check_plan_memory([fits], 1, WORKER)  # 4.5 GB: the input fits a worker; its picture, resized, does not
    with pytest.raises(PlanTooLargeError, match=r"4\.5 GB, and making it from a picture takes 6\.8 GB"):
        check_image_fits(fits, WORKER, SETTING)
    check_image_fits(_image(1, 3, 640, 640), WORKER)


def test_a_picture_is_made_into_a_sixteen_megapixel_input_within_what_is_counted(tmp_path: Path) -> None:
    """Bytes and a few float64 bands, not five whole copies: 1,278 MiB before (a worker of 448 MB was killed),
    about 300 MiB now, under the 339 MiB counted."""
    spec, limit = _image(1, 3, 4000, 4000), 448
    assert image_bytes(spec) <= limit << 20
    request = ImageRequest(
        image=str(_picture(tmp_path / "p.png")), spec=spec, out_dir=_folder(tmp_path), memory_bytes=limit << 20
    )
    made = submit_spec(JobSpec(name=IMAGE_INPUT.name, args={"request": request}, memory_mb=limit)).result()
    array = np.load(made.data, mmap_mode="r")
    assert array.shape == (1, 3, 4000, 4000) and array.dtype == np.float32
    assert float(array[0, 0, 2000, 2000]) == pytest.approx((1 - 0.485) / 0.229, rel=1e-5)  # red, ImageNet's way


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
        (["bench", "--image", "p.png", "--input", "image=1,3,20000,20000"], "making it from a picture takes 6.8 GB"),
        (["profile", "--image", "image=p.png", "--dim", "h=2147483648"], "float32 1×3×2147483648×640: 15.0 TB"),
    ],
    ids=["60000-pixels", "dim-2^31", "batch-64", "zero-dim", "dim-2^64", "zero-named-dim", "image", "image-dim-2^31"],
)
def test_the_command_line_refuses_them_before_anything_runs_with_exit_2(
    args: list[str], said: str, image_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs_run: list[str]
) -> None:
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path)
    _picture(tmp_path / "p.png")
    command, *options = args
    done = cli(command, str(image_model), *options, *(["--no-save"] if command == "bench" else []))
    assert done.returncode == 2 and said in done.stderr.replace("\\", ""), done.stderr[-2000:]
    assert "Traceback" not in done.stderr and "OverflowError" not in done.stderr
    # refused before any benchmark, profile or quantization (a shape that is no shape, before the model is read)
    assert jobs_run in (["intake.describe_files"], []), jobs_run


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


def test_the_plans_form_refuses_a_picture_it_could_not_make_before_one_is_given(
    image_model: Path, monkeypatch: pytest.MonkeyPatch, jobs_run: list[str]
) -> None:
    monkeypatch.setenv("WORKBENCH_WORKER_MEMORY_MB", "512")  # the input, 412 MB, fits; its picture, 682 MB, does not
    at = _benchmark_page(image_model, [_image(1, 3, 6000, 6000)], monkeypatch)
    errors = [e.value.replace("\\", "") for e in at.error]
    said = "Input 'image' is float32 1×3×6000×6000: 412.0 MB, and making it from a picture takes"
    assert any(said in e and "at most 512.0 MB (setting WORKBENCH_WORKER_MEMORY_MB)" in e for e in errors), errors
    assert not [u for u in at.get("file_uploader") if "_image_" in str(u.proto.id)]  # no picture is asked for
    assert IMAGE_INPUT.name not in jobs_run
