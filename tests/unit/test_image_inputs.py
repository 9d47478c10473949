"""A real image for an image-shaped input: decoded in the worker, resized to the plan, normalised as stated."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from PIL import Image

from core.errors import BenchmarkError, WorkbenchError
from core.jobs import IMAGE_INPUT, run
from core.model.data import ImageRequest
from core.model.inputs import BenchInput, describe_values, make_inputs, plan_inputs
from core.model.intake import IntakeRequest, describe_files
from core.notes import say
from tests import wild


def _photo(path: Path, size: tuple[int, int] = (320, 200)) -> Path:
    pixels = np.zeros((size[1], size[0], 3), np.uint8)
    pixels[:, : size[0] // 2] = (255, 0, 0)  # left half red, right half black
    Image.fromarray(pixels).save(path)
    return path


def test_an_image_becomes_the_detectors_input_at_the_plans_size(tmp_path: Path) -> None:
    onnx.save(wild.detector_model(), str(tmp_path / "det.onnx"))
    record = describe_files(IntakeRequest(paths=[str(tmp_path / "det.onnx")]))
    (spec,) = plan_inputs(record)
    request = ImageRequest(
        image=str(_photo(tmp_path / "photo.png")), spec=spec, out_dir=str(tmp_path), normalise="unit"
    )
    made = run(IMAGE_INPUT, request)  # in the worker, in its sandbox
    assert made.kind == "data" and made.shape == [1, 3, 640, 640]
    assert say(describe_values(made)) == "real data: photo.png, 320×200 resized to 640×640 (bilinear), scaled to [0, 1]"
    (feed,) = make_inputs([made], batch=2).values()
    assert feed.shape == (2, 3, 640, 640) and feed.dtype == np.float32
    assert feed[0, 0, 10, 10] == pytest.approx(1.0) and feed[0, 0, 10, 600] == pytest.approx(0.0)  # red, then black
    assert feed[0, 1].max() == pytest.approx(0.0)  # no green anywhere


def test_imagenet_normalisation_and_refusals(tmp_path: Path) -> None:
    from core.model.data import image_input

    spec = BenchInput(name="x", dtype="float32", shape=[1, 3, 8, 8], batch_axis=0)
    made = image_input(ImageRequest(image=str(_photo(tmp_path / "p.png", (8, 8))), spec=spec, out_dir=str(tmp_path)))
    array = np.load(made.data)
    assert array[0, 0, 0, 0] == pytest.approx((1 - 0.485) / 0.229, rel=1e-5)
    assert made.why is not None and "ImageNet" in say(made.why)
    (tmp_path / "not.png").write_bytes(b"\x89PNG\r\n\x1a\n not really")
    with pytest.raises(BenchmarkError, match="could not be read as an image"):
        image_input(ImageRequest(image=str(tmp_path / "not.png"), spec=spec, out_dir=str(tmp_path)))
    with pytest.raises(BenchmarkError, match="not shaped like an image"):
        ids = BenchInput(name="ids", dtype="int64", shape=[1, 128], batch_axis=0)
        image_input(ImageRequest(image=str(tmp_path / "p.png"), spec=ids, out_dir=str(tmp_path)))
    moved = BenchInput(name="x", dtype="float32", shape=[1, 3, 16, 16], batch_axis=0, values="data", data=made.data)
    with pytest.raises(BenchmarkError, match="has shape \\[1, 3, 8, 8\\], and the plan says \\[1, 3, 16, 16\\]"):
        make_inputs([moved], 1)


def test_real_inputs_from_an_npz_on_the_command_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    from tests.cli import cli

    onnx.save(wild.vad_model(), str(tmp_path / "vad.onnx"))
    audio = np.sin(np.linspace(0, 200, 4 * 1024, dtype=np.float32)).reshape(4, 1024)  # 4 samples of 1,024
    np.savez(tmp_path / "real.npz", input=audio)
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    done = cli("bench", str(tmp_path / "vad.onnx"), "--data", str(tmp_path / "real.npz"), "--no-save", "--batch", "1,2",
               "--threads", "1", "--iters", "5", "--warmup", "1", "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    used = {i["name"]: i for i in json.loads(done.stdout)["inputs"]}
    assert used["input"]["shape"] == [1, 1024] and used["input"]["values"] == "real data: array 'input' of real.npz"
    assert used["sr"]["values"].startswith("all 16000")  # the inputs it lacks keep their values
    np.savez(tmp_path / "bad.npz", input=audio.astype(np.float64), other=audio)
    done = cli("bench", str(tmp_path / "vad.onnx"), "--data", str(tmp_path / "bad.npz"), "--no-save")
    assert done.returncode != 0 and "match no input" in done.stderr
    np.savez(tmp_path / "bad.npz", input=audio.astype(np.float64))
    done = cli("bench", str(tmp_path / "vad.onnx"), "--data", str(tmp_path / "bad.npz"), "--no-save")
    assert done.returncode != 0 and "astype(np.float32)" in done.stderr


def test_a_picture_on_the_command_line_becomes_the_image_input(tmp_path: Path) -> None:
    import argparse

    from core.cli.plan import add_plan_arguments, plan_from_args

    parser = argparse.ArgumentParser()
    add_plan_arguments(parser)
    onnx.save(wild.detector_model(), str(tmp_path / "det.onnx"))
    detector = describe_files(IntakeRequest(paths=[str(tmp_path / "det.onnx")]))
    photo = str(_photo(tmp_path / "photo.png"))
    for given in (photo, f"{detector.inputs[0].name}={photo}"):  # the one image-shaped input, or it by name
        args = parser.parse_args(["--image", given, "--normalise", "unit"])
        (made,) = plan_from_args(detector, None, args, tmp_path / "work")
        assert (
            say(describe_values(made))
            == "real data: photo.png, 320×200 resized to 640×640 (bilinear), scaled to [0, 1]"
        )
    with pytest.raises(WorkbenchError, match=r"--image 'nothing\.png': no such file"):
        plan_from_args(detector, None, parser.parse_args(["--image", "nothing.png"]), tmp_path / "work")
    onnx.save(wild.vad_model(), str(tmp_path / "vad.onnx"))
    vad = describe_files(IntakeRequest(paths=[str(tmp_path / "vad.onnx")]))
    with pytest.raises(WorkbenchError, match="no input shaped like an image; its inputs are input, "):
        plan_from_args(vad, None, parser.parse_args(["--image", photo]), tmp_path / "work")
    with pytest.raises(WorkbenchError, match="--image input: that input is not shaped like an image"):
        plan_from_args(vad, None, parser.parse_args(["--image", f"input={photo}"]), tmp_path / "work")
