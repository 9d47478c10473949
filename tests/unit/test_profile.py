"""Profile: ONNX Runtime's per-node trace and PyTorch eager's per-layer times on the same inputs, lined up layer
by layer, on our samples (both exporters) and on a real text detector; and the command line's JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from core.model import zoo
from core.model.inputs import BenchInput
from core.model.measured import MeasuredModel
from core.model.torchload import TorchSource
from core.notes import note, say
from core.profile import ProfileRequest, profile_model
from core.profile.match import layer_rows
from core.profile.records import EagerModule, NodeTime
from core.profile.words import FUSED_WITH, IN_SCOPE, OWN_TIME, note_text
from tests.cli import cli
from tests.real_models import real_model


def _exported(name: str, folder: Path, dynamo: bool) -> tuple[Path, list[BenchInput]]:
    model = zoo.build_model(name).eval()
    example = tuple(zoo.example_inputs(name).values())
    path = folder / f"{name}-{'dynamo' if dynamo else 'legacy'}.onnx"
    torch.onnx.export(model, example, str(path), dynamo=dynamo)
    import onnx

    first = onnx.load(str(path)).graph.input[0].name
    return path, [BenchInput(name=first, dtype="float32", shape=list(example[0].shape), batch_axis=0)]


@pytest.mark.parametrize("dynamo", [False, True], ids=["legacy", "dynamo"])
def test_the_resnet_samples_convolutions_are_matched_to_their_nodes(tmp_path: Path, dynamo: bool) -> None:
    """Nested modules (3.conv1, 3.bn1…) through both exporters' naming: every Conv2d shares a row with the ONNX
    Runtime node it became, BatchNorm folded in, the Relu fused."""
    path, inputs = _exported("resnet", tmp_path, dynamo)
    model = MeasuredModel(path=str(path), inputs=inputs, torch_source=TorchSource(kind="sample", name="resnet"))
    report = profile_model(ProfileRequest(model=model, iterations=10, warmup=2, threads=1))
    assert report.op_types[0].op_type == "Conv" and 0.5 <= report.kernel_ms / report.call_ms <= 1.0
    conv_rows = [r for r in report.matched if "Conv2d" in r.kinds]
    assert len(conv_rows) == 5 and all(r.ort_ms is not None and r.nodes for r in conv_rows)
    assert all("BatchNorm2d" in r.kinds for r in conv_rows)  # folded into its Conv: the same row
    assert sum(note(FUSED_WITH, ops="Relu") in r.note for r in conv_rows) >= 3
    assert [r.modules for r in report.matched if "Linear" in r.kinds] == [["7"]]
    # the graph's colours account for every kernel but the ones ONNX Runtime inserted (layout reorders)
    inserted = sum(n.mean_ms for n in report.nodes if not n.originals)
    assert sum(report.node_ms) == pytest.approx(report.kernel_ms - inserted)


def test_a_real_text_detector_is_profiled_at_a_real_image_size(tmp_path: Path) -> None:
    path = real_model("ocr_det")
    inputs = [BenchInput(name="x", dtype="float32", shape=[1, 3, 320, 320], batch_axis=0)]
    report = profile_model(
        ProfileRequest(model=MeasuredModel(path=str(path), inputs=inputs), iterations=4, warmup=1, level="all")
    )
    assert 0.5 <= report.kernel_ms / report.call_ms <= 1.0, (report.kernel_ms, report.call_ms)
    assert report.op_types[0].op_type in ("Conv", "FusedConv") and report.eager is None
    assert any(n.input_shapes and "320" in n.input_shapes[0] for n in report.nodes)


def test_matching_joins_folded_layers_and_says_what_it_could_not_match() -> None:
    modules = [EagerModule(name="conv", kind="Conv2d", mean_ms=1.0, share=0.5, calls=1),
               EagerModule(name="bn", kind="BatchNorm2d", mean_ms=0.2, share=0.1, calls=1),
               EagerModule(name="relu", kind="ReLU", mean_ms=0.1, share=0.05, calls=1),
               EagerModule(name="drop", kind="Dropout", mean_ms=0.01, share=0.0, calls=1),
               EagerModule(name="head", kind="Linear", mean_ms=0.3, share=0.1, calls=1)]  # fmt: skip
    fused = NodeTime(name="relu_nchwc", op_type="Conv", provider="CPU", mean_ms=0.4, share=0.4, calls=1,
                     originals=["c", "r"], module="conv", modules=["conv", "relu"],
                     note=note(FUSED_WITH, ops="Relu"))  # fmt: skip
    gemm = NodeTime(name="gemm", op_type="Gemm", provider="CPU", mean_ms=0.1, share=0.1, calls=1, originals=["g"],
                    module="head", modules=["head"])  # fmt: skip
    add = NodeTime(name="add", op_type="Add", provider="CPU", mean_ms=0.05, share=0.05, calls=1, originals=["a"],
                   module="block", modules=["block"])  # fmt: skip
    rows, notes = layer_rows(modules, [fused, gemm, add])
    assert [r.modules for r in rows] == [["conv", "bn", "relu"], ["drop", "head"], []]
    assert rows[0].ort_ms == 0.4 and rows[0].eager_ms == pytest.approx(1.3)
    assert rows[0].note == [note(FUSED_WITH, ops="Relu")] and note_text(rows[0].note) == "fused with its Relu"
    assert rows[2].note == [note(IN_SCOPE, scope="block")] and rows[2].ort_ms == 0.05
    assert note_text(rows[2].note) == "in 'block' itself"
    assert not notes


def test_a_rows_notes_are_clauses_said_in_the_readers_language() -> None:
    """A row made of several nodes keeps each node's note once, as clauses of one sentence, joined the reader's
    way (a model's op names, from the graph, stay as they are)."""
    from core.i18n import using

    modules = [EagerModule(name="block", kind="Block", mean_ms=1.0, share=1.0, calls=1)]
    one, two, three = (
        NodeTime(name=f"n{k}", op_type="Conv", provider="CPU", mean_ms=0.1, share=0.1, calls=1, originals=[f"c{k}"],
                 module="block", modules=["block"], note=said)
        for k, said in enumerate([note(FUSED_WITH, ops="Relu"), note(OWN_TIME), note(FUSED_WITH, ops="Relu")])
    )  # fmt: skip
    ((row,), _notes) = layer_rows(modules, [one, two, three])
    assert row.note == [note(FUSED_WITH, ops="Relu"), note(OWN_TIME)]
    assert note_text(row.note) == (
        "fused with its Relu; its own time: the nodes of its branches or body are listed on their own"
    )
    with using("zh"):
        chinese = note_text(row.note)
    assert "；" in chinese and "Relu" in chinese and "fused" not in chinese


def test_the_command_line_prints_and_writes_json(tmp_path: Path) -> None:
    from tests import builders

    model = str(builders.exported_sample("tinycnn", tmp_path))
    done = cli("profile", model, "--torch", "sample:tinycnn", "--iters", "10", "--warmup", "2", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert {"nodes", "op_types", "eager", "matched", "overhead_ms", "inputs", "activity", "cpu_ms"} <= set(data)
    assert {"name", "op_type", "provider", "mean_ms", "share"} <= set(data["nodes"][0])
    assert data["op_types"][0]["op_type"] == "Conv" and data["eager"]["modules"] and data["eager"]["ops"]
    assert data["inputs"][0]["shape"] == [1, 3, 112, 112]
    from core.jobs.wire import from_data
    from core.profile.records import ProfileReport
    from ui.profile_view import treemap_figure

    labels = list(treemap_figure(from_data(data, ProfileReport)).data[0].labels)  # a Sequential's modules: indices
    assert "3 · MaxPool2d" in labels and "9 · Linear" in labels
    assert any(label.endswith(" · Conv2d + BatchNorm2d + ReLU") for label in labels)  # one node made of three
    text = cli("profile", model, "--iters", "5", "--warmup", "1", "--level", "extended")
    assert text.returncode == 0 and "FusedConv" in text.stdout and "eager" not in text.stdout.split("\n")[0]


def test_if_branches_are_not_counted_twice() -> None:
    """silero-vad runs its network inside an If: the If's kernel time holds its branch's nodes, which the trace
    lists too. The If keeps only its own time, so the kernels never add up to more than the call."""
    from core.model.inputs import plan_inputs
    from core.model.intake import IntakeRequest, describe_files

    path = real_model("silero_vad")
    model = MeasuredModel(path=str(path), inputs=plan_inputs(describe_files(IntakeRequest(paths=[str(path)]))))
    report = profile_model(ProfileRequest(model=model, iterations=10, warmup=2))
    assert report.kernel_ms <= report.call_ms * 1.02
    assert any(n.op_type == "If" and n.note == note(OWN_TIME) for n in report.nodes)
    assert any(n.op_type == "If" and say(n.note).startswith("its own time") for n in report.nodes if n.note)
    assert any(n.op_type == "LSTM" for n in report.nodes)  # the branch's nodes, each on its own


def test_a_model_that_fails_on_guessed_sizes_says_which_were_guessed(tmp_path: Path) -> None:
    """PaddleOCR's recognizer leaves its height and width open. Its `character` list says it reads a line of text,
    so the plan runs it at 48×320 and it profiles; without that metadata the plan can only guess an image's
    640×640, it fails inside, and the message says which sizes were guessed and where to set them."""
    import onnx

    from core.errors import BenchmarkError
    from core.model.inputs import plan_inputs
    from core.model.intake import IntakeRequest, describe_files

    path = real_model("ocr_rec")
    planned = plan_inputs(describe_files(IntakeRequest(paths=[str(path)])))
    assert [i.shape for i in planned] == [[1, 3, 48, 320]]
    report = profile_model(ProfileRequest(model=MeasuredModel(path=str(path), inputs=planned), iterations=3, warmup=1))
    assert report.nodes and report.kernel_ms <= report.call_ms * 1.02
    bare = onnx.load(str(path))
    del bare.metadata_props[:]
    onnx.save(bare, str(tmp_path / "rec.onnx"))
    with pytest.raises(BenchmarkError, match=r"were guessed \('x' axis 2 = 640.*set them in the input plan"):
        guessed = plan_inputs(describe_files(IntakeRequest(paths=[str(tmp_path / "rec.onnx")])))
        profile_model(
            ProfileRequest(model=MeasuredModel(path=str(tmp_path / "rec.onnx"), inputs=guessed), iterations=2, warmup=0)
        )
