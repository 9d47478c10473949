"""Export: both exporters on the zoo, opsets honoured or reported, dynamic axes proven by running them."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import msgspec
import onnx
import onnxruntime as ort
import pytest
import torch

from core.errors import ExportError
from core.export import (
    ExportOptions,
    ExportReport,
    ExportRequest,
    choose_exporter,
    default_options,
    export_model,
    plain_warnings,
    reuse,
)
from core.export.messages import REPEATED
from core.jobs import EXPORT, JobHandle, JobSpec, run
from core.jobs.reused import Answered
from core.model import zoo
from core.model.inputs import plan_inputs
from core.model.intake import IntakeRequest, describe_files
from core.model.records import ModelRecord
from core.model.torchload import TorchSource
from core.notes import say, say_all
from core.settings import PROJECT_ROOT, load_settings
from tests.cli import cli
from ui.charts import op_count_figure, op_count_frame


def run_export(tmp_path: Path, name: str, **changes: object):
    options = default_options(zoo.describe_sample(name))
    for key, value in changes.items():
        setattr(options, key, value)
    return export_model(
        ExportRequest(
            source=TorchSource(kind="sample", name=name),
            options=options,
            out_dir=str(tmp_path),
            file_name=f"{name}.onnx",
        )
    )


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., ExportReport]:
    """``run_export``, made once per sample and settings for the module: several tests read the same export (a
    sample's default export with either exporter), each only reading its report and files."""
    done: dict[str, ExportReport] = {}

    def export(name: str, **changes: object) -> ExportReport:
        options = default_options(zoo.describe_sample(name))
        for key, value in changes.items():
            setattr(options, key, value)
        settings = json.dumps([name, dataclasses.asdict(options)], sort_keys=True)
        if settings not in done:
            done[settings] = run_export(tmp_path_factory.mktemp(name), name, **changes)
        return done[settings]

    return export


@pytest.mark.parametrize("exporter", ["legacy", "dynamo"])
@pytest.mark.parametrize("name", ["tinycnn", "classifier", "mlp", "resnet"])
def test_every_sample_exports_and_matches_pytorch_at_two_batch_sizes(
    exported: Callable[..., ExportReport], name: str, exporter: str
) -> None:
    report = exported(name, exporter=exporter)
    assert report.ok, [c for c in report.checks if not c.ok] + [t for t in report.trials if not t.ok]
    assert [t.label for t in report.trials] == ["export shape", "batch = 3"]
    assert all(d.max_abs < 1e-4 for t in report.trials for d in t.diffs)
    assert report.record is not None and report.record.format == "onnx"
    shape = report.record.inputs[0].shape
    assert shape is not None and shape[0] == "batch"
    assert report.opset_produced == 18


def test_transformer_exports_with_dynamic_batch_and_sequence_through_dynamo(tmp_path: Path) -> None:
    report = run_export(tmp_path, "transformer", exporter="dynamo")
    assert report.ok
    assert [t.label for t in report.trials] == ["export shape", "batch = 3", "seq = 21"]
    assert report.record.inputs[0].shape == ["batch", "seq", 64]


def test_legacy_exporter_bakes_the_sequence_length_and_is_caught(tmp_path: Path) -> None:
    report = run_export(tmp_path, "transformer", exporter="legacy")
    assert not report.ok
    assert all(c.ok for c in report.checks), "the checker and ORT accept the model: only running it reveals the bug"
    seq = next(t for t in report.trials if t.label == "seq = 21")
    assert not seq.ok and seq.axis is not None and say(seq.axis) == "tokens axis 1 (seq)"
    assert seq.error is not None and "not really dynamic" in say(seq.error) and "Reshape" in say(seq.error)
    assert seq.error.values["axis"] == seq.axis  # the axis is a clause of the error, as data
    assert next(t for t in report.trials if t.label == "batch = 3").ok


def test_dynamo_asked_for_opset_11_says_what_it_produced(tmp_path: Path) -> None:
    report = run_export(tmp_path, "tinycnn", exporter="dynamo", opset=11)
    assert report.opset_requested == 11 and report.opset_produced == 18
    assert report.opset_note is not None and report.opset_note.severity == "warning"
    assert "produced opset 18" in say(report.opset_note) and "legacy exporter" in say(report.opset_note)
    assert onnx.load(report.onnx_path).opset_import[0].version == 18


def test_legacy_exporter_honours_opset_11(tmp_path: Path) -> None:
    report = run_export(tmp_path, "tinycnn", exporter="legacy", opset=11)
    assert report.ok and report.opset_produced == 11 and report.opset_note is None


def test_batchnorm_is_folded_with_optimize_and_kept_without(
    tmp_path: Path, exported: Callable[..., ExportReport]
) -> None:
    folded = exported("tinycnn", exporter="legacy", optimize=True)  # the sample's default legacy export
    kept = run_export(tmp_path / "b", "tinycnn", exporter="legacy", optimize=False)
    assert "BatchNormalization" not in folded.onnx_ops
    assert "2 BatchNorm layer(s) were folded into the preceding Conv weights" in say(folded.changes[0])
    assert kept.onnx_ops.get("BatchNormalization") == 2
    assert any("stayed as BatchNormalization" in c for c in say_all(kept.changes))
    assert folded.ok and kept.ok


def test_external_data_writes_a_data_file_that_loads(tmp_path: Path) -> None:
    report = run_export(tmp_path, "mlp", exporter="dynamo", external_data=True)
    assert report.ok and len(report.files) == 2 and report.files[1].endswith(".onnx.data")
    assert report.record.external_data == ["mlp.onnx.data"]


def test_torchscript_archive_exports_with_the_legacy_exporter(tmp_path: Path) -> None:
    path = tmp_path / "scripted.pt"
    torch.jit.save(torch.jit.trace(zoo.build_model("mlp"), torch.randn(1, 784)), str(path))
    record = describe_files(IntakeRequest(paths=[str(path)]))
    assert record.inputs[0].shape is None
    with pytest.raises(ExportError, match="does not say the shape"):
        default_options(record)
    assert choose_exporter("torchscript", "dynamo")[0] == "legacy"
    options = ExportOptions(input_shapes={"x": [2, 784]}, dynamic_axes={"x": {"0": "batch"}}, exporter="dynamo")
    report = export_model(
        ExportRequest(
            source=TorchSource(kind="torchscript", path=str(path)), options=options, out_dir=str(tmp_path / "o")
        )
    )
    assert report.exporter == "legacy" and "ScriptModule" in say(report.exporter_reason)
    assert report.ok


def _exported_program(
    program: torch.export.ExportedProgram, path: Path
) -> tuple[ModelRecord, ExportOptions, ExportReport]:
    """``program`` saved at ``path`` (a .pt2), its record, and its export with the default options into o/ beside."""
    torch.export.save(program, str(path))
    record = describe_files(IntakeRequest(paths=[str(path)]))
    options = default_options(record)
    request = ExportRequest(
        source=TorchSource(kind="pt2", path=str(path)), options=options, out_dir=str(path.parent / "o")
    )
    return record, options, export_model(request)


def test_pt2_program_exports_with_its_own_dynamic_dims(tmp_path: Path) -> None:
    batch = torch.export.Dim("batch", min=1, max=64)
    program = torch.export.export(zoo.build_model("mlp"), (torch.randn(2, 784),), dynamic_shapes=({0: batch},))
    *_, report = _exported_program(program, tmp_path / "program.pt2")
    assert report.exporter == "dynamo" and report.ok
    assert len(report.trials) == 2 and next(iter(report.trials[1].input_shapes.values()))[0] == 3
    assert report.record is not None and report.record.inputs[0].shape is not None
    assert isinstance(report.record.inputs[0].shape[0], str)


def test_an_unsupported_operator_gives_the_reason_and_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(ExportError, match=r"aten::unflatten.*opset version 9.*What to do: try the dynamo exporter"):
        run_export(tmp_path, "transformer", exporter="legacy", opset=9)


def test_an_axis_the_model_fixes_is_reported_when_marked_dynamic(tmp_path: Path) -> None:
    report = run_export(tmp_path, "tinycnn", exporter="dynamo", dynamic_axes={"input": {"0": "batch", "2": "height"}})
    height = next(t for t in report.trials if t.label.startswith("height"))
    assert not report.ok and not height.ok
    assert height.error is not None and "PyTorch itself fails at this shape" in say(height.error)


def test_bad_opset_and_axes_are_refused_before_exporting(tmp_path: Path) -> None:
    with pytest.raises(ExportError, match="opsets 9–20"):
        run_export(tmp_path, "mlp", exporter="legacy", opset=24)
    with pytest.raises(ExportError, match="has no axis 5"):
        run_export(tmp_path, "mlp", dynamic_axes={"input": {"5": "x"}})


def test_the_reproduction_code_redoes_the_same_export(tmp_path: Path) -> None:
    report = run_export(tmp_path, "classifier", exporter="legacy", opset=13)
    script = tmp_path / "again" / "redo.py"
    script.parent.mkdir()
    script.write_text(report.code)
    subprocess.run(
        [sys.executable, str(script)],
        cwd=script.parent,
        check=True,
        timeout=120,
        env={"PYTHONPATH": str(PROJECT_ROOT), "PATH": "/usr/bin:/bin"},
    )
    again = onnx.load(str(script.parent / "classifier.onnx"))
    assert again.opset_import[0].version == 13
    assert [n.op_type for n in again.graph.node] == [n.op_type for n in onnx.load(report.onnx_path).graph.node]


def test_warnings_are_explained_and_noise_dropped() -> None:
    plain = plain_warnings(
        [
            "torchvision is not installed. Skipping torchvision::nms",
            "Converting a tensor to a Python boolean might cause the trace to be incorrect.",
        ]
        * 2
    )
    assert len(plain) == 1 and plain[0].key == REPEATED and plain[0].values["count"] == 2
    assert "branches on a tensor's value" in say(plain[0]) and say(plain[0]).endswith("(×2)")


def test_op_count_chart_has_one_bar_per_op_on_each_side() -> None:
    frame = op_count_frame({"Conv2d": 2, "BatchNorm2d": 2}, {"Conv": 2})
    fig = op_count_figure(frame)
    assert [list(t.y) for t in fig.data] == [["Conv2d", "BatchNorm2d"], ["Conv"]]


def test_cli_export_verifies_at_two_batch_sizes_and_the_file_loads(tmp_path: Path) -> None:
    out = tmp_path / "t.onnx"
    result = cli("export", "sample:tinycnn", "-o", str(out), "--opset", "17", "--dynamic", "input:0=batch", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["ok"] and data["opset_produced"] == 17
    assert [t["input_shapes"]["input"][0] for t in data["trials"]] == [1, 3]
    assert max(d["max_abs"] for t in data["trials"] for d in t["diffs"]) < 1e-4
    session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    assert session.get_inputs()[0].shape[0] == "batch"


def test_cli_export_exit_code_says_when_verification_fails(tmp_path: Path) -> None:
    result = cli("export", "sample:transformer", "-o", str(tmp_path / "x.onnx"), "--exporter", "legacy")
    assert result.returncode == 1
    assert "FAIL  matches PyTorch at seq = 21" in result.stdout


def test_a_comparison_of_all_zero_outputs_proves_nothing_and_is_not_counted_as_passed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A classifier built without its weights (all zero, as an untrained head): both sides give zeros."""
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    weights = {name: torch.zeros_like(value) for name, value in zoo.build_model("classifier").state_dict().items()}
    torch.save(weights, tmp_path / "untrained.pt")
    command = ("export", str(tmp_path / "untrained.pt"), "-o", str(tmp_path / "u.onnx"), "--exporter", "legacy")
    done = cli(*command, "--json")
    assert done.returncode == 1, done.stderr  # written, but not verified
    data = json.loads(done.stdout)
    assert not data["ok"] and all(c["ok"] for c in data["checks"])
    assert [t["ok"] for t in data["trials"]] == [False, False]
    assert all("'logits' all zero" in t["proves_nothing"] for t in data["trials"])
    assert data["warnings"][0].startswith(
        "The comparison with PyTorch at export shape, batch = 3 does not test the model: PyTorch and ONNX Runtime "
        "both give 'logits' all zero"
    )
    text = cli(*command)
    assert "VOID  matches PyTorch at export shape: Proves nothing" in text.stdout
    assert "warning  The comparison with PyTorch at export shape, batch = 3 does not test the model" in text.stdout


def test_a_dynamic_axis_the_model_cannot_vary_says_so_without_terminal_codes(tmp_path: Path) -> None:
    with pytest.raises(ExportError) as info:
        run_export(tmp_path, "resnet", exporter="dynamo", dynamic_axes={"image": {"0": "batch", "1": "channels"}})
    message = str(info.value)
    assert "\x1b[" not in message and "Next steps:." not in message
    assert message.index("untick the dynamic axes") < message.index("try the legacy exporter")


class TinyBert(torch.nn.Module):
    """BERT's front as a .pt2 holds it: token ids into a 1,000-row table, segment ids into a 2-row one, and an
    attention mask that weighs the mean; exported with Dim("batch") and Dim("seq")."""

    def __init__(self) -> None:
        super().__init__()
        self.words, self.types, self.head = (
            torch.nn.Embedding(1000, 16),
            torch.nn.Embedding(2, 16),
            torch.nn.Linear(16, 4),
        )

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor
    ) -> torch.Tensor:
        hidden = (self.words(input_ids) + self.types(token_type_ids)) * attention_mask.unsqueeze(-1)
        return self.head(hidden.sum(1) / attention_mask.sum(1, keepdim=True).clamp(min=1))


@pytest.fixture(scope="module")
def bert_export(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """A TinyBert .pt2 (its dims saved as torch's symbols), its record, and its export with the default options."""
    folder = tmp_path_factory.mktemp("bert")
    batch, seq = torch.export.Dim("batch"), torch.export.Dim("seq")
    examples = (torch.randint(0, 1000, (2, 8)), torch.ones(2, 8, dtype=torch.long), torch.zeros(2, 8, dtype=torch.long))
    axes = {0: batch, 1: seq}
    program = torch.export.export(TinyBert().eval(), examples, dynamic_shapes=(axes, axes, axes))
    return _exported_program(program, folder / "bert.pt2")


def test_a_saved_programs_dims_are_named_on_the_card_in_the_checks_and_in_the_onnx_model(bert_export) -> None:  # type: ignore[no-untyped-def]
    """A .pt2 keeps only torch's symbols (s18, s41) for Dim("batch") and Dim("seq"): the card, the export's checks
    and the ONNX model show names, and the note says where they came from."""
    record, _, report = bert_export
    assert [s.dynamic_axes for s in record.inputs] == [{"0": "batch", "1": "seq"}] * 3
    assert any(re.search(r"s\d+ → batch, s\d+ → seq", note) for note in say_all(record.notes))
    assert [t.label for t in report.trials] == ["export shape", "batch = 3", "seq = 13"]
    assert [s.shape for s in report.record.inputs] == [["batch", "seq"]] * 3
    assert report.record.outputs[0].shape == ["batch", 4]
    assert not any("will not be used" in w for w in say_all(report.warnings)), report.warnings


def test_the_export_feeds_a_mask_of_ones_and_ids_within_the_vocabulary(bert_export) -> None:  # type: ignore[no-untyped-def]
    """As the input plan does: ids within the 1,000 rows, segment ids 0 (random ids up to 9 would index past the
    2-row segment table), a mask all on; the same in the code shown to the user."""
    record, options, report = bert_export
    assert record.inputs[0].vocabulary == 1000 and record.inputs[2].vocabulary == 2
    assert {k: (v.kind, v.low, v.high) for k, v in options.input_kinds.items()} == {
        "input_ids": ("integers", 0, 1000), "attention_mask": ("constant", 1, 2), "token_type_ids": ("constant", 0, 1),
    }  # fmt: skip
    assert report.ok, [t.error for t in report.trials]
    assert "input_ids = torch.randint(0, 1000, (2, 8,), dtype=torch.int64)  # token ids" in report.code
    assert "attention_mask = torch.ones(2, 8, dtype=torch.int64)  # a mask: everything on" in report.code
    assert (
        "token_type_ids = torch.zeros(2, 8, dtype=torch.int64)" in report.code and "randint(0, 10," not in report.code
    )
    ids, mask, _ = plan_inputs(report.record)  # the exported model's plan, as Benchmark runs it
    assert (ids.kind, ids.high, mask.kind, mask.low) == ("integers", 1000, "constant", 1)


def test_what_changed_names_the_identity_nodes_a_legacy_export_leaves() -> None:
    from core.export.verify import describe_changes

    notes = describe_changes({"Conv2d": 20, "BatchNorm2d": 20}, {"Conv": 20, "Identity": 16})
    assert any(n.startswith("16 Identity node(s) were left by the exporter") for n in say_all(notes))
    assert not describe_changes({"Identity": 2}, {"Identity": 2})  # the model's own


class _NoWorkers:
    """A backend that must not be asked: the job is answered from the cache."""

    def __init__(self, cache: Path) -> None:
        self.settings = dataclasses.replace(load_settings(environ={}), cache_dir=str(cache))

    def submit(self, spec: JobSpec) -> JobHandle:
        raise AssertionError(f"a worker was asked for {spec.name}")


def test_an_export_of_a_sample_is_reused_with_the_same_settings_and_only_then(
    tmp_path: Path, exported: Callable[..., ExportReport]
) -> None:
    report = exported("tinycnn")  # the sample's default export, which other tests of this module read too
    first = Path(report.onnx_path).parent
    request = ExportRequest(
        source=TorchSource(kind="sample", name="tinycnn"),
        options=default_options(zoo.describe_sample("tinycnn")),
        out_dir=str(first),
        file_name="tinycnn.onnx",
    )
    cache = tmp_path / "cache"
    reuse.keep(request, report, str(cache))
    made = (first / "tinycnn.onnx").read_bytes()
    first.rename(tmp_path / "aside")  # gone while the cache answers: the cache holds its own copy
    try:
        _reused_with_the_same_settings_and_only_then(tmp_path, first, request, report, cache, made)
    finally:
        (tmp_path / "aside").rename(first)


def _reused_with_the_same_settings_and_only_then(
    tmp_path: Path, first: Path, request: ExportRequest, report: ExportReport, cache: Path, made: bytes
) -> None:
    backend = _NoWorkers(cache)
    second = tmp_path / "second"
    again = run(EXPORT, dataclasses.replace(request, out_dir=str(second)), backend)
    assert again.reused and again.ok and not report.reused
    assert (second / "tinycnn.onnx").read_bytes() == made
    assert again.onnx_path == str(second / "tinycnn.onnx") and again.files == [again.onnx_path]
    assert again.record is not None and again.record.path == again.onnx_path
    assert report.record is not None and again.record.id == report.record.id
    assert str(first) not in json.dumps(dataclasses.asdict(again))

    # another opset, another file name or a model of the user's own: made afresh, never kept
    other = dataclasses.replace(request, options=dataclasses.replace(request.options, opset=17))
    assert reuse.earlier(dataclasses.replace(other, out_dir=str(tmp_path / "o")), str(cache)) is None
    assert reuse.key_of(dataclasses.replace(request, file_name="x.onnx")) != reuse.key_of(request)
    own = dataclasses.replace(request, source=TorchSource(kind="state_dict", name="tinycnn", path=str(tmp_path)))
    assert reuse.key_of(own) is None
    reuse.keep(own, again, str(cache))
    assert len(list((cache / "sample-exports").iterdir())) == 1

    # an entry that lost a file is a miss, and a job that does run is kept for the next one
    entry = next((cache / "sample-exports").iterdir())
    (entry / "files" / "tinycnn.onnx").unlink()
    assert reuse.earlier(dataclasses.replace(request, out_dir=str(tmp_path / "t")), str(cache)) is None
    shutil.rmtree(entry)

    class _Answers(_NoWorkers):
        def submit(self, spec: JobSpec) -> JobHandle:
            answered = tmp_path / "answered"
            shutil.copytree(second, answered)
            moved = json.dumps(dataclasses.asdict(again)).replace(str(second), str(answered))
            return Answered(spec.name, dataclasses.replace(msgspec.json.decode(moved, type=ExportReport), reused=False))

    third = run(EXPORT, dataclasses.replace(request, out_dir=str(tmp_path / "answered")), _Answers(cache))
    assert not third.reused and reuse.earlier(dataclasses.replace(request, out_dir=str(tmp_path / "4")), str(cache))
