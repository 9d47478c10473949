"""Old models: ONNX Runtime's refusal of an opset-6 model in the user's terms, and the upgrade that makes a new
version ONNX Runtime runs, matching the original, with what changed; the same from the command line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx.reference import ReferenceEvaluator

from core.errors import OldOpsetError, UpgradeError
from core.i18n import using
from core.model.inputs import BenchInput
from core.notes import say, say_all
from core.partition import PartitionRequest, partition_model
from core.runtime.refusals import old_opset_refusal, ort_minimum_opset
from core.upgrade import UpgradeReport, UpgradeRequest, sentences
from core.upgrade.converter import upgrade_model
from tests import builders
from tests.cli import cli

PLAN = [BenchInput(name="x", dtype="float32", shape=[1, 3, 4, 4])]


@pytest.fixture(scope="module")
def old(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return builders.write(builders.old_opset_model(), tmp_path_factory.mktemp("old") / "old.onnx")


@pytest.fixture(scope="module")
def upgraded(old: Path, tmp_path_factory: pytest.TempPathFactory) -> UpgradeReport:
    out = tmp_path_factory.mktemp("upgraded")
    return upgrade_model(UpgradeRequest(path=str(old), opset=18, inputs=PLAN, out_dir=str(out)))


def test_onnx_runtime_says_itself_which_opset_it_runs_from() -> None:
    assert ort_minimum_opset() == 7  # ORT 1.32's warning on loading an opset-1 model


def test_an_opset_6_model_is_refused_in_words_that_name_its_ops_and_the_way_out(old: Path) -> None:
    with pytest.raises(OldOpsetError) as refused:
        partition_model(PartitionRequest(path=str(old)))
    words = str(refused.value)
    assert "written in opset 6 of the standard ONNX operators" in words
    assert f"ONNX Runtime {ort.__version__} runs: it runs opset 7 and later" in words
    assert "Add-6 (1 node; its kernels start at Add-7)" in words and "PRelu-6 (1 node; its kernels start at PRelu-7)"
    assert "python -m core upgrade MODEL --opset 18 -o OUT" in words
    assert "Could not find an implementation" not in words  # ORT's own text is not what the user reads


def test_a_model_onnx_runtime_runs_is_not_called_old() -> None:
    assert old_opset_refusal(builders.relu_model()) is None


def test_the_upgrade_runs_in_onnx_runtime_and_matches_the_original(old: Path, upgraded: UpgradeReport) -> None:
    assert upgraded.ok and (upgraded.opset_before, upgraded.opset_after) == (6, 18)
    assert upgraded.ir_after >= 8  # IR 3 would need its new initializers listed as graph inputs
    assert upgraded.compared_with is not None and upgraded.compared_with.key == sentences.IN_REFERENCE
    assert [c.name for c in upgraded.checks if c.ok] == [c.name for c in upgraded.checks]
    # checked on other inputs than the job's: the original in onnx's reference, the new version in ORT
    x = np.random.default_rng(1).standard_normal((1, 3, 4, 4)).astype(np.float32)
    (expected,) = ReferenceEvaluator(onnx.load(str(old))).run(None, {"x": x})
    (produced,) = ort.InferenceSession(upgraded.path, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    np.testing.assert_allclose(produced, expected, atol=1e-6)
    assert onnx.load(upgraded.path).opset_import[0].version == 18


def test_what_changed_is_listed_with_the_reasons(upgraded: UpgradeReport) -> None:
    texts = {(c.kind, c.op): say(c.text) for c in upgraded.changes}
    assert texts[("version", "Add")] == (
        "version 6 → 14; attribute broadcast dropped (broadcasting became implicit, numpy-style, in opset 7)"
    )
    assert texts[("version", "PRelu")] == "version 6 → 16"
    assert texts[("repaired", "PRelu")].startswith("its per-channel slope reshaped from [C] to [C, 1, …]")
    assert say(upgraded.summary).startswith("opset 6 → 18: 2 node(s) changed, 0 added, 0 unchanged; checked against")
    with using("zh"):  # the clauses of a node's change each said in the reader's language
        assert say(next(c.text for c in upgraded.changes if (c.kind, c.op) == ("version", "Add"))) == (
            "版本 6 → 14；去掉了属性 broadcast（广播在算子集 7 中变成了隐式的 numpy 风格）"
        )


def test_a_caffe2_bias_along_the_channels_stays_along_the_channels(tmp_path: Path) -> None:
    """onnx's converter gives a legacy axis-1 broadcast one trailing dim too many (a [3] bias becomes [3, 1, 1, 1],
    and the output [3, 3, 4, 4]); and onnx's reference evaluator ignores the axis, so it cannot stand for the
    original: the report says the new version was checked by the checker and shape inference only."""
    old = builders.write(builders.old_opset_model(axis=1), tmp_path / "caffe2.onnx")
    report = upgrade_model(UpgradeRequest(path=str(old), opset=18, inputs=PLAN, out_dir=str(tmp_path / "out")))
    assert report.ok and report.compared_with is None
    assert any("would run its Add broadcasting along an axis (1 node)" in note for note in say_all(report.notes))
    assert [n.key for n in report.notes] == [sentences.REFERENCE_MISREADS] and report.notes[0].severity == "warning"
    assert ("repaired", "Add") in {(c.kind, c.op) for c in report.changes}
    model = onnx.load(str(old))
    bias, slope = (onnx.numpy_helper.to_array(t) for t in model.graph.initializer)
    x = np.random.default_rng(2).standard_normal((1, 3, 4, 4)).astype(np.float32)
    shifted = x + bias.reshape(3, 1, 1)  # the original's meaning: the bias per channel, and the slope too
    expected = np.where(shifted > 0, shifted, shifted * slope.reshape(3, 1, 1))
    (produced,) = ort.InferenceSession(report.path, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    np.testing.assert_allclose(produced, expected, atol=1e-6)


def test_where_the_original_runs_nowhere_the_report_says_only_the_checker_checked(old: Path, tmp_path: Path) -> None:
    request = UpgradeRequest(path=str(old), opset=18, inputs=PLAN, out_dir=str(tmp_path), reference_budget_s=0)
    report = upgrade_model(request)
    assert report.compared_with is None and not report.diffs
    assert report.summary.key == sentences.SUMMARY_UNCOMPARED
    assert "checked by onnx's checker and shape inference only" in say(report.summary)
    assert any("did not finish within its budget of 0 s" in note for note in say_all(report.notes))
    assert report.ok  # the checker and strict shape inference passed, and ORT runs it


def test_an_upgrade_goes_to_a_newer_opset(old: Path, tmp_path: Path) -> None:
    with pytest.raises(UpgradeError, match=r"at opset 6; an upgrade goes to a newer opset, from 7 to \d+"):
        upgrade_model(UpgradeRequest(path=str(old), opset=6, inputs=PLAN, out_dir=str(tmp_path)))


def test_the_command_line_writes_the_new_version_and_says_what_changed(old: Path, tmp_path: Path) -> None:
    out = tmp_path / "new" / "old.opset11.onnx"
    done = cli("upgrade", str(old), "--opset", "11", "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"{out}  (opset 6 → 11: 2 node(s) changed")
    assert "  version   Add ×1: version 6 → 7; attribute broadcast dropped (broadcasting became implicit" in done.stdout
    assert "  pass      matches the original in onnx's reference evaluator" in done.stdout
    ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])

    data = json.loads(cli("upgrade", str(old), "-o", str(tmp_path / "u.onnx"), "--json").stdout)
    assert data["ok"] and data["opset_after"] == 18 and data["path"] == str(tmp_path / "u.onnx")
    assert {c["kind"] for c in data["changes"]} == {"version", "repaired"} and data["inputs"][0]["name"] == "x"
    assert data["compared_with"] == "the original in onnx's reference evaluator (ONNX Runtime cannot run it)"
    assert data["summary"].startswith("opset 6 → 18: 2 node(s) changed") and data["notes"][0].startswith("ONNX Runtime")
    assert data["checks"][0]["name"] == "onnx.checker (full check)"  # the JSON's words are English


def test_a_model_with_external_data_gets_its_data_beside_the_new_version(tmp_path: Path) -> None:
    old = builders.save_with_external_data(builders.old_opset_model(), tmp_path / "model")
    report = upgrade_model(UpgradeRequest(path=str(old), opset=18, inputs=PLAN, out_dir=str(tmp_path / "out")))
    assert report.ok and [Path(f).name for f in report.files] == ["model.opset18.onnx", "model.onnx.data"]
    assert Path(report.files[1]).read_bytes() == (tmp_path / "model" / "model.onnx.data").read_bytes()


def test_an_op_onnx_does_not_know_stops_the_upgrade_in_words(tmp_path: Path) -> None:
    model = builders.old_opset_model()
    model.graph.node[0].op_type = "LegacyCaffe2Op"
    old = builders.write(model, tmp_path / "odd.onnx")
    with pytest.raises(UpgradeError, match=r"uses LegacyCaffe2Op, which onnx does not know as a standard operator"):
        upgrade_model(UpgradeRequest(path=str(old), opset=18, inputs=PLAN, out_dir=str(tmp_path / "out")))
