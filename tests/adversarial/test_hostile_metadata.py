"""Metadata written to mislead (core.model.metadata): code where a class list should be, nesting that would exhaust
the parser, sizes no image has, thousands of entries. Nothing is evaluated, everything is capped, and the plan
falls back to what the model itself says."""

from __future__ import annotations

from pathlib import Path

import onnx
from onnx import helper

from core.model.inputs import plan_inputs
from core.model.intake import IntakeRequest, describe_files
from core.model.metadata import MAX_ENTRIES, VALUE_CHARS
from tests import wild


def _with(entries: list[tuple[str, str]], tmp_path: Path, name: str):  # type: ignore[no-untyped-def]
    model = wild.yolo_model()
    del model.metadata_props[:]
    for key, value in entries:
        prop = model.metadata_props.add()
        prop.key, prop.value = key, value
    path = tmp_path / f"{name}.onnx"
    onnx.save(model, str(path))
    return describe_files(IntakeRequest(paths=[str(path)]))


def test_metadata_is_read_as_data_never_run_and_cut_to_size(tmp_path: Path) -> None:
    canary = tmp_path / "canary"
    record = _with(
        [
            ("author", "Ultralytics"),
            ("names", f"__import__('os').system('touch {canary}')"),
            ("imgsz", "[999999999, 320]"),
            ("stride", "1e9"),
            ("batch", "-1"),
            ("task", "detect<script>alert(1)</script>"),
            ("x" * 1000, "B" * 1_000_000),
        ],
        tmp_path,
        "code",
    )
    meta = record.metadata
    assert not canary.exists() and meta.classes == [] and meta.class_count == 0
    assert (meta.image_size, meta.stride, meta.batch, meta.task) == (
        [],
        None,
        None,
        "detectscriptalert1sc",
    )  # letters only, cut
    long_key = next(k for k in meta.entries if k.startswith("x"))
    assert len(long_key) == 200 and len(meta.entries[long_key]) == VALUE_CHARS
    assert meta.lengths[long_key] == 1_000_000
    (images,) = plan_inputs(record)  # no believable imgsz: a detector's usual side
    assert images.shape == [1, 3, 640, 640] and images.free[1].source.english() == "its name 'height'"

    nested = _with([("names", "[" * 200_000 + "]" * 200_000), ("character", "a\n" * 600_000)], tmp_path, "deep")
    assert nested.metadata.classes == [] and nested.metadata.lengths["character"] == 1_200_000

    many = helper.make_model(wild.yolo_model().graph)
    helper.set_model_props(many, {f"k{i}": str(i) for i in range(10_000)})
    onnx.save(many, str(tmp_path / "many.onnx"))
    meta = describe_files(IntakeRequest(paths=[str(tmp_path / "many.onnx")])).metadata
    assert len(meta.entries) == MAX_ENTRIES and meta.dropped == 10_000 - MAX_ENTRIES
