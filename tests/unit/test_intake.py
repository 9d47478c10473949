"""Intake: every format recognised from its bytes, every refusal with a message that says what to do."""

from __future__ import annotations

import dataclasses
import os
import pickle
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
import torch

from core.errors import (
    IntakeError,
    LimitExceededError,
    MissingDataError,
    NoMatchingArchitectureError,
    UnsafeModelError,
    UnsupportedFormatError,
)
from core.model import zoo
from core.model.intake import IntakeRequest, describe_files, detect_format
from core.model.notes import CHECKPOINT_ENTRY, CONSTANT_WEIGHTS, DATAPARALLEL, SUBGRAPHS, note
from core.model.pickles import pickle_globals
from core.model.records import ModelRecord
from core.notes import say_all
from core.settings import IntakeLimits
from tests import builders


def describe(*paths: Path, **limits: Any) -> ModelRecord:
    """describe_files with the default limits, or with the ones given changed."""
    return describe_files(
        IntakeRequest(paths=[str(p) for p in paths]), limits=dataclasses.replace(IntakeLimits(), **limits)
    )


# ---------------------------------------------------------------------------------------------- ONNX
@pytest.mark.parametrize(
    "builder",
    [
        builders.relu_model,
        builders.constant_weights_model,
        builders.control_flow_model,
        builders.fp16_model,
        builders.mixed_inputs_model,
        builders.chain_model,
        builders.function_model,
    ],
)
def test_onnx_models_in_the_wild_are_recognised_and_described(tmp_path: Path, builder) -> None:
    model = builder()
    path = builders.write(model, tmp_path / "m.onnx")
    assert detect_format(path) == "onnx"
    record = describe(path)
    assert record.format == "onnx"
    assert record.node_count == len(model.graph.node)
    assert record.opset == 17 and record.ir_version == 8
    assert [i.name for i in record.inputs] == [
        i.name for i in model.graph.input if i.name not in {t.name for t in model.graph.initializer}
    ]
    assert record.size_bytes == path.stat().st_size
    assert len(record.id) == 64


def test_symbolic_dims_keep_their_names_and_empty_ones_show_as_unknown(tmp_path: Path) -> None:
    record = describe(builders.write(builders.mixed_inputs_model(), tmp_path / "m.onnx"))
    specs = {s.name: s for s in record.inputs}
    assert specs["input_ids"].dtype == "int64" and specs["input_ids"].shape == ["batch", "-1"]
    assert specs["mask"].dtype == "bool" and specs["mask"].shape == ["?", "?"]
    assert specs["scale"].dtype == "float32" and specs["scale"].shape == [1]
    assert record.outputs[0].shape is None  # no shape at all: rank unknown


def test_weights_in_constant_nodes_count_as_parameters(tmp_path: Path) -> None:
    record = describe(builders.write(builders.constant_weights_model(), tmp_path / "m.onnx"))
    assert record.parameter_count == 8 * 4 + 4
    assert note(CONSTANT_WEIGHTS, count=2) in record.notes  # kept as data: the template and its value


def test_subgraph_nodes_are_counted_in_the_notes(tmp_path: Path) -> None:
    record = describe(builders.write(builders.control_flow_model(), tmp_path / "m.onnx"))
    assert record.node_count == 2
    assert note(SUBGRAPHS, subgraphs=3, nodes=6) in record.notes
    assert "3 subgraph(s) (If/Loop/Scan), 6 nodes in all." in say_all(record.notes)


def test_fp16_weights_are_sized_at_two_bytes(tmp_path: Path) -> None:
    record = describe(builders.write(builders.fp16_model(), tmp_path / "m.onnx"))
    assert record.inputs[0].dtype == "float16"
    assert record.parameter_count == 16


def test_external_data_uploaded_beside_the_model_is_found_and_hashed(tmp_path: Path) -> None:
    main = builders.save_with_external_data(builders.chain_model(40), tmp_path / "up")
    data = main.with_name("model.onnx.data")
    record = describe(main, data)
    assert record.external_data == ["model.onnx.data"]
    assert record.size_bytes == main.stat().st_size + data.stat().st_size
    assert record.parameter_count == 20 * 16
    # the data file is part of the identity: a different data file gives a different id
    data.write_bytes(bytes(reversed(data.read_bytes())))
    assert describe(main, data).id != record.id


def test_external_data_in_a_zip_of_the_model_folder(tmp_path: Path) -> None:
    main = builders.save_with_external_data(builders.chain_model(40), tmp_path / "folder")
    bundle = tmp_path / "up" / "model.zip"
    bundle.parent.mkdir()
    with zipfile.ZipFile(bundle, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.write(main, "model/model.onnx")
        zf.write(main.with_name("model.onnx.data"), "model/model.onnx.data")
    assert detect_format(bundle) == "onnx-bundle"
    record = describe(bundle)
    assert record.format == "onnx" and record.external_data == ["model.onnx.data"]


def test_missing_external_data_file_says_to_upload_it_and_what_it_holds(tmp_path: Path) -> None:
    """MissingDataError: the page says the upload limit under it (the box refuses a file over it unseen)."""
    main = builders.save_with_external_data(builders.chain_model(10), tmp_path / "up")
    main.with_name("model.onnx.data").unlink()
    with pytest.raises(MissingDataError, match=r"model\.onnx\.data' \(at least 320 B\), which was not uploaded"):
        describe(main)


@pytest.mark.parametrize(
    ("location", "reason"),
    [
        ("../../etc/passwd", "outside the model's folder"),
        ("a/../../x", "outside the model's folder"),
        ("/etc/passwd", "absolute path"),
        ("C:\\Windows\\win.ini", "absolute path"),
    ],
)
def test_external_data_outside_the_folder_is_refused_before_it_is_opened(
    tmp_path: Path, location: str, reason: str
) -> None:
    model = builders.chain_model(4)
    builders.set_external_location(model, location)
    with pytest.raises(UnsafeModelError, match=reason):
        describe(builders.write(model, tmp_path / "m.onnx"))


def test_symlinked_data_file_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "secret.bin"
    secret.write_bytes(b"\0" * 1024)
    folder = tmp_path / "up"
    folder.mkdir()
    os.symlink(secret, folder / "w.data")
    model = builders.chain_model(4)
    builders.set_external_location(model, "w.data")
    with pytest.raises(UnsafeModelError, match="is a link"):
        describe(builders.write(model, folder / "m.onnx"))


@pytest.mark.parametrize(("offset", "length"), [(-8, 64), (10**15, 64), (0, 10**12)])
def test_external_data_offsets_past_the_file_are_refused(tmp_path: Path, offset: int, length: int) -> None:
    folder = tmp_path / "up"
    folder.mkdir()
    (folder / "w.data").write_bytes(b"\0" * 64)
    model = builders.chain_model(4)
    builders.set_external_location(model, "w.data", offset, length)
    with pytest.raises(UnsafeModelError, match=r"negative|has only"):
        describe(builders.write(model, folder / "m.onnx"))


def test_node_and_weight_limits_are_enforced(tmp_path: Path) -> None:
    path = builders.write(builders.chain_model(400), tmp_path / "m.onnx")
    with pytest.raises(LimitExceededError, match=r"400 nodes.*at most 100"):
        describe(path, max_nodes=100)
    with pytest.raises(LimitExceededError, match="WORKBENCH_MAX_INITIALIZER_MB"):
        describe(path, max_initializer_bytes=1000)


def test_zero_bytes_random_bytes_and_truncated_onnx_get_their_own_messages(tmp_path: Path) -> None:
    empty = tmp_path / "empty.onnx"
    empty.write_bytes(b"")
    with pytest.raises(UnsupportedFormatError, match="is empty"):
        describe(empty)
    noise = tmp_path / "noise.onnx"
    noise.write_bytes(np.random.default_rng(1).bytes(4096))
    with pytest.raises(UnsupportedFormatError, match="not a model format"):
        describe(noise)
    whole = builders.chain_model(40).SerializeToString()
    cut = tmp_path / "cut.onnx"
    cut.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(IntakeError, match="truncated or damaged"):
        describe(cut)


def test_model_without_graph_is_refused(tmp_path: Path) -> None:
    model = onnx.ModelProto(ir_version=8, producer_name="nothing")
    model.opset_import.add(domain="", version=17)
    path = tmp_path / "nograph.onnx"
    path.write_bytes(model.SerializeToString())
    with pytest.raises(IntakeError):
        describe(path)


# ---------------------------------------------------------------------------------------------- PyTorch
def test_state_dict_loads_into_the_matching_sample_architecture(tmp_path: Path) -> None:
    path = tmp_path / "weights.pt"
    torch.save(zoo.build_model("tinycnn").state_dict(), path)
    assert detect_format(path) == "state_dict-zip"
    record = describe(path)
    assert record.format == "state_dict" and record.architecture == "tinycnn"
    assert record.parameter_count == 256_074
    assert [m.architecture for m in record.architecture_matches if m.matches] == ["tinycnn"]
    assert record.inputs[0].shape == [1, 3, 112, 112]


def test_checkpoint_dicts_and_dataparallel_prefixes_are_unwrapped(tmp_path: Path) -> None:
    weights = {"module." + k: v for k, v in zoo.build_model("mlp").state_dict().items()}
    path = tmp_path / "ckpt.pth"
    torch.save({"epoch": 3, "state_dict": weights}, path)
    record = describe(path)
    assert record.architecture == "mlp"
    assert note(CHECKPOINT_ENTRY, key="state_dict") in record.notes
    assert note(DATAPARALLEL) in record.notes


def test_legacy_torch_save_format_is_read_with_weights_only(tmp_path: Path) -> None:
    path = tmp_path / "legacy.pt"
    torch.save(zoo.build_model("classifier").state_dict(), path, _use_new_zipfile_serialization=False)
    assert detect_format(path) == "legacy-torch"
    assert describe(path).architecture == "classifier"


def test_state_dict_matching_no_architecture_says_why(tmp_path: Path) -> None:
    weights = zoo.build_model("tinycnn").state_dict()
    weights["9.weight"] = torch.zeros(10, 999)  # wrong shape for the head
    weights["extra.bias"] = torch.zeros(3)
    path = tmp_path / "wrong.pt"
    torch.save(weights, path)
    with pytest.raises(NoMatchingArchitectureError) as info:
        describe(path)
    message = str(info.value)
    assert (
        "tinycnn: 1 unexpected (extra.bias); 1 wrong shape (9.weight: file [10, 999], tinycnn [10, 25088])" in message
    )


def test_safetensors_weights_load_into_the_sample(tmp_path: Path) -> None:
    from safetensors.torch import save_file

    path = tmp_path / "w.safetensors"
    save_file({k: v.contiguous() for k, v in zoo.build_model("resnet").state_dict().items()}, str(path))
    assert detect_format(path) == "safetensors"
    record = describe(path)
    assert record.format == "safetensors" and record.architecture == "resnet"


def test_whole_pickled_module_is_refused_with_how_to_save_it(tmp_path: Path) -> None:
    path = tmp_path / "whole.pt"
    torch.save(zoo.build_model("classifier"), path)
    with pytest.raises(UnsafeModelError, match="whole pickled model") as info:
        describe(path)
    assert "torch.save(model.state_dict()" in str(info.value)
    assert "torch.jit.save" in str(info.value) and "torch.export.save" in str(info.value)


class _Exploit:
    def __init__(self, canary: Path) -> None:
        self.canary = canary

    def __reduce__(self):
        return (os.system, (f"touch {self.canary}",))


@pytest.mark.parametrize("name", ["evil.pt", "evil.pth", "evil.onnx"])
def test_pickle_that_runs_a_shell_command_is_never_opened(tmp_path: Path, name: str) -> None:
    canary = tmp_path / "canary"
    raw = tmp_path / name
    raw.write_bytes(pickle.dumps(_Exploit(canary), protocol=4))
    with pytest.raises(UnsafeModelError, match=r"posix\.system|os\.system"):
        describe(raw)
    # the same payload inside a torch-style zip
    zipped = tmp_path / ("zip_" + name)
    with zipfile.ZipFile(zipped, "w") as zf:
        zf.writestr("archive/data.pkl", pickle.dumps({"w": _Exploit(canary)}, protocol=2))
    with pytest.raises(UnsafeModelError, match="could run any code"):
        describe(zipped)
    assert not canary.exists()


def test_pickle_globals_are_read_without_running_anything(tmp_path: Path) -> None:
    found = pickle_globals(pickle.dumps(_Exploit(tmp_path / "c"), protocol=4))
    assert found == ["posix.system"] or found == ["nt.system"]
    assert not (tmp_path / "c").exists()


def test_zip_bomb_is_refused_before_unpacking(tmp_path: Path) -> None:
    path = tmp_path / "bomb.pt"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("archive/data.pkl", pickle.dumps({}, protocol=2))
        zf.writestr("archive/data/0", b"\0" * (64 << 20))
    with pytest.raises(UnsafeModelError, match="zip bomb"):
        describe(path)


def test_torchscript_archive_is_described_and_refused_when_code_archives_are_off(tmp_path: Path) -> None:
    path = tmp_path / "scripted.pt"
    torch.jit.save(torch.jit.script(zoo.build_model("mlp")), str(path))
    assert detect_format(path) == "torchscript"
    record = describe(path)
    assert record.format == "torchscript" and record.parameter_count == 235_146
    assert record.inputs[0].name == "input"
    with pytest.raises(UnsafeModelError, match="WORKBENCH_ALLOW_CODE_ARCHIVES"):
        describe(path, allow_code_archives=False)


def test_pt2_program_keeps_its_dynamic_dims(tmp_path: Path) -> None:
    model = zoo.build_model("mlp")
    batch = torch.export.Dim("batch", min=1, max=64)
    program = torch.export.export(model, (torch.randn(2, 784),), dynamic_shapes=({0: batch},))
    path = tmp_path / "program.pt2"
    torch.export.save(program, str(path))
    assert detect_format(path) == "pt2"
    record = describe(path)
    assert record.format == "pt2" and record.parameter_count == 235_146
    assert record.inputs[0].shape == [2, 784]  # the example input saved with the program
    assert list(record.inputs[0].dynamic_axes) == ["0"]  # its batch dim is symbolic
    assert record.outputs[0].shape[1] == 10
    with pytest.raises(UnsafeModelError):
        describe(path, allow_code_archives=False)


def test_format_comes_from_the_bytes_not_the_name(tmp_path: Path) -> None:
    onnx_named_pt = builders.write(builders.relu_model(), tmp_path / "actually_onnx.pt")
    assert describe(onnx_named_pt).format == "onnx"
    weights_named_onnx = tmp_path / "weights.onnx"
    torch.save(zoo.build_model("classifier").state_dict(), weights_named_onnx)
    assert describe(weights_named_onnx).architecture == "classifier"


def test_two_models_in_one_upload_are_refused(tmp_path: Path) -> None:
    a = builders.write(builders.relu_model(), tmp_path / "a.onnx")
    b = builders.write(builders.fp16_model(), tmp_path / "b.onnx")
    with pytest.raises(IntakeError, match="upload one model at a time"):
        describe(a, b)
